/**
 * SimCoordinator: one coordinator process in the simulator: the real
 * CoordinatorCore, its ticks and, in durable mode, the real write lanes
 * (coordinator/src/core/write-lane.ts), one per ownership, driven on the
 * virtual clock, with the simulated store behind them.
 *
 * - A crash loses the memory, the held requests, the unwritten changes and
 *   the unsent replies; a write in flight lands or not (the caller says).
 * - Stepping down answers the held requests `not-owner` (no write needed)
 *   and ends the ownership's lane, whose waiting batches are refused.
 * - A deposed process serves on until it steps down: the lane refuses what
 *   its fenced writes covered and everything after. A lane's request to
 *   step down is not acted on (the fault's schedule says when), but the
 *   store is asked whether it was due: asked of an ownership the store
 *   still names the owner, it is a violation (a spurious step-down).
 * - A process may claim the pool again after it stepped down (`claimed`):
 *   a new ownership, with a lane of its own bound to the new epoch and the
 *   pool adopted again. Writes of the old lane may still be out (a
 *   reclaim-coordinator fault holds one): each outcome lands on the lane
 *   that made it. Broken on purpose (`stale-lane-acts`), an outcome of an
 *   ended ownership lands on the lane of the one held now.
 * - Every grant a durable process sends must be backed by a write the store
 *   accepted (SimStore.backs): write before reply, as the store saw it; and
 *   must come from an ownership the process still holds: none leaves once
 *   its ownership ended (docs/design.md, write lanes and ownership).
 */
import {
  WriteLane,
  type Batch,
  type ChangeSource,
  type CoordinatorConfig,
  type CoordinatorCore,
  type Delivery,
  type LaneStep,
  type LaneWrite,
  type WriteOutcome,
} from '@tokenlease/coordinator';
import type { Fault } from './sim-config.js';
import { COORDINATOR_TICK_US_MAX, POOL, RECLAIM_ARMED_US, type Event, type ReplyTo } from './sim-events.js';
import type { SimStore } from './sim-store.js';

/** CoordinatorHost — what a coordinator process needs from the simulation. */
export interface CoordinatorHost {
  push(atUs: number, event: Event): void;
  /** send — puts replies a process of `epoch` produced at `producedUs` on the network now. */
  /** send — `perUs`: how many of its own µs the producing process counts per true µs (1 unless it drifts). */
  send(deliveries: readonly Delivery<ReplyTo>[], producedUs: number, epoch: number, perUs?: number): void;
  /** failed — the core threw: a broken invariant. */
  failed(message: string): void;
  /** violation — a check failed; the run goes on. */
  violation(message: string): void;
}

/** Durable — a durable process's store, how long a write takes, and what is broken on purpose. */
export interface Durable {
  readonly store: SimStore;
  writeUs(): number;
  /** Broken on purpose: replies leave before their write lands. */
  readonly replyBeforeWrite: boolean;
  /** Broken on purpose: the outcome of a write of an ended ownership lands on the lane of the one held now. */
  readonly staleLaneActs: boolean;
}

type ReclaimFault = Extract<Fault, { kind: 'reclaim-coordinator' }>;

/** Ownership — one claim of the pool by this process: its epoch and the write lane bound to it. */
interface Ownership {
  readonly epoch: number;
  readonly lane: WriteLane<ReplyTo>;
}

/** Write — a write in flight: what, whose, and what becomes of it when it lands. */
interface Write extends LaneWrite {
  readonly owner: Ownership;
  /** Its landing as last scheduled (a held write's first one is stale). */
  gen: number;
  /** 'store': the store decides as it lands; else decided already (a held write). */
  fate: 'store' | WriteOutcome;
  lands: boolean;
}

