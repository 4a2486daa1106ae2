/**
 * HoldQueue: the requests a pool holds while a worthwhile grant accrues.
 *
 * Rules:
 * - At most one held request per agent; waiters are served in arrival
 *   order (FIFO), and a held request whose hold ends is answered then.
 * - Work per operation does not grow with the number of waiters: arrival
 *   order is a doubly linked list indexed by agent (O(1) push, lookup and
 *   removal), hold deadlines are a binary heap with lazy deletion
 *   (O(log n)), and the sum of the waiters' turns is kept as they change.
 * - Waiters whose holds end together are answered in arrival order.
 * - Waiters are counted per identity (their lease's identity) as they come
 *   and go, so a cap per identity is checked in O(1).
 */
import type { LeaseRecord } from './lease-table.js';
import { MinHeap } from './min-heap.js';

/** Waiter — a held request: the lease it renews, what it wants, its turn and where the reply goes. */
export interface Waiter<R> {
  readonly record: LeaseRecord;
  readonly wantTokens: number;
  /** The turn worth a reply: min(wanted, minGrantTokens × its class's weight). */
  readonly thresholdTokens: number;
  to: R;
  readonly deadlineUs: number;
  /** When it was held, µs (for the hold time a pool tallies). */
  readonly heldAtUs: number;
}

interface Entry<R> {
  readonly waiter: Waiter<R>;
  readonly arrival: number;
  prev: Entry<R> | null;
  next: Entry<R> | null;
}

export class HoldQueue<R> {
  private readonly byAgent = new Map<string, Entry<R>>();
  private first: Entry<R> | null = null;
  private last: Entry<R> | null = null;
  private readonly deadlines = new MinHeap<Entry<R>>();
  private arrivals = 0;
  private turnsSum = 0;
  /** Held requests per identity token (identities with none are not kept). */
  private readonly perIdentity = new Map<string, number>();

  get size(): number {
    return this.byAgent.size;
  }

  /** turnsTokens — Σ thresholdTokens over the waiters. */
  get turnsTokens(): number {
    return this.turnsSum;
  }

  /** waitingOf — held requests of leases opened under `identity`. */
  waitingOf(identity: string): number {
    return this.perIdentity.get(identity) ?? 0;
  }

  /** push — holds `waiter`; its agent must have no held request. */
  push(waiter: Waiter<R>): void {
    const entry: Entry<R> = { waiter, arrival: this.arrivals++, prev: this.last, next: null };
    if (this.last === null) this.first = entry;
    else this.last.next = entry;
    this.last = entry;
    this.byAgent.set(waiter.record.agentId, entry);
    this.deadlines.push(waiter.deadlineUs, entry);
    this.turnsSum += waiter.thresholdTokens;
    const identity = waiter.record.identity;
    if (identity !== null) this.perIdentity.set(identity, this.waitingOf(identity) + 1);
  }

  /** get — the held request of `agentId`, if any. */
  get(agentId: string): Waiter<R> | undefined {
    return this.byAgent.get(agentId)?.waiter;
  }

  /** head — the earliest arrival still held. */
  head(): Waiter<R> | undefined {
    return this.first?.waiter;
  }

  /** remove — takes `agentId`'s held request out of the queue; returns it. */
  remove(agentId: string): Waiter<R> | undefined {
    const entry = this.byAgent.get(agentId);
    if (entry === undefined) return undefined;
    this.unlink(entry);
    this.compactDeadlines();
    return entry.waiter;
  }

  /** takeDue — every waiter whose hold ended at or before `nowUs`, removed, in arrival order. */
  takeDue(nowUs: number): Waiter<R>[] {
    const due: Entry<R>[] = [];
    for (;;) {
      const top = this.deadlines.top;
      if (top === undefined || this.deadlines.topKey > nowUs) break;
      this.deadlines.pop();
      if (this.byAgent.get(top.waiter.record.agentId) !== top) continue;
      this.unlink(top);
      due.push(top);
    }
    return due.sort((a, b) => a.arrival - b.arrival).map((e) => e.waiter);
  }

  /** inOrder — every waiter in arrival order, left in the queue. */
  inOrder(): Waiter<R>[] {
    const all: Waiter<R>[] = [];
    for (let e = this.first; e !== null; e = e.next) all.push(e.waiter);
    return all;
  }

  /** takeAll — every waiter, removed, in arrival order. */
  takeAll(): Waiter<R>[] {
    const all = this.inOrder();
    this.byAgent.clear();
    this.deadlines.clear();
    this.first = null;
    this.last = null;
    this.turnsSum = 0;
    this.perIdentity.clear();
    return all;
  }

  /** earliestDeadlineUs — when the next hold ends, or Infinity. */
  earliestDeadlineUs(): number {
    for (;;) {
      const top = this.deadlines.top;
      if (top === undefined) return Infinity;
      if (this.byAgent.get(top.waiter.record.agentId) === top) return this.deadlines.topKey;
      this.deadlines.pop();
    }
  }

  private unlink(entry: Entry<R>): void {
    this.byAgent.delete(entry.waiter.record.agentId);
    this.turnsSum -= entry.waiter.thresholdTokens;
    const identity = entry.waiter.record.identity;
    if (identity !== null) {
      const left = this.waitingOf(identity) - 1;
      if (left <= 0) this.perIdentity.delete(identity);
      else this.perIdentity.set(identity, left);
    }
    if (entry.prev === null) this.first = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === null) this.last = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = null;
    entry.next = null;
  }

  /** compactDeadlines — rebuilds the heap once removed entries outnumber live ones (amortized O(1)). */
  private compactDeadlines(): void {
    if (this.deadlines.size <= 2 * this.byAgent.size + 16) return;
    this.deadlines.clear();
    for (const entry of this.byAgent.values()) this.deadlines.push(entry.waiter.deadlineUs, entry);
  }
}
