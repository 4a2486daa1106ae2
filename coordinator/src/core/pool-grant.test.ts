/**
 * Pool: grants, reports and acquires naming a foreign lease id, at fixed
 * instants (µs). Quiet period, returns and expiry are in pool.test.ts.
 *
 * The standard pool "p" and the helpers are in pool.fixtures.ts: capacity
 * 100, 1 token per ms, TTL 1 s, leases ≤ 20, minimum grant 5, holds ≤ 200 ms;
 * empty until QUIET_END (1.000 s), full from FULL_AT (1.100 s).
 */
import { describe, expect, it } from 'vitest';
import { EPOCH, FULL_AT, MS, acquire, credit, grantOf, internals, makePool, poolWithLease, status } from './pool.fixtures.js';
import type { Delivery } from './pool.js';
import { SECRET } from './pool.fixtures.js';

describe('grants', () => {
  it('moves tokens from the level into one lease per agent, topped up under the same id', () => {
    const pool = makePool();
    const g1 = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 15 }));
    expect(g1).toEqual({
      v: 2,
      kind: 'grant',
      seq: 1,
      leaseId: g1.leaseId,
      tokensGranted: 15,
      tokensHeld: 15,
      ttlMs: 1000,
      epoch: EPOCH,
      maxLeaseTokens: 20,
      capacityTokens: 100,
      refillTokens: 1000,
      refillPeriodMs: 1000,
      retryAfterMs: 0,
    });
    expect(credit(status(pool, FULL_AT))).toEqual({ level: 85, leased: 15, leases: 1 });

    const g2 = grantOf(acquire(pool, FULL_AT + 1, { agentId: 'a', seq: 2, leaseId: g1.leaseId, tokensLeft: 15, tokensWanted: 10 }));
    expect(g2).toMatchObject({ seq: 2, leaseId: g1.leaseId, tokensGranted: 5, tokensHeld: 20, retryAfterMs: 0 });
    expect(credit(status(pool, FULL_AT + 1))).toEqual({ level: 80, leased: 20, leases: 1 });

    const g3 = grantOf(acquire(pool, FULL_AT + 2, { agentId: 'a', seq: 3, leaseId: g1.leaseId, tokensLeft: 20, tokensWanted: 7 }));
    expect(g3).toMatchObject({ seq: 3, leaseId: g1.leaseId, tokensGranted: 0, tokensHeld: 20, retryAfterMs: 0 });

    const gb = grantOf(acquire(pool, FULL_AT + 3, { agentId: 'b', seq: 1, tokensWanted: 1000 }));
    expect(gb.leaseId).not.toBe(g1.leaseId);
    expect(gb).toMatchObject({ tokensGranted: 20, tokensHeld: 20, retryAfterMs: 0 });
    expect(credit(status(pool, FULL_AT + 3))).toEqual({ level: 60, leased: 40, leases: 2 });
  });

  it.each<[number, number, number, number]>([
    // a holds 12; renew reporting tokensLeft and wanting tokensWanted → tokensGranted, tokensHeld (≤ 20)
    [12, 0, 0, 12],
    [12, 8, 8, 20],
    [12, 9, 8, 20],
    [12, 1000, 8, 20],
    [3, 1000, 17, 20],
    [0, 5, 5, 5],
    [0, 20, 20, 20],
  ])('a lease never exceeds maxLeaseTokens: reporting %i and wanting %i grants %i, holds %i', (tokensLeft, tokensWanted, granted, held) => {
    const { pool, leaseId } = poolWithLease(12);
    const g = grantOf(acquire(pool, FULL_AT + 1, { agentId: 'a', seq: 2, leaseId, tokensLeft, tokensWanted }));
    expect(g).toMatchObject({ leaseId, tokensGranted: granted, tokensHeld: held, retryAfterMs: 0 });
    expect(credit(status(pool, FULL_AT + 1))).toEqual({ level: 88 - granted, leased: held, leases: 1 });
  });

  it.each<[number]>([[10], [1000], [3_600_000]])('grant.ttlMs is the pool TTL (%i ms)', (leaseTtlMs) => {
    const pool = makePool({ fields: { leaseTtlMs, maxHoldMs: 0 }, quietPeriodMs: leaseTtlMs });
    const full = leaseTtlMs * MS + 100 * MS;
    expect(grantOf(acquire(pool, full, { agentId: 'a', seq: 1 }))).toMatchObject({ tokensGranted: 20, ttlMs: leaseTtlMs });
  });

  it('never grants more than the level holds', () => {
    const pool = makePool();
    const g = grantOf(acquire(pool, 1_007 * MS, { agentId: 'a', seq: 1, tokensWanted: 20 }));
    expect(g).toMatchObject({ tokensGranted: 7, tokensHeld: 7 });
    expect(g.retryAfterMs).toBeGreaterThan(0);
    expect(credit(status(pool, 1_007 * MS))).toEqual({ level: 0, leased: 7, leases: 1 });
  });
});

