/**
 * Coordinators: the coordinator processes of one run, and in durable mode
 * the store they share.
 *
 * - Memory mode: one process at a time. A restart kills it; `downUs` later
 *   a new one starts with the next epoch, an empty pool and a quiet period.
 * - Durable mode: the first owner claims the pool from the (empty) store.
 *   A failover crashes the owner, or deposes it: its ownership lapses, every
 *   write it makes from then on is refused, and it runs on for `deposedUs`
 *   before it steps down. `downUs` after the fault a standby claims the
 *   pool, with the next epoch and whatever the store holds.
 * - Durable mode, a re-claim: the owner's ownership lapses with a write out
 *   (held, its outcome late); it steps down and claims the pool again
 *   itself, with the next epoch and what the store holds, unless another
 *   process owns it by then (sim-coordinator.ts).
 * - A reload (shadow mode switched) reaches every live process at once,
 *   owner or not, and processes started later serve the new configuration.
 * - A request reaches one serving process, chosen at random (a NATS queue
 *   group), or none: then the agent hears "no responders" at once.
 */
import { CoordinatorCore, type CoordinatorConfig, type PersistedPool, type Pool } from '@tokenlease/coordinator';
import type { Random } from '@tokenlease/shared/testing';
import { SimCoordinator, type CoordinatorHost, type Durable } from './sim-coordinator.js';
import type { Fault, SimConfig } from './sim-config.js';
import { POOL, type Event, type ReplyTo } from './sim-events.js';
import { SimStore } from './sim-store.js';

/** ClusterHost — a CoordinatorHost that also hears of every takeover from the store. */
export interface ClusterHost extends CoordinatorHost {
  /** adopted — `pool` was taken over at `takeoverUs` with `state` from the store. */
  adopted(pool: Pool<ReplyTo>, takeoverUs: number, state: PersistedPool | null): void;
}

type CoordinatorFault = Extract<Fault, { kind: 'restart-coordinator' | 'failover-coordinator' }>;
type ReclaimFault = Extract<Fault, { kind: 'reclaim-coordinator' }>;

export class Coordinators {
  private readonly store: SimStore | null;
  /** Every process that may still act: serving, or with a write in flight. */
  private readonly processes = new Map<number, SimCoordinator>();
  private nextId = 0;
  private memoryEpoch = 0;
  private claims = 0;
  /** Claims by a process of the pool it had given up. */
  reclaims = 0;

  constructor(
    private config: CoordinatorConfig,
    private readonly sim: SimConfig,
    private readonly host: ClusterHost,
    private readonly random: Random,
  ) {
    this.store = sim.durable === undefined ? null : new SimStore();
    const needsStore = sim.faults.find((f) => f.kind === 'failover-coordinator' || f.kind === 'reclaim-coordinator');
    if (this.store === null && needsStore !== undefined) throw new Error(`a ${needsStore.kind} fault needs durable mode`);
  }

  /** takeovers — claims of the pool after the first. */
  get takeovers(): number {
    return Math.max(0, this.claims - 1);
  }

  get storeWrites(): number {
    return this.store?.writes ?? 0;
  }

  get fencedWrites(): number {
    return this.store?.fencedWrites ?? 0;
  }

  /** lateOutcomes — outcomes of writes that landed after their ownership ended, a newer one of the same process holding the pool. */
  get lateOutcomes(): number {
    return [...this.processes.values()].reduce((sum, p) => sum + p.lateOutcomes, 0);
  }

  /** start — a new process: (memory) with a quiet period, or (durable) owning the pool as the store has it. */
  start(nowUs: number): void {
    const id = (this.nextId += 1);
    const owner = this.serving().find((p) => !p.deposed);
    if (this.store === null) {
      // A second restart while one is under way: the newest start wins.
      owner?.crash(false);
      this.memoryEpoch += 1;
      const core = new CoordinatorCore<ReplyTo>(this.config, this.memoryEpoch, nowUs);
      this.add(new SimCoordinator(id, core, this.host, null, this.memoryEpoch), nowUs);
      return;
    }
    // Someone owns the pool already (failovers overlapped): this claim fails.
    if (owner !== undefined) return;
    const core = new CoordinatorCore<ReplyTo>(this.config, this.store.lastEpoch + 1, nowUs, true);
    const epoch = this.claimInto(core, nowUs);
    this.add(new SimCoordinator(id, core, this.host, this.durable(), epoch), nowUs);
  }

