/**
 * SimCoordinator: one coordinator process in the simulator: the real
 * CoordinatorCore, its ticks and, in durable mode, the write lane of the
 * durable adapter (coordinator/src/adapters/durable-service.ts):
 *
 * - Write before reply: the replies a receive or tick produces wait until
 *   the pool's changes behind them are written. Writes go one at a time, in
 *   order; whatever piles up meanwhile goes into the next write (group
 *   commit). A batch with no change to write leaves at once, in lane order.
 * - A refused (fenced) write means another epoch owns the pool: every grant
 *   and receipt it covered, and every later one, becomes `not-owner`; so
 *   does every one flushed after the process stepped down.
 * - A crash loses the memory, the held requests, the unwritten changes and
 *   the unsent replies; a write in flight lands or not (the caller says).
 * - Stepping down answers the held requests `not-owner` (no write needed).
 */
import type { CoordinatorCore, Delivery, PoolChanges } from '@tokenlease/coordinator';
import type { Reply } from '@tokenlease/shared';
import { COORDINATOR_TICK_US_MAX, POOL, type Event, type ReplyTo } from './sim-events.js';
import type { SimStore } from './sim-store.js';

/** CoordinatorHost — what a coordinator process needs from the simulation. */
export interface CoordinatorHost {
  push(atUs: number, event: Event): void;
  /** send — puts replies a process of `epoch` produced at `producedUs` on the network now. */
  send(deliveries: readonly Delivery<ReplyTo>[], producedUs: number, epoch: number): void;
  /** failed — the core threw: a broken invariant. */
  failed(message: string): void;
}

/** Lane — a durable process's store, the epoch it owns, and how long a write takes. */
export interface Lane {
  readonly store: SimStore;
  readonly epoch: number;
  writeUs(): number;
  /** Broken on purpose: replies leave before their write lands. */
  readonly replyBeforeWrite: boolean;
}

interface Batch {
  readonly deliveries: Delivery<ReplyTo>[];
  readonly producedUs: number;
}

interface Write {
  readonly changes: PoolChanges;
  readonly batches: readonly Batch[];
  lands: boolean;
}

export class SimCoordinator {
  /** Subscribed to the pool: gets requests and ticks. */
  serving = true;
  crashed = false;
  /** Its ownership lapsed: it serves on until it steps down, its writes refused. */
  deposed = false;
  private tickGen = 0;
  private pending: Batch[] = [];
  private writing: Write | null = null;
  private fenced = false;

  constructor(
    readonly id: number,
    readonly core: CoordinatorCore<ReplyTo>,
    private readonly host: CoordinatorHost,
    private readonly lane: Lane | null,
  ) {}

  receive(to: ReplyTo, subject: string, bytes: Uint8Array, nowUs: number): void {
    this.submit(this.guard(() => this.core.receive(subject, bytes, to, nowUs)), nowUs);
    this.scheduleTick(nowUs);
  }

  /** tick — the core's tick, if `gen` is still the scheduled one. */
  tick(gen: number, nowUs: number): void {
    if (gen !== this.tickGen || !this.serving) return;
    this.submit(this.guard(() => this.core.tick(nowUs)), nowUs);
    this.scheduleTick(nowUs);
  }

  scheduleTick(nowUs: number): void {
    if (!this.serving) return;
    this.tickGen += 1;
    const at = Math.min(nowUs + COORDINATOR_TICK_US_MAX, Math.max(nowUs + 1, this.core.nextDeadlineUs()));
    this.host.push(at, { k: 'coordinator-tick', id: this.id, gen: this.tickGen });
  }

  /** crash — the process dies; a write in flight still lands if `writeLands`. */
  crash(writeLands: boolean): void {
    this.serving = false;
    this.crashed = true;
    this.pending = [];
    if (this.writing !== null) this.writing.lands = writeLands;
  }

  /** stepDown — stops serving the pool; held requests are told `not-owner` at once. */
  stepDown(nowUs: number): void {
    if (!this.serving) return;
    this.serving = false;
    this.host.send(this.core.release(POOL), nowUs, this.core.epoch);
  }

  /** landed — the write in flight reaches the store now: it lands (or is fenced) and its replies leave (or are refused). */
  landed(nowUs: number): void {
    const write = this.writing;
    const lane = this.lane;
    if (write === null || lane === null) return;
    this.writing = null;
    const accepted = write.lands && lane.store.write(lane.epoch, write.changes, nowUs);
    if (this.crashed) return;
    if (!accepted) this.fenced = true;
    this.sendBatches(write.batches, !accepted);
    if (this.pending.length > 0) this.flush(nowUs);
  }

  private submit(deliveries: Delivery<ReplyTo>[], nowUs: number): void {
    if (deliveries.length === 0) return;
    if (this.lane === null) return this.host.send(deliveries, nowUs, this.core.epoch);
    if (this.lane.replyBeforeWrite) this.host.send(deliveries.splice(0), nowUs, this.core.epoch);
    this.pending.push({ deliveries, producedUs: nowUs });
    if (this.writing === null) this.flush(nowUs);
  }

  private flush(nowUs: number): void {
    const lane = this.lane as Lane;
    const batches = this.pending.splice(0);
    const owner = !this.fenced && this.serving;
    const changes = owner ? (this.core.pool(POOL)?.takeChanges() ?? null) : null;
    if (changes === null) return this.sendBatches(batches, !owner);
    this.writing = { changes, batches, lands: true };
    this.host.push(nowUs + lane.writeUs(), { k: 'write-landed', id: this.id });
  }

  private sendBatches(batches: readonly Batch[], refuse: boolean): void {
    for (const { deliveries, producedUs } of batches) this.host.send(refuse ? deliveries.map(refused) : deliveries, producedUs, this.core.epoch);
  }

  private guard(f: () => Delivery<ReplyTo>[]): Delivery<ReplyTo>[] {
    try {
      const out = f();
      // The core contains a pool's fault and serves on; in a simulation any fault is a bug.
      const fault = this.core.takeFaults()[0];
      if (fault !== undefined) this.host.failed(`pool ${fault.pool} failed: ${fault.error instanceof Error ? fault.error.message : String(fault.error)}`);
      return out;
    } catch (error) {
      this.host.failed(`coordinator failed: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
  }
}

/** refused — what a fenced process sends instead of a grant or receipt (as the durable adapter does). */
function refused(d: Delivery<ReplyTo>): Delivery<ReplyTo> {
  if (d.reply.kind !== 'grant' && d.reply.kind !== 'receipt') return d;
  const reply: Reply = { v: 1, kind: 'error', seq: d.reply.seq, code: 'not-owner', fault: 'coordinator', message: 'this coordinator no longer owns the pool; ask again', retryAfterMs: 50 };
  return { to: d.to, reply };
}
