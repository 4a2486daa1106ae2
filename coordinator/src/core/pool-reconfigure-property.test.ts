/**
 * Property: a pool reconfigured once, at a random instant, to random new
 * limits, under 1–4 honest agents whose requests and replies are delayed
 * at random (an agent keeps spending what it holds while its renewal is in
 * flight, held requests included). The agents spend only what they were
 * granted, only before send time + TTL, and drop their balance when a grant
 * names a new lease, as the real agent does. Checked:
 *
 * - the promise across the change (shared/testing checkAcrossChange):
 *   windows ending by the change keep B₁ + A₁ + r₁·T, windows starting a
 *   TTL₁ after it keep B₂ + A₂ + r₂·T, the others the larger of both;
 * - no grant changes the capacity or the lease limit of a lease the agent
 *   holds (the agent would refuse it as implausible);
 * - credit never passes what credit.ts allows (asserted inside the pool).
 *
 * Replay with `SEED=<n> npx vitest run src/core/pool-reconfigure-property.test.ts`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkAcrossChange, checkWindows, propertySeed, type Admission } from '@tokenlease/shared/testing';
import { makeRate, type LeaseGrant, type Reply } from '@tokenlease/shared';
import { parseCoordinatorConfig, type PoolConfig } from './config.js';
import { Pool, type Delivery } from './pool.js';
import { SECRET } from './pool.fixtures.js';

const RUNS = Number(process.env['RUNS'] ?? '200');

interface Shape {
  readonly capacity: number;
  readonly refillPerSecond: number;
  readonly ttlMs: number;
  readonly maxLease: number;
  readonly allowance: number;
}

const shapeArb: fc.Arbitrary<Shape> = fc
  .record({
    capacity: fc.integer({ min: 10, max: 300 }),
    refillPerSecond: fc.integer({ min: 1, max: 1000 }),
    ttlMs: fc.integer({ min: 100, max: 1500 }),
    leaseShare: fc.integer({ min: 2, max: 10 }),
    allowance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 100 })),
  })
  .map((s) => ({ ...s, maxLease: Math.max(1, Math.floor(s.capacity / s.leaseShare)) }));

type Step =
  | { readonly kind: 'wait'; readonly us: number }
  | { readonly kind: 'send'; readonly agent: number; readonly want: number; readonly hold: boolean }
  | { readonly kind: 'arrive'; readonly agent: number }
  | { readonly kind: 'reply'; readonly agent: number }
  | { readonly kind: 'spend'; readonly agent: number; readonly cost: number }
  | { readonly kind: 'return'; readonly agent: number }
  | { readonly kind: 'tick' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  // Mostly short waits: a window is tight only when the refill during it is small beside B.
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 2_000 }).map((us) => ({ kind: 'wait' as const, us })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 400_000 }).map((us) => ({ kind: 'wait' as const, us })) },
  {
    weight: 3,
    arbitrary: fc
      .record({ agent: fc.nat(3), want: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.constant(1_000_000)), hold: fc.boolean() })
      .map((s) => ({ kind: 'send' as const, ...s })),
  },
  { weight: 3, arbitrary: fc.nat(3).map((agent) => ({ kind: 'arrive' as const, agent })) },
  { weight: 3, arbitrary: fc.nat(3).map((agent) => ({ kind: 'reply' as const, agent })) },
  {
    weight: 3,
    arbitrary: fc.record({ agent: fc.nat(3), cost: fc.integer({ min: 1, max: 30 }) }).map((s) => ({ kind: 'spend' as const, ...s })),
  },
  // Greedy: spend the whole balance at once.
  { weight: 4, arbitrary: fc.nat(3).map((agent) => ({ kind: 'spend' as const, agent, cost: Infinity })) },
  { weight: 1, arbitrary: fc.nat(3).map((agent) => ({ kind: 'return' as const, agent })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'tick' as const }) },
);

/** WindowShape — a window pool's limits: at most `limit` per `windowMs`. */
interface WindowShape {
  readonly limit: number;
  readonly windowMs: number;
  readonly ttlMs: number;
  readonly maxLease: number;
}

const windowShapeArb: fc.Arbitrary<WindowShape> = fc
  .record({
    limit: fc.integer({ min: 10, max: 300 }),
    windowMs: fc.integer({ min: 20, max: 2000 }),
    ttlMs: fc.integer({ min: 100, max: 1500 }),
    leaseShare: fc.integer({ min: 2, max: 10 }),
  })
  .map((s) => ({ ...s, maxLease: Math.max(1, Math.floor(s.limit / s.leaseShare)) }));

function windowConfig(shape: WindowShape): PoolConfig {
  const fields = { window: { limit: shape.limit, windowMs: shape.windowMs }, leaseTtlMs: shape.ttlMs, maxLeaseTokens: shape.maxLease };
  return parseCoordinatorConfig('property.yaml', { pools: { p: fields } }).pools[0] as PoolConfig;
}

