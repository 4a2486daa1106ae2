/**
 * Coordinators: the coordinator processes of one run, and in durable mode
 * the store they share.
 *
 * - Memory mode: one process at a time. A restart kills it; `downUs` later
 *   a new one starts with the next epoch, an empty pool and a quiet period.
 * - Durable mode: `members` processes (sim-member.ts), each running the
 *   real ownership driver against the simulated store: they heartbeat,
 *   claim the units they are preferred for (the run's pool, the catch-all),
 *   renew, step down and hand over as the driver decides. A failover
 *   crashes the pool's owner (a new process, a new member, starts `downUs`
 *   later), or deposes it: its record lapses now and its store calls fail
 *   for `deposedUs`, so it learns it lost the pool only when the store
 *   answers again. A re-claim lapses the owner's record with a write out,
 *   its outcome held (sim-member.ts); the driver steps down and claims the
 *   pool again when its heartbeat finds out.
 * - Durable mode may have other pools beside the run's (configured ones and
 *   template pools the catch-all makes), asked for tokens by ghosts
 *   (ghosts.ts), so that each member owns several pools.
 * - A reload (shadow mode switched) reaches every live process at once,
 *   owner or not, and processes started later serve the new configuration.
 * - A request reaches, per queue group, one live process subscribed to a
 *   subject that matches (a NATS queue group), chosen at random; none at
 *   all: the agent hears "no responders" at once.
 */
import { CoordinatorCore, type CoordinatorConfig, type Pool } from '@tokenlease/coordinator/internal';
import type { Random } from '@tokenlease/shared/testing';
import { SimCoordinator } from './sim-coordinator.js';
import { SimMember, type MemberHost } from './sim-member.js';
import type { Fault, SimConfig } from './sim-config.js';
import { DURABLE_MEMBERS, POOL, SIM_OWNERSHIP_TTL_MS, type Event, type ReplyTo } from './sim-events.js';
import { SimStore } from './sim-store.js';
import { Ghosts, withGhostPools } from './ghosts.js';

/** ClusterHost — what the coordinators need from the simulation. */
export type ClusterHost = Omit<MemberHost, 'claimed'>;

type CoordinatorFault = Extract<Fault, { kind: 'restart-coordinator' | 'failover-coordinator' }>;
type ReclaimFault = Extract<Fault, { kind: 'reclaim-coordinator' }>;

export class Coordinators {
  private readonly store: SimStore | null;
  /** Memory mode: the process serving now, if any. */
  private memory: SimCoordinator | null = null;
  /** Durable mode: every member started. */
  private readonly members = new Map<number, SimMember>();
  private nextId = 0;
  private memoryEpoch = 0;
  /** Claims of the run's pool, and by whom. */
  private readonly claims: string[] = [];
  /** Claims by a member of the pool it had owned before. */
  reclaims = 0;
  /** Traffic on the other pools of a durable run; null without. */
  private readonly ghosts: Ghosts | null;

  constructor(
    private config: CoordinatorConfig,
    private readonly sim: SimConfig,
    private readonly host: ClusterHost,
    private readonly random: Random,
  ) {
    this.store = sim.durable === undefined ? null : new SimStore();
    const ghosts = sim.durable?.ghosts;
    this.ghosts = ghosts === undefined ? null : new Ghosts(ghosts, this.ghostHost(), random, sim.durationUs);
    this.config = this.withGhosts(config);
    const needsStore = sim.faults.find((f) => f.kind === 'failover-coordinator' || f.kind === 'reclaim-coordinator');
    if (this.store === null && needsStore !== undefined) throw new Error(`a ${needsStore.kind} fault needs durable mode`);
  }

  /** takeovers — claims of the pool after the first. */
  get takeovers(): number {
    return Math.max(0, this.claims.length - 1);
  }

  get storeWrites(): number {
    return this.store?.writes ?? 0;
  }