export class SimCoordinator {
  /** Subscribed to the pool: gets requests and ticks. */
  serving = true;
  crashed = false;
  /** Its ownership lapsed: it serves on until it steps down, its writes refused. */
  deposed = false;
  /** Outcomes of writes that landed after their ownership ended, a newer one holding the pool. */
  lateOutcomes = 0;
  private tickGen = 0;
  /** The ownership held now (durable mode; null between a step-down and a claim). */
  private current: Ownership | null;
  private readonly writes = new Map<number, Write>();
  private writesMade = 0;
  /** A reclaim fault waiting for a write of the current ownership to start, until `untilUs`. */
  private armed: { readonly fault: ReclaimFault; readonly untilUs: number } | null = null;

  constructor(
    readonly id: number,
    readonly core: CoordinatorCore<ReplyTo>,
    private readonly host: CoordinatorHost,
    private readonly durable: Durable | null,
    epoch: number,
  ) {
    this.current = durable === null ? null : this.ownership(epoch);
  }

  /** epoch — the epoch of the ownership held now (memory mode: the core's), or null. */
  get epoch(): number | null {
    return this.durable === null ? this.core.epoch : (this.current?.epoch ?? null);
  }

  receive(to: ReplyTo, subject: string, bytes: Uint8Array, nowUs: number): void {
    this.submit(
      this.guard(() => this.core.receive(subject, bytes, to, nowUs)),
      nowUs,
    );
    this.scheduleTick(nowUs);
  }

