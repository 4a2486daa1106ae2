/**
 * Rate (trickle) leases: the pool "p" in rate mode (capacity 100, refill
 * 1000/s, so ρ is in tokens per second; 1/128 of it, 8 rounded up, is
 * never assigned, leaving 992), leases of at most 20, TTL 1 s. A lease
 * claims 19/20 of its demand; what the claims leave is shared by weight.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { CoordinatorError } from '../errors.js';
import { parseCoordinatorConfig } from './config.js';
import { acquire, grantOf, makePool, MS, QUIET_END, FULL_AT, S, status, tick } from './pool.fixtures.js';
import type { Delivery, Pool } from './pool.js';
import { heldAt, LevelRefill } from './rate-lease.js';
import { tokenScale, makeRate, type LeaseGrant } from '@tokenlease/shared';
import { thrown } from '@tokenlease/shared/testing';
import { SECRET } from './pool.fixtures.js';

const RATE = { leaseMode: 'rate' };
const ratePool = (fields: Record<string, unknown> = {}): Pool<string> => makePool({ fields: { ...RATE, ...fields } });
const rateOf = (g: LeaseGrant): [number, number, number] => [
  g.rate?.tokensPerPeriod ?? -1,
  g.rate?.periodMs ?? -1,
  g.rate?.capTokens ?? -1,
];

describe('rate leases: grants', () => {
  it('gives a lone agent its claim and what the claims leave as a rate, a cap of its share of B (at most a lease), and fills it from the level', () => {
    const pool = ratePool();
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 500 }));
    expect(rateOf(g)).toEqual([992, 1000, 20]); // a claim of 475 and the 517 left
    expect([g.tokensGranted, g.tokensHeld]).toEqual([20, 20]);
    expect(status(pool, FULL_AT)).toMatchObject({ levelTokens: 80, leasedTokens: 20 });
  });

  it('never assigns the reserve: a demand above 992/s gets 992', () => {
    const g = grantOf(acquire(ratePool(), FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 5000 }));
    expect(g.rate?.tokensPerPeriod).toBe(992);
  });

  it('divides the claims max-min fairly: a claim that is met leaves its margin to the others', () => {
    const pool = ratePool();
    const a = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 200 }));
    const b = grantOf(acquire(pool, FULL_AT + MS, { agentId: 'b', seq: 1, demandPerSecond: 2000 }));
    grantOf(acquire(pool, FULL_AT + 2 * MS, { agentId: 'a', seq: 2, leaseId: a.leaseId, tokensLeft: 0, demandPerSecond: 200 }));
    const b2 = grantOf(acquire(pool, FULL_AT + 3 * MS, { agentId: 'b', seq: 2, leaseId: b.leaseId, tokensLeft: 0, demandPerSecond: 2000 }));
    expect(b2.rate?.tokensPerPeriod).toBe(802); // a claims 190 of its 200
  });

  it('divides the refill max-min fairly, each within what the others leave, and converges as agents renew', () => {
    const pool = ratePool();
    const a1 = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 800 }));
    const b1 = grantOf(acquire(pool, FULL_AT + MS, { agentId: 'b', seq: 1, demandPerSecond: 800 }));
    expect([a1.rate?.tokensPerPeriod, b1.rate?.tokensPerPeriod]).toEqual([992, 0]); // a holds all of it until it renews
    const a2 = grantOf(acquire(pool, FULL_AT + 2 * MS, { agentId: 'a', seq: 2, leaseId: a1.leaseId, tokensLeft: 0, demandPerSecond: 800 }));
    const b2 = grantOf(acquire(pool, FULL_AT + 3 * MS, { agentId: 'b', seq: 2, leaseId: b1.leaseId, tokensLeft: 0, demandPerSecond: 800 }));
    expect([a2.rate?.tokensPerPeriod, b2.rate?.tokensPerPeriod]).toEqual([496, 496]);
  });

  it('follows class weights', () => {
    const pool = ratePool({ classWeights: { gold: 3 } });
    const a = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 2000 }));
    grantOf(acquire(pool, FULL_AT, { agentId: 'b', seq: 1, demandPerSecond: 2000, agentClass: 'gold' }));
    grantOf(acquire(pool, FULL_AT + MS, { agentId: 'a', seq: 2, leaseId: a.leaseId, demandPerSecond: 2000 }));
    const b = grantOf(acquire(pool, FULL_AT + 2 * MS, { agentId: 'b', seq: 2, leaseId: 'x', demandPerSecond: 2000, agentClass: 'gold' }));
    expect(b.rate?.tokensPerPeriod).toBe(744); // floor(992 × 3/4)
    const a3 = grantOf(acquire(pool, FULL_AT + 3 * MS, { agentId: 'a', seq: 3, leaseId: a.leaseId, demandPerSecond: 2000 }));
    expect(a3.rate?.tokensPerPeriod).toBe(248); // the rest
  });

  it('grants no rate during the quiet period, and says when to ask again', () => {
    const g = grantOf(acquire(ratePool(), QUIET_END - 100 * MS, { agentId: 'a', seq: 1, demandPerSecond: 500 }));
    expect(g.rate?.tokensPerPeriod).toBe(0);
    expect(g.tokensGranted).toBe(0);
    expect(g.retryAfterMs).toBeGreaterThanOrEqual(100);
  });

  it('re-bases on the report: the lease holds what the agent says, never more than it could have accrued', () => {
    const pool = ratePool();
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 100, tokensWanted: 10 }));
    expect(rateOf(g)).toEqual([992, 1000, 10]); // the level is full: B leaves room for a cap of what it holds
    // A report of more than the cap is lowered to what it could hold.
    const r = grantOf(
      acquire(pool, FULL_AT + 10 * MS, {
        agentId: 'a',
        seq: 2,
        leaseId: g.leaseId,
        tokensLeft: 999,
        demandPerSecond: 100,
        tokensWanted: 0,
      }),
    );
    expect([r.tokensGranted, r.tokensHeld]).toEqual([0, 10]);
    const low = grantOf(
      acquire(pool, FULL_AT + 20 * MS, { agentId: 'a', seq: 3, leaseId: g.leaseId, tokensLeft: 3, demandPerSecond: 100, tokensWanted: 5 }),
    );
    expect([low.tokensGranted, low.tokensHeld]).toEqual([5, 8]);
  });

  it('ends the rate with the lease: after expiry the level refills at the full rate again', () => {
    const pool = ratePool();
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 900, tokensWanted: 20 }));
    expect(status(pool, FULL_AT).levelTokens).toBe(80);
    // The level may refill only to B minus the lease's cap of 20 while it lives.
    expect(status(pool, FULL_AT + 500 * MS).levelTokens).toBe(80);
    tick(pool, FULL_AT + S);
    expect(status(pool, FULL_AT + S)).toMatchObject({ leases: 0, leasedTokens: 0 });
    expect(status(pool, FULL_AT + S + 20 * MS).levelTokens).toBe(100);
  });

  it('refills the level at what the rates leave: 1000 − 992 = 8/s', () => {
    const pool = ratePool({ capacity: 1000, maxLeaseTokens: 100 });
    const t0 = QUIET_END;
    const g = grantOf(acquire(pool, t0, { agentId: 'a', seq: 1, demandPerSecond: 600, tokensWanted: 0 }));
    expect(g.rate?.tokensPerPeriod).toBe(992);
    expect(status(pool, t0 + 500 * MS).levelTokens).toBe(4);
    expect(status(pool, t0 + 1000 * MS).levelTokens).toBe(8);
  });

  it('returns at most what the lease could hold now', () => {
    const pool = ratePool();
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 100, tokensWanted: 10 }));
    const out: Delivery<string>[] = [];
    pool.giveBack(
      { v: 2, op: 'return', leaseSecret: SECRET, pool: 'p', agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 50 },
      'r',
      FULL_AT + MS,
      out,
    );
    expect(out[0]?.reply).toEqual({ v: 2, kind: 'receipt', seq: 2, tokensReturned: 10 });
  });

  it('is refused where its arithmetic would not be exact', () => {
    const error = thrown(CoordinatorError, () =>
      parseCoordinatorConfig('x.yaml', { pools: { p: { capacity: 30_000, refill: '1/86400s', leaseMode: 'rate' } } }),
    );
    expect(error.message).toContain('field "leaseMode"');
    expect(
      thrown(CoordinatorError, () =>
        parseCoordinatorConfig('x.yaml', { pools: { p: { capacity: 1, refill: '1/s', leaseMode: 'trickle' } } }),
      ).field,
    ).toBe('leaseMode');
  });
});

describe('rate leases: caps share B', () => {
  it('lets caps over their share lapse while a lease is cut short, so a newcomer beside five that never spend gets a cap', () => {
    const pool = ratePool();
    const hoarders = ['h1', 'h2', 'h3', 'h4', 'h5'];
    const leaseIds = new Map<string, string>();
    const renew = (id: string, seq: number, t: number, tokensLeft: number): LeaseGrant => {
      const g = grantOf(acquire(pool, t, { agentId: id, seq, leaseId: leaseIds.get(id) ?? null, tokensLeft, demandPerSecond: 500 }));
      leaseIds.set(id, g.leaseId);
      return g;
    };
    // The hoarders take all of B in caps of a lease each (renewing until they hold them), reporting all they hold.
    for (let t = FULL_AT, seq = 1; t < FULL_AT + S; t += 100 * MS, seq += 1) for (const id of hoarders) renew(id, seq, t, 20);
    expect(status(pool, FULL_AT + S).leasedTokens).toBeGreaterThanOrEqual(95);
    let newcomer: LeaseGrant | null = null;
    let extendedOverShare = 0;
    for (let t = FULL_AT + S, seq = 100; t <= FULL_AT + 4 * S; t += 100 * MS, seq += 1) {
      // The newcomer spends all it gets; the hoarders renew just after it, holding all they were given.
      newcomer = renew('n', seq, t, 0);
      for (const id of hoarders) {
        const g = renew(id, seq, t + 10 * MS, 20);
        // Six leases: a share of B is 100 / 6. One TTL after the newcomer came, none is kept above it.
        if (t > FULL_AT + 2 * S && g.ttlMs >= 1000 && g.tokensHeld > Math.floor(100 / 6)) extendedOverShare += 1;
      }
    }
    // Without the rule, the newcomer gets a fair rate and a cap of 0 (no room beside the hoarders' caps), for good.
    expect(newcomer?.rate?.capTokens).toBeGreaterThanOrEqual(10);
    expect(extendedOverShare).toBe(0);
  });
});

describe('rate lease arithmetic', () => {
  it("heldAt rounds the coordinator's accrual up and stops at the cap", () => {
    const lease = { heldTokens: 2, ratePerPeriod: 3, accrualFromUs: 1000, boundTokens: 10 };
    expect([0, 1000, 1001, 334_333, 334_334, 2_666_667, 9 * S].map((t) => heldAt(lease, t, S))).toEqual([2, 2, 3, 3, 4, 10, 10]);
    expect(heldAt({ ...lease, ratePerPeriod: 0 }, 9 * S, S)).toBe(2);
  });

  it('LevelRefill carries remainders: 333 free tokens/s over 1 µs steps add exactly what one long step adds', () => {
    const scale = tokenScale(1000, makeRate(1000, 1000));
    const stepped = new LevelRefill(scale);
    let units = 0;
    for (let i = 0; i < 3000; i += 1) units += stepped.units(1, 333, 1000, 1e15);
    expect(units).toBe(new LevelRefill(scale).units(3000, 333, 1000, 1e15));
    expect(units).toBe(Math.floor((3000 * scale.unitsPerUs * 333) / 1000));
  });
});

/** A modelled honest agent: freezes on send, accrues from the reply's arrival, rounds down, spends greedily. */
interface ModelAgent {
  leaseId: string | null;
  balance: number;
  rate: number;
  cap: number;
  carry: number;
  at: number;
  expiresAtUs: number;
  sentAtUs: number | null;
  seq: number;
}

