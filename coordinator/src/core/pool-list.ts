/**
 * The `pools` operator reply: a page of the pools a coordinator holds, in
 * name order, read from each pool's last step without changing anything
 * (no refill, no expiry: a listing never answers a held request).
 *
 * Rules:
 * - Names sort by UTF-16 code units (pool names are ASCII), so pages
 *   follow each other with `after` = the last name of the page before.
 * - A page holds at most `limit` (default and ceiling POOLS_PAGE_MAX)
 *   pools; `next` names its last pool when more follow, else null.
 */
import { POOLS_PAGE_MAX, type PoolList, type PoolSummary, type PoolsQuery } from '@tokenlease/shared';
import type { HeldPool } from './coordinator-core.js';

/** PoolHolder — what a listing reads: the pools held and the holder's name. */
export interface PoolHolder<R> {
  readonly name: string;
  held(): IterableIterator<HeldPool<R>>;
}

/** listPools — the page of `holder`'s pools that `query` asks for, as of `nowUs`. */
export function listPools<R>(holder: PoolHolder<R>, query: PoolsQuery, nowUs: number): PoolList {
  const limit = Math.min(query.limit ?? POOLS_PAGE_MAX, POOLS_PAGE_MAX);
  const after = query.after;
  const held = [...holder.held()].filter((h) => after === undefined || h.name > after).sort((a, b) => (a.name < b.name ? -1 : 1));
  const page = held.slice(0, limit);
  const pools = page.map((h) => summarize(h, nowUs));
  const last = page[page.length - 1];
  return { v: 2, kind: 'pools', coordinator: holder.name, pools, next: held.length > limit && last !== undefined ? last.name : null };
}

/** summarize — one held pool as an operator sees it. */
export function summarize<R>(held: HeldPool<R>, nowUs: number): PoolSummary {
  const s = held.pool.snapshot();
  const c = s.config;
  return {
    pool: held.name,
    kind: held.kind,
    capacityTokens: c.capacity,
    allowanceTokens: c.allowance,
    refillTokens: c.refill.tokens,
    refillPeriodMs: c.refill.periodMs,
    leaseTtlMs: c.leaseTtlMs,
    leaseMode: c.leaseMode,
    levelTokens: s.levelTokens,
    leasedTokens: s.leasedTokens,
    leases: s.leases,
    waiting: s.waiting,
    quietMs: Math.ceil(Math.max(0, s.quietUntilUs - nowUs) / 1000),
    epoch: s.epoch,
    shadow: c.shadow,
    ...(c.window === null ? {} : { windowMs: c.window.windowMs, coolingTokens: s.coolingTokens }),
  };
}