  /** claimInto — the next epoch claimed from the store, and the pool adopted into `core` under it as the store holds it. */
  private claimInto(core: CoordinatorCore<ReplyTo>, nowUs: number): number {
    const { epoch, state } = (this.store as SimStore).claim();
    const kept = this.sim.broken === 'forget-kept-leases' && state !== null ? { levelTokens: state.levelTokens, leases: [] } : state;
    if (core.adopt(POOL, epoch, nowUs, kept) !== 'adopted') throw new Error(`could not adopt ${POOL}`);
    this.claims += 1;
    this.host.adopted(core.pool(POOL) as Pool<ReplyTo>, nowUs, kept);
    return epoch;
  }

  private durable(): Durable {
    const spec = this.sim.durable as NonNullable<SimConfig['durable']>;
    return {
      store: this.store as SimStore,
      writeUs: () => this.random.int(spec.writeUsMin, spec.writeUsMax),
      replyBeforeWrite: this.sim.broken === 'reply-before-write',
      staleLaneActs: this.sim.broken === 'stale-lane-acts',
    };
  }

  private add(process: SimCoordinator, nowUs: number): void {
    this.processes.set(process.id, process);
    process.scheduleTick(nowUs);
  }

  /** down — a coordinator fault at `nowUs`: the owner crashes or is deposed; a successor starts `downUs` later. */
  down(fault: CoordinatorFault, nowUs: number): void {
    const deposedUs = fault.kind === 'failover-coordinator' ? fault.deposedUs : undefined;
    for (const process of this.serving()) {
      if (deposedUs === undefined) process.crash(this.random.next() < 0.5);
      else {
        process.deposed = true;
        this.host.push(nowUs + deposedUs, { k: 'step-down', id: process.id, epoch: process.epoch ?? 0 });
      }
    }
    if (deposedUs !== undefined) this.store?.lapse(nowUs);
    this.host.push(nowUs + fault.downUs, { k: 'coordinator-up' });
  }

  /** reload — every live process serves `config` from `nowUs` on, owner or not, and so does every process started later (a reload of them all). */
  reload(config: CoordinatorConfig, nowUs: number): void {
    this.config = config;
    for (const process of this.processes.values()) process.reload(config, nowUs);
  }

  /** reclaim — a reclaim-coordinator fault at `nowUs`: the owner (serving, not deposed), if any, is armed with it. */
  reclaim(fault: ReclaimFault, nowUs: number): void {
    this.serving()
      .find((p) => !p.deposed)
      ?.armReclaim(fault, nowUs);
  }

  /** reclaimBy — `process`, which gave the pool up, claims it again, unless it died or another process owns the pool. */
  private reclaimBy(process: SimCoordinator, nowUs: number): void {
    if (process.crashed || process.serving || this.serving().some((p) => !p.deposed)) return;
    process.claimed(this.claimInto(process.core, nowUs), nowUs);
    this.reclaims += 1;
  }

  /** route — the process a request reaching the pool's subject now goes to, or null when none serves. */
  route(): SimCoordinator | null {
    const serving = this.serving();
    if (serving.length <= 1) return serving[0] ?? null;
    return serving[this.random.int(0, serving.length - 1)] ?? null;
  }

  /** ownerPool — the pool as its owner (a serving process not deposed) holds it, if any. */
  ownerPool(): Pool<ReplyTo> | undefined {
    return this.serving()
      .find((p) => !p.deposed)
      ?.core.pool(POOL);
  }

  handle(e: Extract<Event, { k: 'coordinator-tick' | 'write-landed' | 'step-down' | 'coordinator-reclaim' }>, nowUs: number): void {
    const process = this.processes.get(e.id);
    if (process === undefined) return;
    if (e.k === 'coordinator-tick') process.tick(e.gen, nowUs);
    else if (e.k === 'write-landed') process.landed(e.write, e.gen, nowUs);
    else if (e.k === 'step-down') process.stepDown(e.epoch, nowUs);
    else this.reclaimBy(process, nowUs);
  }

  private serving(): SimCoordinator[] {
    return [...this.processes.values()].filter((p) => p.serving);
  }
}
