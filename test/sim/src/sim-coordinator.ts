/**
 * SimCoordinator: one coordinator process in the simulator: the real
 * CoordinatorCore, its ticks and, in durable mode, the real write lane
 * (coordinator/src/core/write-lane.ts) driven on the virtual clock, with the
 * simulated store behind it.
 *
 * - A crash loses the memory, the held requests, the unwritten changes and
 *   the unsent replies; a write in flight lands or not (the caller says).
 * - Stepping down answers the held requests `not-owner` (no write needed).
 * - A deposed process serves on until it steps down: the lane refuses what
 *   its fenced writes covered and everything after.
 */
import {
  WriteLane,
  type Batch,
  type ChangeSource,
  type CoordinatorCore,
  type Delivery,
  type LaneStep,
  type LaneWrite,
} from '@tokenlease/coordinator';
import { COORDINATOR_TICK_US_MAX, POOL, type Event, type ReplyTo } from './sim-events.js';
import type { SimStore } from './sim-store.js';

/** CoordinatorHost — what a coordinator process needs from the simulation. */
export interface CoordinatorHost {
  push(atUs: number, event: Event): void;
  /** send — puts replies a process of `epoch` produced at `producedUs` on the network now. */
  /** send — `perUs`: how many of its own µs the producing process counts per true µs (1 unless it drifts). */
  send(deliveries: readonly Delivery<ReplyTo>[], producedUs: number, epoch: number, perUs?: number): void;
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

interface Write extends LaneWrite {
  lands: boolean;
}

export class SimCoordinator {
  /** Subscribed to the pool: gets requests and ticks. */
  serving = true;
  crashed = false;
  /** Its ownership lapsed: it serves on until it steps down, its writes refused. */
  deposed = false;
  private tickGen = 0;
  private readonly writer: WriteLane<ReplyTo>;
  private writing: Write | null = null;

  constructor(
    readonly id: number,
    readonly core: CoordinatorCore<ReplyTo>,
    private readonly host: CoordinatorHost,
    private readonly lane: Lane | null,
  ) {
    this.writer = lane === null ? WriteLane.unowned() : new WriteLane(lane.epoch, this.source());
  }

  receive(to: ReplyTo, subject: string, bytes: Uint8Array, nowUs: number): void {
    this.submit(
      this.guard(() => this.core.receive(subject, bytes, to, nowUs)),
      nowUs,
    );
    this.scheduleTick(nowUs);
  }

  /** tick — the core's tick, if `gen` is still the scheduled one. */
  tick(gen: number, nowUs: number): void {
    if (gen !== this.tickGen || !this.serving) return;
    this.submit(
      this.guard(() => this.core.tick(nowUs)),
      nowUs,
    );
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
    this.writer.drop();
    if (this.writing !== null) this.writing.lands = writeLands;
  }

  /** stepDown — stops serving the pool; held requests are told `not-owner` at once. */
  stepDown(nowUs: number): void {
    if (!this.serving) return;
    this.serving = false;
    this.host.send(this.core.release(POOL), nowUs, this.core.epoch);
    if (this.lane !== null) this.perform(this.writer.end(), nowUs);
  }

  /** landed — the write in flight reaches the store now: it lands (or is fenced) and its replies leave (or are refused). */
  landed(nowUs: number): void {
    const write = this.writing;
    const lane = this.lane;
    if (write === null || lane === null) return;
    this.writing = null;
    const accepted = write.lands && lane.store.write(write.epoch, write.changes, nowUs);
    if (this.crashed) return;
    // A fenced process serves on until its own step-down (the fault's schedule), so the lane's step-down is not acted on.
    this.perform(this.writer.landed(accepted ? 'written' : 'fenced'), nowUs);
  }

  private submit(deliveries: Delivery<ReplyTo>[], nowUs: number): void {
    if (deliveries.length === 0) return;
    if (this.lane === null) return this.host.send(deliveries, nowUs, this.core.epoch);
    if (this.lane.replyBeforeWrite) this.host.send(deliveries.splice(0), nowUs, this.core.epoch);
    this.perform(this.writer.submit({ deliveries, producedUs: nowUs }), nowUs);
  }

  private perform(step: LaneStep<ReplyTo>, nowUs: number): void {
    for (const batch of step.send) this.sendBatch(batch);
    if (step.write === null || this.lane === null) return;
    this.writing = { ...step.write, lands: true };
    this.host.push(nowUs + this.lane.writeUs(), { k: 'write-landed', id: this.id });
  }

  private sendBatch(batch: Batch<ReplyTo>): void {
    this.host.send(batch.deliveries, batch.producedUs, this.core.epoch);
  }

  private source(): ChangeSource {
    const pool = this.core.pool(POOL);
    return { takeChanges: () => pool?.takeChanges() ?? null, requeueChanges: (changes) => pool?.requeueChanges(changes) };
  }

  private guard(f: () => Delivery<ReplyTo>[]): Delivery<ReplyTo>[] {
    try {
      const out = f();
      // The core contains a pool's fault and serves on; in a simulation any fault is a bug.
      const fault = this.core.takeFaults()[0];
      if (fault !== undefined)
        this.host.failed(`pool ${fault.pool} failed: ${fault.error instanceof Error ? fault.error.message : String(fault.error)}`);
      return out;
    } catch (error) {
      this.host.failed(`coordinator failed: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
  }
}
