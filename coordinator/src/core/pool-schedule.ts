/**
 * PoolSchedule: when each pool next has work, so that a tick visits only
 * the pools due and the next deadline is read off the top of a heap: the
 * work of a tick, and the CPU of a coordinator at rest, grow with the pools
 * that have something to do, not with the pools held (100,000 idle template
 * pools cost nothing until one is due, to be evicted).
 *
 * Rules:
 * - Each pool has one instant (`at`): the earliest of its own deadline (a
 *   hold ends, a waiter's turn accrues, a lease expires) and when the
 *   registry may forget it (an idle template pool, a retiring pool). Its
 *   owner sets it again after every change to the pool: a request, a tick,
 *   a takeover, a restart, credit from outside (a relay's upstream grant).
 * - Setting an instant pushes a new heap entry and leaves the old one in
 *   place: an entry whose instant is no longer its pool's is stale and is
 *   skipped when it comes up. When stale entries outnumber live ones, the
 *   heap is rebuilt from the live instants (amortised O(1) per set).
 * - `takeDue(now)` hands out each pool due at `now` once and forgets its
 *   instant until it is set again; pools never set are never due.
 */
import { MinHeap } from './min-heap.js';

/** Rebuild when the heap holds more than this many entries beyond twice the live ones. */
const STALE_SLACK = 64;

export class PoolSchedule<P> {
  private readonly heap = new MinHeap<P>();
  private readonly at = new Map<P, number>();

  /** size — pools with an instant. */
  get size(): number {
    return this.at.size;
  }

  /** set — `pool` next has work at `atUs` (Infinity: none; it is then held without an entry). */
  set(pool: P, atUs: number): void {
    if (this.at.get(pool) === atUs) return;
    this.at.set(pool, atUs);
    if (atUs !== Infinity) this.heap.push(atUs, pool);
    if (this.heap.size > 2 * this.at.size + STALE_SLACK) this.rebuild();
  }

  /** forget — `pool` is gone; its entries go stale. */
  forget(pool: P): void {
    this.at.delete(pool);
  }

  /** clear — forgets every pool (before a schedule is set anew for all). */
  clear(): void {
    this.at.clear();
    this.heap.clear();
  }

  /** nextUs — the earliest instant of any pool, or Infinity. */
  nextUs(): number {
    for (;;) {
      const top = this.heap.top;
      if (top === undefined) return Infinity;
      const atUs = this.heap.topKey;
      if (this.at.get(top) === atUs) return atUs;
      this.heap.pop();
    }
  }

  /** takeDue — the pools due at `nowUs`, each once, earliest first; their instants are forgotten until set again. */
  takeDue(nowUs: number): P[] {
    const due: P[] = [];
    for (;;) {
      const top = this.heap.top;
      const atUs = this.heap.topKey;
      if (top === undefined || atUs > nowUs) return due;
      this.heap.pop();
      if (this.at.get(top) !== atUs) continue;
      this.at.delete(top);
      due.push(top);
    }
  }

  private rebuild(): void {
    this.heap.clear();
    for (const [pool, atUs] of this.at) if (atUs !== Infinity) this.heap.push(atUs, pool);
  }
}
