/**
 * StatusView: what the coordinator's status page shows, as plain data read
 * from the pools' last step (nothing ticks, nothing changes).
 *
 * Rules:
 * - Never a lease secret: each lease is shown by its agent, class, lease
 *   id, bound and time left, fields picked one by one.
 * - Bounded whatever the fleet: at most LEASES_SHOWN_MAX leases per pool
 *   (the largest bounds first) and POOLS_SHOWN_MAX pools (configured ones
 *   first, then template pools by leased tokens), with the counts of those
 *   left out. Names are data: the page escapes them (it sets text, never
 *   markup).
 * - Each pool shows the calls its agents reported deciding (admitted,
 *   denied, shadow-denied: shared calls.ts), so the page shows the 429s
 *   clients get although agents deny locally; and the TOP_DENIED_MAX
 *   template pools (per-key pools, their names keyed hashes) with the most
 *   denied calls, whether or not they are among the pools shown.
 */
import type { CallCounts } from '@tokenlease/shared';
import type { HeldPool } from './coordinator-core.js';
import type { LeaseRecord } from './lease-table.js';

/** LEASES_SHOWN_MAX — leases listed per pool. */
export const LEASES_SHOWN_MAX = 50;
/** POOLS_SHOWN_MAX — pools listed. */
export const POOLS_SHOWN_MAX = 200;
/** TOP_DENIED_MAX — template pools listed by denied calls. */
export const TOP_DENIED_MAX = 10;

export interface LeaseView {
  readonly agentId: string;
  readonly agentClass: string | null;
  readonly leaseId: string;
  readonly boundTokens: number;
  readonly expiresInMs: number;
  readonly rate: boolean;
}

export interface PoolView {
  readonly name: string;
  readonly kind: 'configured' | 'template' | 'removed';
  readonly template: string | null;
  readonly capacityTokens: number;
  readonly allowanceTokens: number;
  readonly refillPerSecond: number;
  readonly leaseTtlMs: number;
  readonly leaseMode: 'chunk' | 'rate';
  /** A window pool's window in ms (at most capacityTokens in any window of it); null for a bucket pool and a concurrency pool. */
  readonly windowMs: number | null;
  /**
   * A concurrency pool's hold bound in ms (at most capacityTokens requests
   * in flight, each counted at most this long); null otherwise. Its level,
   * leased and cooling are slots: free, leased to agents, and held back
   * until no request started under an ended lease can still run.
   */
  readonly holdMs: number | null;
  /** A window pool's tokens cooling on their way back to the level (0 for a bucket pool). */
  readonly coolingTokens: number;
  /** Whether grants put agents in shadow mode (they admit what they would deny). */
  readonly shadow: boolean;
  readonly levelTokens: number;
  readonly leasedTokens: number;
  readonly waiting: number;
  readonly leaseCount: number;
  readonly quietMs: number;
  readonly epoch: number;
  /** Calls its agents reported deciding since this coordinator made the pool. */
  readonly calls: CallCounts;
  readonly leases: readonly LeaseView[];
}

/** DeniedView — a template pool among those with the most denied calls. */
export interface DeniedView {
  readonly name: string;
  readonly template: string | null;
  readonly calls: CallCounts;
}

export interface StatusView {
  readonly pools: readonly PoolView[];
  /** Pools held but not listed (beyond POOLS_SHOWN_MAX). */
  readonly poolsNotShown: number;
  /** Template pools with denied calls, most denied first, at most TOP_DENIED_MAX. */
  readonly topDenied: readonly DeniedView[];
}

/** statusView — the pools of `held` as of their last step, seen at `nowUs`. */
export function statusView<R>(held: Iterable<HeldPool<R>>, nowUs: number): StatusView {
  const all = [...held];
  const rank = (h: HeldPool<R>): number => (h.kind === 'template' ? 1 : 0);
  all.sort((a, b) => rank(a) - rank(b) || leasedOf(b) - leasedOf(a) || (a.name < b.name ? -1 : 1));
  const shown = all.slice(0, POOLS_SHOWN_MAX);
  return { pools: shown.map((h) => poolView(h, nowUs)), poolsNotShown: all.length - shown.length, topDenied: topDenied(all) };
}

/** topDenied — the template pools of `all` with the most denied calls (ties by name), at most TOP_DENIED_MAX. */
function topDenied<R>(all: readonly HeldPool<R>[]): DeniedView[] {
  const top: DeniedView[] = [];
  for (const h of all) {
    if (h.kind !== 'template') continue;
    const calls = h.pool.snapshot().calls;
    if (calls.denied === 0) continue;
    const last = top[TOP_DENIED_MAX - 1];
    if (last !== undefined && calls.denied <= last.calls.denied) continue;
    top.push({ name: h.name, template: h.template, calls });
    top.sort((a, b) => b.calls.denied - a.calls.denied || (a.name < b.name ? -1 : 1));
    if (top.length > TOP_DENIED_MAX) top.pop();
  }
  return top;
}

function leasedOf<R>(h: HeldPool<R>): number {
  return h.kind === 'template' ? h.pool.snapshot().leasedTokens : 0;
}

function poolView<R>(h: HeldPool<R>, nowUs: number): PoolView {
  const s = h.pool.snapshot(nowUs);
  const c = s.config;
  const records = [...h.pool.leases.all()].sort((a, b) => b.boundTokens - a.boundTokens).slice(0, LEASES_SHOWN_MAX);
  return {
    name: h.name,
    kind: h.kind,
    template: h.template,
    capacityTokens: c.capacity,
    allowanceTokens: c.allowance,
    refillPerSecond: (c.refill.tokens * 1000) / c.refill.periodMs,
    leaseTtlMs: c.leaseTtlMs,
    leaseMode: c.leaseMode,
    windowMs: c.concurrency === null ? (c.window?.windowMs ?? null) : null,
    holdMs: c.concurrency?.maxHoldMs ?? null,
    coolingTokens: s.coolingTokens,
    shadow: c.shadow,
    levelTokens: s.levelTokens,
    leasedTokens: s.leasedTokens,
    waiting: s.waiting,
    leaseCount: s.leases,
    quietMs: Math.ceil(Math.max(0, s.quietUntilUs - nowUs) / 1000),
    epoch: s.epoch,
    calls: s.calls,
    leases: records.map((r) => leaseView(r, nowUs)),
  };
}

function leaseView(r: LeaseRecord, nowUs: number): LeaseView {
  return {
    agentId: r.agentId,
    agentClass: r.agentClass,
    leaseId: r.leaseId,
    boundTokens: r.boundTokens,
    expiresInMs: Math.max(0, Math.ceil((r.expiresAtUs - nowUs) / 1000)),
    rate: r.isRate,
  };
}
