/**
 * Fixtures of the Pool tests (pool.test.ts, pool-grant.test.ts,
 * pool-hold.test.ts; coordinator-core.test.ts and pool-property.test.ts use
 * a few). Instants are in µs.
 *
 * The standard pool "p" (STANDARD_POOL_FIELDS): capacity 100, refill 1000/s
 * (exactly 1 token per ms), TTL 1 s, leases of at most 20, no grant under 5
 * while a request may be held, holds of at most 200 ms. `makePool()` starts
 * it at 0 with a 1 s quiet period and epoch EPOCH, so it is empty until
 * QUIET_END (1.000 s) and full from FULL_AT (1.100 s); `makePool(setup)`
 * overrides any of its fields, its start instant or the quiet period.
 */
import { expect } from 'vitest';
import type { LeaseGrant, LeaseRequest, PoolStatus } from '@tokenlease/shared';
import { acquireRequest } from '@tokenlease/shared/testing';
import { parseCoordinatorConfig } from './config.js';
import type { LeaseRecord } from './lease-table.js';
import { Pool, type Delivery } from './pool.js';

/** SECRET — the lease secret the fixtures' agents present. */
export const SECRET = 'fixture-secret-of-128-bits';

/** MS — one millisecond in µs. */
export const MS = 1_000;
/** S — one second in µs. */
export const S = 1_000_000;
/** EPOCH — the coordinator epoch of the pools makePool builds. */
export const EPOCH = 3;
/** QUIET_END — when the standard pool's quiet period ends (1 s after its start at 0); its level is 0 then. */
export const QUIET_END = 1 * S;
/** FULL_AT — when the standard pool has refilled to its capacity of 100 (1.100 s). */
export const FULL_AT = 1_100 * MS;

/** STANDARD_POOL_FIELDS — the config fields of the standard pool "p" (see the top of this file). */
export const STANDARD_POOL_FIELDS: Readonly<Record<string, unknown>> = {
  capacity: 100,
  refill: '1000/s',
  leaseTtlMs: 1000,
  maxLeaseTokens: 20,
  minGrantTokens: 5,
  maxHoldMs: 200,
};

/** PoolSetup — how a pool differs from the standard one; every field is optional. */
export interface PoolSetup {
  /** Config fields that override STANDARD_POOL_FIELDS. */
  readonly fields?: Readonly<Record<string, unknown>>;
  /** Start instant, µs; 0 when absent. */
  readonly startUs?: number;
  /** Quiet period, ms; 1000 when absent. */
  readonly quietPeriodMs?: number;
}

/** makePool — pool "p" of epoch EPOCH: the standard pool, changed as `setup` says. */
export function makePool(setup: PoolSetup = {}): Pool<string> {
  const config = parseCoordinatorConfig('pool.fixtures.yaml', {
    quietPeriodMs: setup.quietPeriodMs ?? 1000,
    pools: { p: { ...STANDARD_POOL_FIELDS, ...setup.fields } },
  });
  const pool = config.pools[0];
  if (pool === undefined) throw new Error('no pool');
  return new Pool<string>(pool, EPOCH, setup.startUs ?? 0, config.quietPeriodMs);
}

/** AcquireFields — the fields of an acquire request to pool "p" that a test sets; agentId and seq are required. */
export type AcquireFields = Partial<Omit<LeaseRequest, 'v' | 'op' | 'pool'>> & { readonly agentId: string; readonly seq: number };

/** acquireOf — an acquire to pool "p" under SECRET: no lease id, 0 tokens left, 20 wanted, demand 0, holdMs 0, unless `fields` say (a `pool` included). */
export function acquireOf(fields: AcquireFields & { readonly pool?: string }): LeaseRequest {
  return acquireRequest({ pool: 'p', leaseSecret: SECRET, tokensWanted: 20, demandPerSecond: 0, ...fields });
}

/**
 * acquire — sends an acquire to `pool` at `nowUs`, replying to `to`
 * ("<agentId>#<seq>" when absent), and returns the deliveries. Unset fields:
 * no lease id, 0 tokens left, 20 wanted, demand 0, holdMs 0 (answer at once).
 * It is sent under the identity token `identity`: each agent its own
 * (its agent id) unless a test says, so caps per identity stay out of
 * tests of other things.
 */