/** The grain a window pool rounds release instants up to (window-credit.ts), µs. */
const grainUs = (windowMs: number): number => Math.max(1000, Math.ceil((windowMs * 1000) / 1024));

function poolConfig(shape: Shape): PoolConfig {
  const fields = {
    capacity: shape.capacity,
    refill: `${shape.refillPerSecond}/s`,
    leaseTtlMs: shape.ttlMs,
    maxLeaseTokens: shape.maxLease,
    allowance: shape.allowance,
  };
  const config = parseCoordinatorConfig('property.yaml', { pools: { p: fields } }).pools[0];
  if (config === undefined) throw new Error('no pool');
  return config;
}

interface Flight {
  readonly seq: number;
  readonly op: 'acquire' | 'return';
  readonly sentAtUs: number;
  readonly leaseId: string | null;
  readonly tokensLeft: number;
  readonly want: number;
  readonly hold: boolean;
  arrived: boolean;
  reply: Reply | null;
}

interface HonestAgent {
  readonly id: string;
  seq: number;
  leaseId: string | null;
  balance: number;
  expiresAtUs: number;
  capacity: number;
  maxLease: number;
  flight: Flight | null;
}

/** run — one scenario; returns the admissions and the change's instant. */
function run(
  before: PoolConfig,
  after: PoolConfig,
  steps: readonly Step[],
  changeAt: number,
): { admissions: Admission[]; changeAtUs: number } {
  // A window pool starts as a new owner finds it with no record in a store (full), not empty for a whole window.
  const pool = before.window === null ? new Pool<string>(before, 1, 0, 0) : Pool.takeOver<string>(before, 1, 0, null);
  const agents: HonestAgent[] = [0, 1, 2, 3].map((i) => ({
    id: `a${i}`,
    seq: 0,
    leaseId: null,
    balance: 0,
    expiresAtUs: 0,
    capacity: 0,
    maxLease: 0,
    flight: null,
  }));
  const admissions: Admission[] = [];
  let now = 1;
  let changeAtUs = -1;
  const deliver = (out: readonly Delivery<string>[]): void => {
    for (const { to, reply } of out) {
      const [id, seq] = to.split('#');
      const agent = agents.find((a) => a.id === id);
      if (agent?.flight?.seq === Number(seq)) agent.flight.reply = reply;
    }
  };
  const apply = (agent: HonestAgent, grant: LeaseGrant, flight: Flight): void => {
    const live = agent.leaseId !== null && now < agent.expiresAtUs;
    const same = live && grant.leaseId === agent.leaseId;
    if (same && (grant.capacityTokens !== agent.capacity || grant.tokensHeld > grant.maxLeaseTokens)) {
      throw new Error(`implausible grant mid-lease: ${JSON.stringify(grant)} after capacity ${agent.capacity}`);
    }
    agent.balance = (same ? agent.balance : 0) + grant.tokensGranted;
    agent.leaseId = grant.leaseId;
    agent.capacity = grant.capacityTokens;
    agent.maxLease = grant.maxLeaseTokens;
    agent.expiresAtUs = flight.sentAtUs + grant.ttlMs * 1000;
  };
  steps.forEach((step, index) => {
    if (index === changeAt) {
      const out: Delivery<string>[] = [];
      pool.reconfigure(after, now, out);
      deliver(out);
      changeAtUs = now;
    }
    const agent = 'agent' in step ? (agents[step.agent] as HonestAgent) : null;
    if (agent !== null && now >= agent.expiresAtUs) agent.balance = 0;
    switch (step.kind) {
      case 'wait':
        now += step.us;
        return;
      case 'tick': {
        const out: Delivery<string>[] = [];
        pool.tick(now, out);
        deliver(out);
        return;
      }
      case 'spend': {
        const cost = Math.min(step.cost, agent?.balance ?? 0);
        if (agent === null || cost === 0 || agent.balance < cost || now >= agent.expiresAtUs) return;
        agent.balance -= cost;
        admissions.push({ tUs: now, cost });
        return;
      }
      case 'send': {
        if (agent === null || agent.flight !== null) return;
        agent.seq += 1;
        const live = agent.leaseId !== null && now < agent.expiresAtUs;
        const flight = {
          seq: agent.seq,
          op: 'acquire',
          sentAtUs: now,
          leaseId: live ? agent.leaseId : null,
          tokensLeft: live ? agent.balance : 0,
        };
        agent.flight = { ...flight, op: 'acquire', want: step.want, hold: step.hold, arrived: false, reply: null };
        return;
      }
      case 'return': {
        if (agent === null || agent.flight !== null || agent.leaseId === null || agent.balance === 0) return;
        agent.seq += 1;
        agent.flight = {
          seq: agent.seq,
          op: 'return',
          sentAtUs: now,
          leaseId: agent.leaseId,
          tokensLeft: agent.balance,
          want: 0,
          hold: false,
          arrived: false,
          reply: null,
        };
        agent.balance = 0;
        agent.leaseId = null;
        return;
      }
      case 'arrive': {
        const f = agent?.flight;
        if (agent === null || f === null || f === undefined || f.arrived) return;
        f.arrived = true;
        const out: Delivery<string>[] = [];
        const to = `${agent.id}#${f.seq}`;
        const base = { v: 2 as const, agentId: agent.id, pool: 'p', leaseSecret: SECRET, seq: f.seq, tokensLeft: f.tokensLeft };
        if (f.op === 'return') pool.giveBack({ ...base, op: 'return', leaseId: f.leaseId as string }, to, now, out);
        else {
          const req = {
            ...base,
            op: 'acquire' as const,
            leaseId: f.leaseId,
            tokensWanted: f.want,
            demandPerSecond: 100,
            holdMs: f.hold ? 100 : 0,
          };
          pool.acquire(req, to, now, out, 'anon');
        }
        deliver(out);
        return;
      }
      case 'reply': {
        const f = agent?.flight;
        if (agent === null || f === null || f === undefined || f.reply === null) return;
        agent.flight = null;
        if (f.reply.kind === 'grant' && f.op === 'acquire') apply(agent, f.reply, f);
        return;
      }
    }
  });
  return { admissions, changeAtUs };
}