  get fencedWrites(): number {
    return this.store?.fencedWrites ?? 0;
  }

  /** lateOutcomes — outcomes of writes that landed after their ownership ended, a newer one of the same process holding the pool. */
  get lateOutcomes(): number {
    return [...this.members.values()].reduce((sum, m) => sum + m.lateOutcomes, 0);
  }

  /** start — (memory) a new process with a quiet period; (durable) the members of the run, and the ghosts' traffic. */
  start(nowUs: number): void {
    if (this.store === null) return this.restartMemory(nowUs);
    for (let i = this.sim.durable?.members ?? DURABLE_MEMBERS; i > 0; i -= 1) this.startMember(nowUs);
    this.ghosts?.start(nowUs);
  }

  private withGhosts(config: CoordinatorConfig): CoordinatorConfig {
    const ghosts = this.sim.durable?.ghosts;
    return ghosts === undefined ? config : withGhostPools(config, ghosts);
  }

  private ghostHost(): ConstructorParameters<typeof Ghosts>[1] {
    return {
      push: (atUs, event) => this.host.push(atUs, event),
      receive: (to, subject, bytes, nowUs) => void this.receive(to, subject, bytes, nowUs),
      violation: (message) => this.host.violation(message),
    };
  }

  private restartMemory(nowUs: number): void {
    // A second restart while one is under way: the newest start wins.
    this.memory?.crash();
    this.memoryEpoch += 1;
    const core = new CoordinatorCore<ReplyTo>(this.config, this.memoryEpoch, nowUs);
    this.memory = new SimCoordinator((this.nextId += 1), core, this.host);
    this.memory.scheduleTick(nowUs);
  }

  private startMember(nowUs: number): void {
    const spec = this.sim.durable as NonNullable<SimConfig['durable']>;
    const memberSpec = {
      store: this.store as SimStore,
      callUs: () => this.random.int(spec.writeUsMin, spec.writeUsMax),
      ownershipTtlMs: spec.ownershipTtlMs ?? SIM_OWNERSHIP_TTL_MS,
      ...(this.sim.broken === undefined ? {} : { broken: this.sim.broken }),
    };
    const host: MemberHost = {
      ...this.host,
      claimed: (member) => this.claimed(member),
      // Replies to ghosts go to the ghosts, not to the network of the run's agents.
      send: (deliveries, producedUs, epoch, perUs) => {
        const ghostly = deliveries.filter((d) => Ghosts.isGhost(d.to));
        if (ghostly.length > 0) this.ghosts?.granted(ghostly, producedUs);
        const rest = ghostly.length === 0 ? deliveries : deliveries.filter((d) => !Ghosts.isGhost(d.to));
        if (rest.length > 0) this.host.send(rest, producedUs, epoch, perUs);
      },
    };
    const id = (this.nextId += 1);
    this.members.set(id, new SimMember(id, this.config, host, memberSpec, nowUs));
  }

  private claimed(member: string): void {
    if (this.claims.includes(member)) this.reclaims += 1;
    this.claims.push(member);
  }

  /** down — a coordinator fault at `nowUs`: (memory) a restart; (durable) the pool's owner crashes or is deposed. */
  down(fault: CoordinatorFault, nowUs: number): void {
    if (this.store === null) {
      this.memory?.crash();
      this.host.push(nowUs + fault.downUs, { k: 'coordinator-up' });
      return;
    }
    const owner = this.owner();
    if (owner === null) return;
    const deposedUs = fault.kind === 'failover-coordinator' ? fault.deposedUs : undefined;
    if (deposedUs === undefined) {
      owner.crash(this.random.next() < 0.5);
      this.host.push(nowUs + fault.downUs, { k: 'coordinator-up' });
    } else {
      this.store.lapse(POOL, nowUs);
      owner.cut(nowUs, deposedUs);
    }
  }