export function acquire(
  pool: Pool<string>,
  nowUs: number,
  fields: AcquireFields & { readonly identity?: string },
  to = `${fields.agentId}#${fields.seq}`,
): Delivery<string>[] {
  const out: Delivery<string>[] = [];
  const { identity = fields.agentId, ...request } = fields;
  pool.acquire(acquireOf(request), to, nowUs, out, identity);
  return out;
}

/** grantOf — the one grant that `deliveries` must hold; fails the test otherwise. */
export function grantOf(deliveries: readonly Delivery<string>[]): LeaseGrant {
  expect(deliveries).toHaveLength(1);
  const reply = deliveries[0]?.reply;
  if (reply?.kind !== 'grant') throw new Error(`expected a grant, got ${JSON.stringify(reply)}`);
  return reply;
}

/** tick — runs the pool's timers at `nowUs` and returns the deliveries (none when nothing is due). */
export function tick(pool: Pool<string>, nowUs: number): Delivery<string>[] {
  const out: Delivery<string>[] = [];
  pool.tick(nowUs, out);
  return out;
}

/** status — the pool's status at `nowUs`; reading it must deliver nothing. */
export function status(pool: Pool<string>, nowUs: number): PoolStatus {
  const out: Delivery<string>[] = [];
  const s = pool.status(nowUs, out);
  expect(out).toEqual([]);
  return s;
}

/** credit — the whole tokens in the level, the tokens leased and the number of leases of a status. */
export const credit = (s: PoolStatus): { level: number; leased: number; leases: number } => ({
  level: s.levelTokens,
  leased: s.leasedTokens,
  leases: s.leases,
});

/** poolWithLease — a full standard pool in which agent `a` holds a lease of `tokens` granted at FULL_AT with seq 1. */
export function poolWithLease(tokens: number): { pool: Pool<string>; leaseId: string } {
  const pool = makePool();
  const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: tokens }));
  expect(g.tokensGranted).toBe(tokens);
  return { pool, leaseId: g.leaseId };
}

/** PoolInternals — the private state of a Pool that tests read. */
export interface PoolInternals<R> {
  readonly credit: { readonly levelUnits: number; readonly lastRefillUs: number };
  readonly waiters: ReadonlyArray<{
    readonly record: LeaseRecord;
    readonly wantTokens: number;
    readonly to: R;
    readonly deadlineUs: number;
  }>;
  readonly leases: { readonly byAgent: Map<string, LeaseRecord>; readonly boundSum: number; readonly issued: number };
}

/** internalsOf — `pool` seen with its private state. */
export const internalsOf = <R>(pool: Pool<R>): PoolInternals<R> => ({
  credit: pool.parts.credit,
  waiters: pool.heldRequests(),
  leases: pool.parts.leases as unknown as PoolInternals<R>['leases'],
});

/** internals — the exact private state of `pool` as a string, for "nothing changed" checks; throws when there is no pool. */
export function internals<R>(pool: Pool<R> | undefined): string {
  if (pool === undefined) throw new Error('no pool');
  const p = internalsOf(pool);
  return JSON.stringify({
    level: p.credit.levelUnits,
    lastRefill: p.credit.lastRefillUs,
    waiters: p.waiters.map((w) => [w.record.leaseId, w.wantTokens, w.to, w.deadlineUs]),
    // The clock a lease keeps to skip a lookup is bookkeeping, not state.
    leases: [...p.leases.byAgent.values()].map(({ clock: _clock, ...state }) => state),
    boundSum: p.leases.boundSum,
    issued: p.leases.issued,
  });
}

/** TICK_GUARD — more ticks than this between two instants means nextDeadlineUs reports deadlines that tick does not resolve. */
const TICK_GUARD = 10_000;

/**
 * tickThroughDeadlines — what an adapter's timer does up to `targetUs`:
 * while the core's next deadline is due by then, `tickAt(deadlineUs, atUs)`
 * with atUs = max(deadline, the previous tick's instant, `fromUs`); the call
 * must tick the core there. Throws when deadlines never move past a tick.
 */
export function tickThroughDeadlines(
  core: { nextDeadlineUs(): number },
  fromUs: number,
  targetUs: number,
  tickAt: (deadlineUs: number, atUs: number) => void,
): void {
  let atUs = fromUs;
  for (let guard = 0; ; guard += 1) {
    const deadlineUs = core.nextDeadlineUs();
    if (deadlineUs > targetUs) return;
    if (guard >= TICK_GUARD) throw new Error('nextDeadlineUs keeps reporting instants that tick does not resolve');
    atUs = Math.max(deadlineUs, atUs);
    tickAt(deadlineUs, atUs);
  }
}