describe('reports lower a bound and never raise it', () => {
  it.each<[number, number]>([
    // a holds 15; renew reporting tokensLeft, wanting nothing → bound
    [15, 15],
    [9, 9],
    [0, 0],
    [16, 15],
    [2 ** 40, 15],
  ])('reporting %i tokens left of a 15-token lease leaves a bound of %i', (tokensLeft, bound) => {
    const { pool, leaseId } = poolWithLease(15);
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft, tokensWanted: 0 }));
    expect(g).toMatchObject({ leaseId, tokensGranted: 0, tokensHeld: bound, retryAfterMs: 0 });
    // Reported tokens were spent, not returned: the level does not move.
    expect(credit(status(pool, FULL_AT))).toEqual({ level: 85, leased: bound, leases: 1 });
  });

  it('keeps a lowered bound when a later report claims more', () => {
    const { pool, leaseId } = poolWithLease(15);
    acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 9, tokensWanted: 0 });
    for (const [seq, tokensLeft] of [
      [3, 15],
      [4, 100],
      [5, 9],
    ] as const) {
      const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq, leaseId, tokensLeft, tokensWanted: 0 }));
      expect(g.tokensHeld).toBe(9);
    }
  });

  it('refills the room a report frees at rate r, and no faster', () => {
    const { pool, leaseId } = poolWithLease(15);
    acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 9, tokensWanted: 0 });
    expect(status(pool, FULL_AT + 3 * MS).levelTokens).toBe(88);
    expect(status(pool, FULL_AT + 6 * MS).levelTokens).toBe(91);
    expect(status(pool, FULL_AT + 60 * MS).levelTokens).toBe(91);
  });
});

describe('an acquire naming another lease (or none) voids the agent’s live lease first', () => {
  it.each<[string, string | null]>([
    ['null', null],
    ['an unknown id', 'zz-not-mine'],
    ['a made-up id of the same shape', '3-99'],
  ])('naming %s sets the live lease’s bound to 0 before granting', (_name, leaseId) => {
    const { pool, leaseId: live } = poolWithLease(15);
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 15, tokensWanted: 10 }));
    expect(g).toMatchObject({ leaseId: live, tokensGranted: 10, tokensHeld: 10 });
    expect(credit(status(pool, FULL_AT))).toEqual({ level: 75, leased: 10, leases: 1 });
  });

  it('naming another agent’s lease voids the caller’s own lease, not the other one', () => {
    const { pool, leaseId: mine } = poolWithLease(15);
    const theirs = grantOf(acquire(pool, FULL_AT, { agentId: 'b', seq: 1, tokensWanted: 20 })).leaseId;
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId: theirs, tokensLeft: 15, tokensWanted: 0 }));
    expect(g).toMatchObject({ leaseId: mine, tokensGranted: 0, tokensHeld: 0 });
    expect(credit(status(pool, FULL_AT))).toEqual({ level: 65, leased: 20, leases: 2 });
  });
});

describe('status of one agent', () => {
  it('shows the named agent’s lease, bound and time left, and null for an agent without one', () => {
    const pool = makePool();
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 7 }));
    const out: Delivery<string>[] = [];
    expect(pool.status(FULL_AT + 300 * MS, out, 'a').agentLease).toEqual({ leaseId: g.leaseId, tokensHeld: 7, expiresInMs: 700 });
    expect(pool.status(FULL_AT + 300 * MS, out, 'b').agentLease).toBeNull();
    expect('agentLease' in pool.status(FULL_AT + 300 * MS, out)).toBe(false);
  });
});