  /** up — (memory) the restarted process; (durable) a new member in place of a crashed one. */
  up(nowUs: number): void {
    if (this.store === null) this.restartMemory(nowUs);
    else this.startMember(nowUs);
  }

  /** reload — every live process serves `config` from `nowUs` on, owner or not, and so does every process started later (a reload of them all). */
  reload(config: CoordinatorConfig, nowUs: number): void {
    this.config = this.withGhosts(config);
    config = this.config;
    this.memory?.reload(config, nowUs);
    for (const m of this.members.values()) m.reload(config, nowUs);
  }

  /** reclaim — a reclaim-coordinator fault at `nowUs`: the pool's owner, if any, is armed with it. */
  reclaim(fault: ReclaimFault, nowUs: number): void {
    this.owner()?.armReclaim(fault, nowUs);
  }

  /** receive — a request reaches one process per queue group whose subscription matches; false when none. */
  receive(to: ReplyTo, subject: string, bytes: Uint8Array, nowUs: number): boolean {
    if (this.sim.broken === 'instant-only-waiters') this.forgetContention();
    if (this.store === null) {
      if (this.memory === null || !this.memory.serving) return false;
      this.memory.receive(to, subject, bytes, nowUs);
      return true;
    }
    const groups = new Map<string, Array<{ member: SimMember; key: string }>>();
    for (const member of this.members.values()) {
      if (member.crashed) continue;
      for (const [key, sub] of member.subscriptions)
        if (subjectMatches(sub.subject, subject)) groups.set(sub.queueGroup, [...(groups.get(sub.queueGroup) ?? []), { member, key }]);
    }
    const picks = [...groups.values()].map((g) => g[this.random.int(0, g.length - 1)] as { member: SimMember; key: string });
    for (const { member, key } of picks) member.message(key, to, subject, bytes, nowUs);
    return picks.length > 0;
  }

  /**
   * forgetContention — (broken on purpose: `instant-only-waiters`) every
   * live process's pool forgets that a request waited within the last TTL,
   * before a request reaches it, so a renewal counts the pool contended only
   * while a request waits at its instant: the rule before holding fairness
   * was decided over a TTL. Nothing else of the pool changes.
   */
  private forgetContention(): void {
    const pools = [this.memory?.core.pool(POOL), ...[...this.members.values()].map((m) => m.driver.core.pool(POOL))];
    for (const pool of pools) if (pool !== undefined) pool.parts.contendedUntilUs = 0;
  }

  /** ownerPool — the pool as its owner (the live member owning it under the newest epoch) holds it, if any. */
  ownerPool(): Pool<ReplyTo> | undefined {
    if (this.store === null) return this.memory?.serving === true ? this.memory.core.pool(POOL) : undefined;
    return this.owner()?.driver.core.pool(POOL);
  }

  handle(e: Extract<Event, { k: 'coordinator-tick' | 'store-answer' | 'bus-done' | 'ghost' }>, nowUs: number): void {
    if (e.k === 'ghost') return this.ghosts?.request(e.index, nowUs);
    if (this.store === null) {
      if (e.k === 'coordinator-tick' && this.memory?.id === e.id) this.memory.tick(e.gen, nowUs);
      return;
    }
    const member = this.members.get(e.id);
    if (member === undefined) return;
    if (e.k === 'coordinator-tick') member.tick(e.gen, nowUs);
    else if (e.k === 'store-answer') member.landed(e.ticket, e.gen, nowUs);
    else member.busDone(e.ticket, nowUs);
  }

  private owner(): SimMember | null {
    let best: SimMember | null = null;
    for (const m of this.members.values()) {
      const epoch = m.ownedEpoch();
      if (epoch !== null && (best === null || epoch > (best.ownedEpoch() ?? 0))) best = m;
    }
    return best;
  }
}

/** subjectMatches — whether NATS subject `subject` matches subscription `pattern` (`*`: one token, `>`: the rest). */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i += 1) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}