function accrue(a: ModelAgent, nowUs: number, periodUs: number): void {
  const elapsed = nowUs - a.at;
  a.at = nowUs;
  if (a.rate === 0 || elapsed <= 0) return;
  const units = a.carry + elapsed * a.rate;
  const whole = Math.floor(units / periodUs);
  a.carry = units - whole * periodUs;
  a.balance = Math.min(a.cap, a.balance + whole);
  if (a.balance === a.cap) a.carry = 0;
}

describe('rate leases under random honest agents (property)', () => {
  // Several seconds of CPU on a 2-core machine shared with other work: room for that, not the 5 s default.
  it('admit at most B + r·T in every window, whatever the demands, delays, losses and renewals', { timeout: 30_000 }, () => {
    let spent = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 5 }),
        fc.array(
          fc.record({
            agent: fc.nat(4),
            delayUs: fc.integer({ min: 0, max: 3000 }),
            gapUs: fc.integer({ min: 0, max: 8000 }),
            demand: fc.integer({ min: 0, max: 2000 }),
            renew: fc.integer({ min: 0, max: 9 }).map((x) => x < 3),
            lost: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
          }),
          { minLength: 100, maxLength: 400 },
        ),
        (agents, steps) => {
          const pool = ratePool({ capacity: 50, maxLeaseTokens: 30 });
          const periodUs = Math.ceil((1000 * 1000) / 0.99);
          const model: ModelAgent[] = Array.from({ length: agents }, () => ({
            leaseId: null,
            balance: 0,
            rate: 0,
            cap: 0,
            carry: 0,
            at: 0,
            expiresAtUs: 0,
            sentAtUs: null,
            seq: 0,
          }));
          const admissions: [number, number][] = [];
          let now = FULL_AT;
          let coordinatorUs = FULL_AT;
          for (const step of steps) {
            now += step.gapUs;
            const a = model[step.agent % agents] as ModelAgent;
            if (now >= a.expiresAtUs) Object.assign(a, { balance: 0, rate: 0, carry: 0 });
            accrue(a, now, periodUs);
            // Greedy: spend everything the lease holds now.
            if (a.balance > 0 && now < a.expiresAtUs) {
              admissions.push([now, a.balance]);
              a.balance = 0;
            }
            if (!step.renew || (a.sentAtUs !== null && !step.lost)) continue;
            // Send a renewal: freeze, report; the reply comes back after the delay (or is lost).
            a.rate = 0; // frozen; the fraction accrued so far is kept for the same lease
            a.seq += 1;
            a.sentAtUs = now;
            coordinatorUs = Math.max(coordinatorUs, now + step.delayUs);
            const out = acquire(pool, coordinatorUs, {
              agentId: `g${step.agent % agents}`,
              seq: a.seq,
              leaseId: a.leaseId,
              tokensLeft: a.balance,
              demandPerSecond: step.demand,
              tokensWanted: 30,
            });
            const g = grantOf(out);
            if (step.lost) continue; // stays frozen; the next step sends a new request
            const arrival = coordinatorUs + step.delayUs;
            if (arrival >= a.sentAtUs + 950_000) continue;
            if (g.leaseId !== a.leaseId) Object.assign(a, { balance: 0, carry: 0 });
            a.leaseId = g.leaseId;
            a.balance += g.tokensGranted;
            Object.assign(a, {
              rate: g.rate?.tokensPerPeriod ?? 0,
              cap: g.rate?.capTokens ?? 0,
              at: arrival,
              expiresAtUs: a.sentAtUs + 950_000,
              sentAtUs: null,
            });
            now = Math.max(now, arrival);
          }
          admissions.sort((x, y) => x[0] - y[0]);
          for (let i = 0; i < admissions.length; i += 1) {
            let sum = 0;
            for (let j = i; j < admissions.length; j += 1) {
              sum += (admissions[j] as [number, number])[1];
              const windowUs = (admissions[j] as [number, number])[0] - (admissions[i] as [number, number])[0];
              // r = 1 token per ms: the envelope is B + Δµs/1000.
              expect(sum * 1000, `window [${admissions[i]?.[0]}, ${admissions[j]?.[0]}]`).toBeLessThanOrEqual(50 * 1000 + windowUs);
            }
          }
          spent += admissions.reduce((x, [, c]) => x + c, 0);
        },
      ),
      { seed: propertySeed('pool-rate.test.ts'), numRuns: 100, endOnFailure: true },
    );
    expect(spent).toBeGreaterThan(0);
  });
});
