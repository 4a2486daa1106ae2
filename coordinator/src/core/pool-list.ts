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
 * - A page's work is one comparison per pool held (mostly against the
 *   page's largest name so far) and the summaries of the page's pools
 *   alone: nothing is sorted, looked up or allocated for the pools it
 *   does not show. `listingCost` states it for the listing budget
 *   (listing-budget.ts).
 */
import { POOLS_PAGE_MAX, type PoolList, type PoolSummary, type PoolsQuery } from '@tokenlease/shared';
import type { HeldPool } from './coordinator-core.js';
import { SUMMARY_WORK_UNITS } from './listing-budget.js';

/** PoolHolder — what a listing reads: the names of the pools held, each pool by name, and the holder's name. */
export interface PoolHolder<R> {
  readonly name: string;
  /** The size of `heldNames()`. */
  readonly poolCount: number;
  heldNames(): IterableIterator<string>;
  heldPool(name: string): HeldPool<R> | undefined;
}

/**
 * listingCost — the work units (listing-budget.ts) of the page `query` asks
 * of `holder`: one per pool held (each name is compared), SUMMARY_WORK_UNITS
 * per pool the page may show, and one for the page itself.
 */
export function listingCost<R>(holder: PoolHolder<R>, query: PoolsQuery): number {
  const limit = Math.min(query.limit ?? POOLS_PAGE_MAX, POOLS_PAGE_MAX);
  return holder.poolCount + SUMMARY_WORK_UNITS * Math.min(limit, holder.poolCount) + 1;
}

/** listPools — the page of `holder`'s pools that `query` asks for, as of `nowUs`. */
export function listPools<R>(holder: PoolHolder<R>, query: PoolsQuery, nowUs: number): PoolList {
  const limit = Math.min(query.limit ?? POOLS_PAGE_MAX, POOLS_PAGE_MAX);
  // One more than the page: whether it is there says whether more follow.
  const names = smallestAfter(holder.heldNames(), query.after, limit + 1);
  const page = names.slice(0, limit).flatMap((name) => holder.heldPool(name) ?? []);
  const last = page[page.length - 1];
  const next = names.length > limit && last !== undefined ? last.name : null;
  return { v: 2, kind: 'pools', coordinator: holder.name, pools: page.map((h) => summarize(h, nowUs)), next };
}

/**
 * smallestAfter — the `count` smallest of `names` that sort after `after`
 * (all of them when it is undefined), in order. A max-heap of at most
 * `count` names: a name no smaller than its top costs one comparison.
 */
export function smallestAfter(names: Iterable<string>, after: string | undefined, count: number): string[] {
  const heap: string[] = [];
  for (const name of names) {
    if (after !== undefined && name <= after) continue;
    if (heap.length < count) {
      heap.push(name);
      siftUp(heap, heap.length - 1);
    } else if (count > 0 && name < (heap[0] as string)) {
      heap[0] = name;
      siftDown(heap, 0);
    }
  }
  return heap.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function siftUp(heap: string[], at: number): void {
  let i = at;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if ((heap[parent] as string) >= (heap[i] as string)) return;
    swap(heap, i, parent);
    i = parent;
  }
}

function siftDown(heap: string[], at: number): void {
  let i = at;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let largest = i;
    if (left < heap.length && (heap[left] as string) > (heap[largest] as string)) largest = left;
    if (right < heap.length && (heap[right] as string) > (heap[largest] as string)) largest = right;
    if (largest === i) return;
    swap(heap, i, largest);
    i = largest;
  }
}

function swap(heap: string[], i: number, j: number): void {
  const t = heap[i] as string;
  heap[i] = heap[j] as string;
  heap[j] = t;
}

/** summarize — one held pool as an operator sees it. */
export function summarize<R>(held: HeldPool<R>, nowUs: number): PoolSummary {
  const s = held.pool.snapshot(nowUs);
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
    ...(c.concurrency !== null
      ? { holdMs: c.concurrency.maxHoldMs, coolingTokens: s.coolingTokens }
      : c.window === null
        ? {}
        : { windowMs: c.window.windowMs, coolingTokens: s.coolingTokens }),
    calls: s.calls,
  };
}