describe('a pool reconfigured under honest agents with delayed messages (property)', () => {
  it('keeps the old envelope before the change, the new one a TTL after it, and the larger of both across it', () => {
    const seed = propertySeed('src/core/pool-reconfigure-property.test.ts');
    fc.assert(
      fc.property(shapeArb, shapeArb, fc.array(stepArb, { minLength: 20, maxLength: 600 }), fc.nat(600), (before, after, steps, at) => {
        const changeAt = at % steps.length;
        const { admissions, changeAtUs } = run(poolConfig(before), poolConfig(after), steps, changeAt);
        const report = checkAcrossChange(
          admissions,
          changeAtUs,
          before.ttlMs * 1000,
          { boundTokens: before.capacity + before.allowance, rate: makeRate(before.refillPerSecond, 1000) },
          { boundTokens: after.capacity + after.allowance, rate: makeRate(after.refillPerSecond, 1000) },
        );
        expect(
          report.ok,
          JSON.stringify({ before: report.before.worstWindow, after: report.after.worstWindow, spanning: report.spanning.worstWindow }),
        ).toBe(true);
      }),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
  }, 60_000);

  it('keeps a window pool within N₁ per W₁ before a change, the larger N over the shorter window across it, and N₂ per W₂ once the old has drained', () => {
    const seed = propertySeed('src/core/pool-reconfigure-property.test.ts');
    let admitted = 0;
    let fullWindows = 0;
    fc.assert(
      fc.property(
        windowShapeArb,
        windowShapeArb,
        fc.array(stepArb, { minLength: 20, maxLength: 600, size: 'max' }),
        fc.nat(600),
        (before, after, steps, at) => {
          const changeAt = at % steps.length;
          const { admissions, changeAtUs } = run(windowConfig(before), windowConfig(after), steps, changeAt);
          const w1 = before.windowMs * 1000;
          const w2 = after.windowMs * 1000;
          // docs/design.md, "Window pools": the promise across a reconfiguration.
          const drainedUs =
            changeAtUs + before.ttlMs * 1000 + Math.max(w1, w2) + Math.max(grainUs(before.windowMs), grainUs(after.windowMs));
          const ended = checkWindows(
            admissions.filter((a) => a.tUs < changeAtUs),
            before.limit,
            w1,
          );
          const spanning = checkWindows(admissions, Math.max(before.limit, after.limit), Math.min(w1, w2));
          const later = checkWindows(
            admissions.filter((a) => a.tUs >= drainedUs),
            after.limit,
            w2,
          );
          admitted += ended.admittedTokens + later.admittedTokens;
          if (ended.fullestTokens === before.limit || later.fullestTokens === after.limit) fullWindows += 1;
          expect(
            ended.ok && spanning.ok && later.ok,
            JSON.stringify({ changeAtUs, ended: ended.fullest, spanning: spanning.fullest, later: later.fullest }),
          ).toBe(true);
        },
      ),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
    console.log(
      `pool-reconfigure window property: ${admitted} tokens judged before or after the change; ${fullWindows} runs filled a window to its limit`,
    );
    // Not vacuous: tokens were spent on both sides, and windows were filled to their limit.
    expect(admitted).toBeGreaterThan(0);
    expect(fullWindows).toBeGreaterThan(0);
  }, 60_000);
});