  /**
   * reload — the core serves `config` from `nowUs` on (a reload reaches a
   * live process whether or not it owns the pool now: a later claim serves
   * the new configuration); replies of requests it held go out through the lane.
   */
  reload(config: CoordinatorConfig, nowUs: number): void {
    if (this.crashed) return;
    this.submit(
      this.guard(() => {
        const out: Delivery<ReplyTo>[] = [];
        this.core.reconfigure(config, nowUs, (_pool, held) => out.push(...held));
        return out;
      }),
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

  /** crash — the process dies; a write in flight still lands if `writeLands` (a held one as it was to). */
  crash(writeLands: boolean): void {
    this.serving = false;
    this.crashed = true;
    this.current?.lane.drop();
    for (const write of this.writes.values()) if (write.fate === 'store') write.lands = writeLands;
  }

  /** stepDown — stops serving the pool under `epoch` (nothing if it holds another ownership, or none): held requests and the lane's waiting batches are told `not-owner`. */
  stepDown(epoch: number, nowUs: number): void {
    const owner = this.current;
    if (!this.serving || owner === null || owner.epoch !== epoch) return;
    this.serving = false;
    this.current = null;
    this.armed = null;
    this.host.send(this.core.release(POOL), nowUs, owner.epoch);
    this.perform(owner, owner.lane.end(), nowUs);
  }

  /** claimed — the pool, adopted into the core under `epoch`, is this process's again: a new ownership with a lane of its own. */
  claimed(epoch: number, nowUs: number): void {
    this.current = this.ownership(epoch);
    this.serving = true;
    this.deposed = false;
    this.scheduleTick(nowUs);
  }

  /** armReclaim — a reclaim-coordinator fault at `nowUs`: it strikes now if a write is in flight, else at the start of the next one. */
  armReclaim(fault: ReclaimFault, nowUs: number): void {
    const inFlight = [...this.writes].find(([, w]) => w.owner === this.current && this.current !== null);
    if (inFlight !== undefined) this.reclaim(fault, inFlight[0], inFlight[1], nowUs);
    else this.armed = { fault, untilUs: nowUs + RECLAIM_ARMED_US };
  }

  /** landed — write `id` ends now (if `gen` is its landing): the store takes or fences it unless it was held, and its lane is told. */
  landed(id: number, gen: number, nowUs: number): void {
    const write = this.writes.get(id);
    if (write === undefined || write.gen !== gen || this.durable === null) return;
    this.writes.delete(id);
    const accepted = write.fate === 'store' && write.lands && this.durable.store.write(write.epoch, write.changes, nowUs);
    const outcome = write.fate !== 'store' ? write.fate : accepted ? 'written' : 'fenced';
    if (this.crashed) return;
    const ended = this.current !== null && write.owner !== this.current;
    if (ended) this.lateOutcomes += 1;
    const owner = ended && this.durable.staleLaneActs ? (this.current as Ownership) : write.owner;
    this.perform(owner, owner.lane.landed(outcome), nowUs);
  }

  /**
   * reclaim — the fault strikes at `nowUs` with write `id` in flight: the
   * ownership lapses, the write's outcome is held (decided now if it reached
   * the store before the lapse, or never will), and the step-down and the
   * claim that follow are scheduled.
   */
  private reclaim(fault: ReclaimFault, id: number, write: Write, nowUs: number): void {
    const store = (this.durable as Durable).store;
    this.armed = null;
    if (fault.outcome === 'written') write.fate = store.write(write.epoch, write.changes, nowUs) ? 'written' : 'fenced';
    if (fault.outcome === 'unavailable') write.fate = 'unavailable';
    store.lapse(nowUs);
    this.deposed = true;
    write.gen += 1;
    this.host.push(nowUs + fault.lateUs, { k: 'write-landed', id: this.id, write: id, gen: write.gen });
    this.host.push(nowUs + fault.stepDownUs, { k: 'step-down', id: this.id, epoch: write.epoch });
    this.host.push(nowUs + fault.reclaimUs, { k: 'coordinator-reclaim', id: this.id });
  }

  private submit(deliveries: Delivery<ReplyTo>[], nowUs: number): void {
    if (deliveries.length === 0) return;
    if (this.durable === null) return this.host.send(deliveries, nowUs, this.core.epoch);
    const owner = this.current;
    if (owner === null) return this.host.failed(`process ${this.id} produced replies while it owned nothing`);
    // Broken on purpose, left to the envelope to catch (the store-backed check would flag every such grant first).
    if (this.durable.replyBeforeWrite) this.host.send(deliveries.splice(0), nowUs, owner.epoch);
    this.perform(owner, owner.lane.submit({ deliveries, producedUs: nowUs }), nowUs);
  }

  /** perform — does what the lane of `owner` says: sends, checks a step-down request against the store, starts the write. */
  private perform(owner: Ownership, step: LaneStep<ReplyTo>, nowUs: number): void {
    for (const batch of step.send) this.sendBatch(owner, batch);
    if (step.stepDown && this.durable?.store.owns(owner.epoch, nowUs) === true)
      this.host.violation(`process ${this.id} was asked to step down epoch ${owner.epoch}, which the store still names the owner`);
    if (step.write === null || this.durable === null) return;
    const id = (this.writesMade += 1);
    const write: Write = { ...step.write, owner, gen: 0, fate: 'store', lands: true };
    this.writes.set(id, write);
    this.host.push(nowUs + this.durable.writeUs(), { k: 'write-landed', id: this.id, write: id, gen: 0 });
    const armed = this.armed;
    if (armed !== null && owner === this.current)
      if (nowUs <= armed.untilUs) this.reclaim(armed.fault, id, write, nowUs);
      else this.armed = null;
  }

  /** sendBatch — sends what the lane of `owner` released; each grant must be backed by the store, and its ownership still held. */
  private sendBatch(owner: Ownership, batch: Batch<ReplyTo>): void {
    const store = this.durable?.store;
    for (const { reply } of batch.deliveries) {
      if (store === undefined || reply.kind !== 'grant') continue;
      const grant = `grant of lease ${reply.leaseId} (seq ${reply.seq}, epoch ${reply.epoch}, ${reply.tokensGranted} tokens)`;
      if (!store.backs(reply)) this.host.violation(`${grant} sent by epoch ${owner.epoch} with no write of it the store accepted`);
      if (owner.lane.ended) this.host.violation(`${grant} sent by epoch ${owner.epoch} after that ownership ended`);
    }
    this.host.send(batch.deliveries, batch.producedUs, owner.epoch);
  }

  private ownership(epoch: number): Ownership {
    return { epoch, lane: new WriteLane<ReplyTo>(epoch, this.source()) };
  }

  /** source — the changes of the pool object the core holds now (an ownership's lane is bound to it). */
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