describe('allowance', () => {
  // B = 100, r = 1000/s (1 token per ms), leases of at most 20; full at FULL_AT.
  const leaseFrom = (pool: ReturnType<typeof makePool>, agentId: string, nowUs: number): string =>
    grantOf(acquire(pool, nowUs, { agentId, seq: 1, tokensWanted: 20 })).leaseId;

  it.each<[number, number]>([
    // allowance, level 30 ms after two leases of 20 took 40 from a full pool
    [0, 60], // strict: outstanding leases count against B, refill is clipped at 100 − 40
    [25, 85], // 25 more may be in flight: clipped at 125 − 40
    [50, 90], // the level itself never passes B: 60 + 30 ms of refill
  ])('with A = %i the level refills to %i while 40 tokens are leased', (allowance, level) => {
    const pool = makePool({ fields: { allowance } });
    leaseFrom(pool, 'a', FULL_AT);
    leaseFrom(pool, 'b', FULL_AT);
    expect(status(pool, FULL_AT + 30 * MS)).toMatchObject({ levelTokens: level, leasedTokens: 40 });
  });

  it('takes back only up to B when a lease is returned into a full level', () => {
    const pool = makePool({ fields: { allowance: 50 } });
    const leaseId = leaseFrom(pool, 'a', FULL_AT);
    expect(status(pool, FULL_AT + 100 * MS).levelTokens).toBe(100);
    const out: Delivery<string>[] = [];
    pool.giveBack(
      { v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'p', seq: 2, leaseId, tokensLeft: 20 },
      'a#2',
      FULL_AT + 100 * MS,
      out,
    );
    expect(status(pool, FULL_AT + 100 * MS)).toMatchObject({ levelTokens: 100, leasedTokens: 0 });
  });
});

describe('usage reports', () => {
  const report = (
    pool: ReturnType<typeof makePool>,
    nowUs: number,
    fields: { seq: number; leaseId: string; tokensLeft: number; agentId?: string },
  ): Delivery<string>[] => {
    const out: Delivery<string>[] = [];
    pool.report(
      {
        v: 2,
        op: 'report',
        leaseSecret: SECRET,
        pool: 'p',
        agentId: fields.agentId ?? 'a',
        seq: fields.seq,
        leaseId: fields.leaseId,
        tokensLeft: fields.tokensLeft,
      },
      nowUs,
      out,
    );
    return out;
  };

  it('lower a stale bound, never raise it, and get no reply', () => {
    const { pool, leaseId } = poolWithLease(20);
    expect(report(pool, FULL_AT + MS, { seq: 2, leaseId, tokensLeft: 8 })).toEqual([]);
    expect(status(pool, FULL_AT + MS).leasedTokens).toBe(8);
    report(pool, FULL_AT + 2 * MS, { seq: 3, leaseId, tokensLeft: 15 });
    expect(status(pool, FULL_AT + 2 * MS).leasedTokens).toBe(8);
  });

  it('change nothing when older than the last acquire, for another lease or agent, or in rate mode', () => {
    const { pool, leaseId } = poolWithLease(20);
    grantOf(acquire(pool, FULL_AT + MS, { agentId: 'a', seq: 5, leaseId, tokensLeft: 20, tokensWanted: 0 }));
    const before = internals(pool);
    report(pool, FULL_AT + 2 * MS, { seq: 4, leaseId, tokensLeft: 1 });
    report(pool, FULL_AT + 2 * MS, { seq: 6, leaseId: 'other', tokensLeft: 1 });
    report(pool, FULL_AT + 2 * MS, { seq: 6, leaseId, tokensLeft: 1, agentId: 'b' });
    expect(internals(pool).replace(/"lastRefill":\d+/, '')).toBe(before.replace(/"lastRefill":\d+/, ''));
    const rate = makePool({ fields: { leaseMode: 'rate' } });
    const g = grantOf(acquire(rate, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 100, tokensWanted: 10 }));
    report(rate, FULL_AT + MS, { seq: 2, leaseId: g.leaseId, tokensLeft: 0 });
    expect(status(rate, FULL_AT + MS).leasedTokens).toBe(g.rate?.capTokens);
  });

  it('let the level refill into the room a lowered bound frees', () => {
    const { pool, leaseId } = poolWithLease(20);
    const takeAll = grantOf(acquire(pool, FULL_AT, { agentId: 'b', seq: 1, tokensWanted: 20 }));
    expect(takeAll.tokensGranted).toBe(20);
    // Level 60 of B = 100 with 40 leased: it refills to 60 at most...
    expect(status(pool, FULL_AT + 100 * MS).levelTokens).toBe(60);
    report(pool, FULL_AT + 100 * MS, { seq: 2, leaseId, tokensLeft: 0 });
    // ...and to 80 once a's bound is 0.
    expect(status(pool, FULL_AT + 200 * MS).levelTokens).toBe(80);
  });
});
