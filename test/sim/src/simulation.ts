/**
 * The simulator: the real CoordinatorCore and the agents' real drivers
 * (AgentDriver, each running its LeaseKeeper: when to tick, send, retry,
 * return and close is theirs; this file only carries their commands out)
 * on one virtual clock, connected by a modelled network, driven by a workload and
 * a fault plan, all from one seed. Same seed, same run, event for event.
 * The coordinator keeps its pool in memory, or (durable mode) several
 * coordinators run the real ownership driver over a modelled store that
 * they write before they reply: they fail over, are deposed, or give the
 * pool up and claim it again with a write still out (coordinators.ts). In
 * durable mode every grant sent must be backed by a write the store
 * accepted, no ownership may step down while the store names it the owner,
 * and only the preferred member claims a configured pool (sim-member.ts).
 *
 * After every admission it checks the envelope B + A + r·T over every
 * window (exact; A is the pool's allowance, 0 unless set), for a window
 * pool also that no window of W holds more than N (which implies the
 * envelope with B = N, r = N/W),
 * that the agent spends only while the coordinator still counts its lease
 * (grant time + TTL, on the coordinator's side; after a takeover, each kept
 * lease is counted, and checked to be, live for a full TTL from it), and
 * that no balance is negative; after every action of an agent's keeper,
 * that a rate lease holds no more than the coordinator counts for it. It
 * reports what the sweep and the tests need.
 * The pool may lease chunks or rates (SimPool.leaseMode); the checks are the
 * same: a rate lease's expiry follows the same rules as a chunk lease's.
 * Requests reach the agent as through the real Limiter: `tryTake` asks the
 * slot; `take` goes to the agent's real TakeQueue, served by the driver
 * after every action of its keeper and polled at the queue's next
 * deadline, on the agent's clock.
 */
import type { CoordinatorConfig, Delivery, PersistedPool, Pool } from '@tokenlease/coordinator/internal';
import { encodeMessage, type Reply } from '@tokenlease/shared';
import { InFlightLog, seededRandom, type Random } from '@tokenlease/shared/testing';
import { EnvelopeWatch, WindowWatch } from './checks.js';
import { Coordinators, type ClusterHost } from './coordinators.js';
import { EventQueue } from './event-queue.js';
import { Network } from './network.js';
import { coordinatorConfigOf, isRelayFault, servedConfigOf, windowOf, type SimConfig, type SimResult } from './sim-config.js';
import { withIdleAgent } from './workload.js';
import { LeaseLaw } from './lease-law.js';
import { Relays, relayPrefix } from './relays.js';
import { relayPartitionsOf, rootPoolOf } from './tree.js';
import { SimAgent } from './sim-agent.js';
import { makeWorkload, type Arrival, type Workload } from './workload.js';
import { SimLimiter } from './sim-limiter.js';
import { SimMetrics } from './sim-metrics.js';
import { FairShareWatch, fairShareApplies, fairShareWindow } from './fair-share.js';
import { Hostiles } from './hostile.js';
import { AUDIT_EVERY_US, CLOSE_PHASE_US, COORDINATOR_TICK_US_MAX, POOL, PREFIX, type Event, type ReplyTo } from './sim-events.js';
import type { AgentCommand } from '@tokenlease/agent/internal';
import type { Admission } from '@tokenlease/shared/testing';

/** The workload draws from its own stream: the run's seed with these bits flipped, so it is the same whatever else the seed drives. */
const WORKLOAD_SEED_SALT = 0x5eed;
/** A concurrency pool's service times likewise. */
const SERVICE_SEED_SALT = 0x5e41ce;

/** simWorkload — the arrivals a run of `config` sees (the same for every run with its seed and workload, or its replay). */
export function simWorkload(config: SimConfig): Workload {
  if (config.replay !== undefined) return config.replay;
  const refillPerSecond = (config.pool.refill.tokens * 1000) / config.pool.refill.periodMs;
  const workload = makeWorkload(
    config.workload,
    config.agents,
    refillPerSecond,
    config.durationUs,
    seededRandom(config.seed ^ WORKLOAD_SEED_SALT),
  );
  const idle = config.shadow?.idleAgent;
  return idle === undefined ? workload : withIdleAgent(workload, idle);
}

export function runSimulation(config: SimConfig): SimResult {
  return new Simulation(config).run();
}

class Simulation {
  private readonly queue = new EventQueue<Event>();
  private readonly random: Random;
  private readonly network: Network;
  private readonly workload: Workload;
  private readonly coordinatorConfig: CoordinatorConfig;
  private readonly envelope: EnvelopeWatch;
  /** A window pool's own check, at most N in every window of W; null for a bucket pool. */
  private readonly windows: WindowWatch | null;
  /** A concurrency pool's own check, at most N requests in flight at any instant (judged at the end); null otherwise. */
  private readonly inFlight: InFlightLog | null;
  /** Draws the service times of a concurrency pool's requests, from a stream of its own. */
  private readonly service: Random;
  private readonly admissions: Admission[] = [];
  private readonly warmupUs: number;
  private readonly endUs: number;
  private now = 0;
  private readonly coordinators: Coordinators;
  /** A tree's relays; null for a flat fleet. */
  private readonly relays: Relays | null;
  private readonly agents = new Map<string, SimAgent>();
  private readonly slots: Array<SimAgent | null>;
  private readonly restarts: number[];
  private readonly law = new LeaseLaw();
  private readonly countedReplies = new Set<string>();
  private stopped = false;
  private events = 0;
  private readonly m: SimMetrics;
  private readonly limiter: SimLimiter;
  /** Crashed agents, when they died and by when their lease must be gone, for the reclaim audit. */
  private readonly deaths = new Map<string, { slot: number; diedUs: number; deadlineUs: number }>();
  private readonly reclaimDeadlineUs: number;
  /** From when an admission beyond leases (shadow mode's) is judged: one TTL after the last switch back; Infinity while in shadow mode. */
  private shadowJudgedFromUs = 0;
  /** When the pool last switched back to enforcing; null before any switch, or while in shadow mode. */
  private shadowOffUs: number | null = null;
  /** The run's hostile clients; null without. */
  private readonly hostiles: Hostiles | null;
  /** Each honest agent's share once the faults settled; null where the product promises none (fair-share.ts). */
  private readonly fairShares: FairShareWatch | null;

  constructor(private readonly config: SimConfig) {
    this.random = seededRandom(config.seed);
    const p = config.pool;
    this.coordinatorConfig = coordinatorConfigOf(rootPoolOf(config), POOL);
    // A concurrency pool holds every slot back until its quiet period and one hold bound are over: its fill is that bound.
    const fillUs =
      p.concurrency !== undefined ? p.concurrency.maxHoldMs * 1000 : Math.ceil((p.capacity * p.refill.periodMs * 1000) / p.refill.tokens);
    this.warmupUs = this.coordinatorConfig.quietPeriodMs * 1000 + fillUs + 200_000;
    this.endUs = this.warmupUs + config.durationUs;
    this.workload = simWorkload(config);
    const partitions = [...config.partitions, ...relayPartitionsOf(config)];
    this.network = new Network(
      config.network,
      partitions.map((x) => ({ ...x, fromUs: x.fromUs + this.warmupUs, toUs: x.toUs + this.warmupUs })),
      this.random,
    );
    this.envelope = new EnvelopeWatch(p.capacity + (p.allowance ?? 0), p.refill);
    const window = windowOf(p);
    this.windows = window === null ? null : new WindowWatch(window.limitTokens, window.windowUs);
    this.inFlight = p.concurrency === undefined ? null : new InFlightLog(p.capacity, p.concurrency.maxHoldMs * 1000);
    this.service = seededRandom(config.seed ^ SERVICE_SEED_SALT);
    this.slots = Array.from({ length: config.agents }, () => null);
    this.restarts = Array.from({ length: config.agents }, () => 0);
    this.m = new SimMetrics(config.agents);
    const limiterHost = { now: () => this.now, push: (atUs: number, event: Event) => this.queue.push(atUs, event) };
    const admitted = (agent: SimAgent, costs: readonly number[], shadowTokens: number): void => this.admitted(agent, costs, shadowTokens);
    const wake = (agent: SimAgent): void => this.carry(agent, agent.driver.wake(agent.pool));
    const held = (agent: SimAgent, handle: number, counted: boolean): void => this.held(agent, handle, counted);
    this.limiter = new SimLimiter({ ...limiterHost, admitted, wake, held, concurrency: this.inFlight !== null }, this.m);
    if (
      config.shadow !== undefined &&
      (config.tree !== undefined || config.broken === 'window-early-release' || config.broken === 'rate-over-refill')
    )
      throw new Error('shadow switches need a flat fleet and a coordinator told the pool the checks judge');
    // A dead agent's lease must be gone one TTL after its last grant, plus
    // the longest hold, the coordinator's tick slack and a reply's flight.
    const holdMsMax = this.coordinatorConfig.pools[0]!.maxHoldMs;
    const flightUs = 4 * config.network.latencyUs + 10_000;
    // A relay whose clock runs slow counts its agents' leases that much longer.
    const ttlMs = Math.max(p.leaseTtlMs, config.tree?.relayLeaseTtlMs ?? 0) / (1 + Math.min(0, ...(config.tree?.relayDrift ?? [])));
    this.reclaimDeadlineUs = config.reclaimDeadlineUs ?? Math.ceil((ttlMs + holdMsMax) * 1000) + COORDINATOR_TICK_US_MAX + flightUs;
    // Broken on purpose, the coordinator may be told other limits than the ones the checks judge.
    const served = servedConfigOf(config, POOL) ?? this.coordinatorConfig;
    this.coordinators = new Coordinators(served, config, this.coordinatorHost(), seededRandom(config.seed ^ 0x570e));
    this.relays = config.tree === undefined ? null : new Relays(config.tree, p, this.relaysHost(), config.broken);
    if (config.hostile !== undefined && config.tree !== undefined) throw new Error('hostile clients need a flat fleet');
    const limits = { maxLeaseTokens: p.maxLeaseTokens, maxHoldMs: holdMsMax };
    this.hostiles = config.hostile === undefined ? null : new Hostiles(config.hostile, limits, this.hostileHost(), this.endUs);
    this.fairShares = this.fairShareWatch();
  }

  private hostileHost(): ConstructorParameters<typeof Hostiles>[2] {
    return {
      push: (atUs, event) => this.queue.push(atUs, event),
      send: (to, subject, bytes) => {
        for (const at of this.network.arrivals(to.slot, this.now)) this.queue.push(at, { k: 'to-coordinator', to, subject, bytes });
      },
      waiting: () => this.coordinators.ownerPool()?.snapshot().waiting ?? 0,
    };
  }

  /** fairShareWatch — the honest agents' fair shares, judged once the faults settled, where the product promises them. */
  private fairShareWatch(): FairShareWatch | null {
    const window = fairShareWindow(this.config);
    if (window === null || !fairShareApplies(this.config)) return null;
    const p = this.config.pool;
    const weights = Array.from({ length: this.config.agents }, (_, slot) => {
      const agentClass = this.config.agentClasses?.[slot] ?? null;
      return agentClass === null ? 1 : (p.classWeights?.[agentClass] ?? 1);
    });
    const refillPerSecond = (p.refill.tokens * 1000) / p.refill.periodMs;
    return new FairShareWatch(window, refillPerSecond, weights, p.maxLeaseTokens);
  }

  private relaysHost(): ConstructorParameters<typeof Relays>[2] {
    return {
      ...this.coordinatorHost(),
      arrivals: (slot, nowUs) => this.network.arrivals(slot, nowUs),
      // A paused relay reclaimed nothing: its crashed agents' deadlines count from its resumption.
      resumed: (index) => {
        for (const d of this.deaths.values())
          if (this.relays?.relayOf(d.slot) === index) d.deadlineUs = Math.max(d.deadlineUs, this.now + this.reclaimDeadlineUs);
      },
    };
  }

  private coordinatorHost(): ClusterHost {
    return {
      push: (atUs, event) => this.queue.push(atUs, event),
      send: (deliveries, producedUs, epoch, perUs) => this.deliver(deliveries, producedUs, epoch, perUs),
      failed: (message) => {
        this.violation(message);
        this.stopped = true;
      },
      violation: (message) => this.violation(message),
      adopted: (pool, takeoverUs, state) => this.adopted(pool, takeoverUs, state),
    };
  }

  run(): SimResult {
    this.coordinators.start(this.now);
    this.relays?.start(this.now);
    for (const span of this.workload.presence) {
      const { agent: slot, incarnation } = span;
      this.queue.push(span.fromUs === 0 ? 0 : this.warmupUs + span.fromUs, { k: 'agent-start', slot, incarnation });
      if (span.toUs < this.config.durationUs) {
        this.queue.push(this.warmupUs + span.toUs, { k: 'agent-stop', slot, incarnation, crash: span.crashes });
      }
    }
    for (const arrival of this.workload.arrivals) this.queue.push(this.warmupUs + arrival.tUs, { k: 'arrival', arrival });
    this.config.faults.forEach((fault, index) => this.queue.push(this.warmupUs + fault.atUs, { k: 'fault', index }));
    this.config.shadow?.switchesUs.forEach((atUs, index) => this.queue.push(this.warmupUs + atUs, { k: 'shadow-switch', index }));
    this.queue.push(AUDIT_EVERY_US, { k: 'audit' });
    this.hostiles?.start(this.now);
    this.drain(this.endUs);
    for (const agent of this.agents.values()) {
      if (agent.alive && !agent.paused(this.now)) this.carry(agent, agent.driver.close(agent.localUs(this.now)));
    }
    this.drain(this.endUs + CLOSE_PHASE_US);
    return this.result();
  }

  private drain(untilUs: number): void {
    while (!this.stopped && this.queue.peekTimeUs() <= untilUs) {
      const next = this.queue.pop();
      if (next === undefined) break;
      this.now = next.timeUs;
      this.events += 1;
      this.handle(next.event);
    }
    this.now = Math.max(this.now, untilUs);
  }

  private handle(e: Event): void {
    switch (e.k) {
      case 'agent-start':
        return this.startAgent(e.slot, e.incarnation);
      case 'agent-stop':
        return this.stopAgent(e.slot, e.incarnation, e.crash);
      case 'agent-tick':
        return this.withAgent(e.id, (a) => (e.gen === a.tickGeneration ? this.tick(a) : undefined));
      case 'agent-wake':
        return this.withAgent(e.id, (a) => {
          a.wakePending = false;
          this.tick(a);
        });
      case 'arrival':
        return this.arrive(e.arrival);
      case 'to-coordinator':
        return this.toCoordinator(e.to, e.subject, e.bytes);
      case 'to-agent':
        if (Hostiles.isHostile(e.to)) return this.hostiles?.reply(e.to, e.reply, this.now);
        return this.withAgent(e.to.id, (a) => this.reply(a, e.to, e.reply));
      case 'attempt-failed':
        return this.withAgent(e.to.id, (a) => this.failed(a, e.to, e.code));
      case 'coordinator-tick':
      case 'store-answer':
      case 'bus-done':
      case 'ghost':
        return this.coordinators.handle(e, this.now);
      case 'coordinator-up':
        return this.coordinators.up(this.now);
      case 'fault':
        return this.fault(e.index);
      case 'shadow-switch':
        return this.switchShadow(e.index);
      case 'resume':
        return this.resume(e.id);
      case 'take-deadline':
        return this.withAgent(e.id, (a) => this.limiter.deadline(a));
      case 'slot-release':
        return this.withAgent(e.id, (a) => this.release(a, e.handle, e.ticket));
      case 'audit':
        return this.audit();
      case 'hostile':
        return this.hostiles?.act(e.index, this.now);
      default: // a relay's event
        return this.relays?.handle(e, this.now);
    }
  }

  /** withAgent — runs `f` for a live agent now, or later if it is paused; drops it for a dead one. */
  private withAgent(id: string, f: (agent: SimAgent) => void): void {
    const agent = this.agents.get(id);
    if (agent === undefined || !agent.alive) return;
    if (agent.paused(this.now)) agent.deferred.push(() => f(agent));
    else f(agent);
  }

  /** audit — every lease of a crashed agent is reclaimed by its deadline; the hostile participants are sampled. */
  private audit(): void {
    const hostiles = this.hostiles;
    if (hostiles !== null) this.fairShares?.sampleHostile(hostiles.sybilCount + hostiles.floodLeases(this.now), this.now - this.warmupUs);
    const rootPool = this.coordinators.ownerPool();
    for (const [id, { slot, diedUs, deadlineUs }] of this.deaths) {
      const relay = this.relays?.relayOf(slot) ?? null;
      if (this.now < deadlineUs || (relay !== null && this.relays?.paused(relay, this.now) === true)) continue;
      const pool = relay === null ? rootPool : this.relays?.poolOf(relay);
      const record = pool?.leases.get(id);
      // A lease of an agent whose clock is not verified yet is counted two TTLs from its last acquire (design.md,
      // "Clocks"), so at most two TTLs past its grants' end: it is reclaimed by then, not by one TTL.
      if (record !== undefined && pool !== undefined) {
        const ttlUs = pool.config.leaseTtlMs * 1000;
        const extraUs = record.expiresAtUs - record.grantedUntilUs;
        if (extraUs > 0 && extraUs <= 2 * ttlUs && this.now < record.expiresAtUs + this.reclaimDeadlineUs - ttlUs) continue;
      }
      if (record !== undefined) this.violation(`lease of ${id} (crashed at ${diedUs} µs) not reclaimed by ${deadlineUs} µs`);
      this.deaths.delete(id);
    }
    if (this.now < this.endUs) this.queue.push(this.now + AUDIT_EVERY_US, { k: 'audit' });
  }

  /**
   * adopted — a takeover from the store: each kept lease is the new owner's
   * for a full TTL from `takeoverUs` (so the agent may spend it until then,
   * and a dead agent's lease goes a reclaim deadline after the takeover).
   */
  private adopted(pool: Pool<ReplyTo>, takeoverUs: number, state: PersistedPool | null): void {
    const untilUs = takeoverUs + this.config.pool.leaseTtlMs * 1000;
    for (const kept of state?.leases ?? []) {
      const expiresAtUs = pool.leases.get(kept.agentId)?.expiresAtUs;
      if (expiresAtUs !== untilUs) {
        const expiry = `expires at ${expiresAtUs ?? 'never'} µs after a takeover at ${takeoverUs} µs, not ${untilUs}`;
        this.violation(`kept lease ${kept.leaseId} of ${kept.agentId} ${expiry}`);
      }
      this.law.extend(kept.agentId, kept.leaseId, untilUs);
      const death = this.deaths.get(kept.agentId);
      if (death !== undefined) death.deadlineUs = Math.max(death.deadlineUs, takeoverUs + this.reclaimDeadlineUs);
    }
  }

  private toCoordinator(to: ReplyTo, subject: string, bytes: Uint8Array): void {
    if (this.coordinators.receive(to, subject, bytes, this.now)) return;
    // No coordinator subscribed: NATS answers "no responders" at once.
    const code = 'bus-no-responders';
    for (const at of this.network.arrivals(to.slot, this.now)) this.queue.push(at, { k: 'attempt-failed', to, code });
  }

  /**
   * deliver — puts replies that a process of `epoch` made at `producedUs` on
   * the network. A grant first sent to its request extends the lease (for
   * the expiry check) to `producedUs` + TTL; a repeat of it does not, nor
   * does a kept grant of an earlier epoch repeated after a takeover. A grant
   * is told apart by its lease too: a request retried after its lease
   * lapsed at the coordinator is a new acquire, and may open a new lease
   * under the same seq.
   */
  private deliver(deliveries: readonly Delivery<ReplyTo>[], producedUs: number, epoch: number, perUs = 1): void {
    // Broken on purpose, the coordinator hands slots out again without the hold bound; its agents are told the real one.
    const holdMs = this.config.broken === 'concurrency-no-hold-bound' ? this.config.pool.concurrency?.maxHoldMs : undefined;
    for (const delivery of deliveries) {
      const { to } = delivery;
      const reply = holdMs !== undefined && delivery.reply.kind === 'grant' ? { ...delivery.reply, holdMs } : delivery.reply;
      if (to.relay !== undefined) {
        this.relays?.fromRoot(to, reply, this.now);
        continue;
      }
      if (Hostiles.isHostile(to)) {
        // A hostile client spends nothing: its grants count in its fair shares, not in the agents' checks.
        for (const at of this.network.arrivals(to.slot, this.now)) this.queue.push(at, { k: 'to-agent', to, reply });
        continue;
      }
      const key = reply.kind === 'grant' ? `${to.id}:${to.seq}:${reply.leaseId}` : `${to.id}:${to.seq}`;
      const first = !this.countedReplies.has(key);
      if (reply.kind === 'grant') {
        if (first && reply.epoch === epoch) this.law.granted(to.id, reply, producedUs, perUs);
        if (first) this.m.grantedTokens += reply.tokensGranted;
      } else if (reply.kind === 'receipt' && first) {
        this.m.returnedTokens += reply.tokensReturned;
      }
      if (reply.kind === 'grant' || reply.kind === 'receipt') this.countedReplies.add(key);
      for (const at of this.network.arrivals(to.slot, this.now)) this.queue.push(at, { k: 'to-agent', to, reply });
    }
  }

  private startAgent(slot: number, incarnation: number): void {
    if (this.slots[slot] !== null) return;
    const id = `a${slot}.${incarnation}`;
    const drift = (this.random.next() * 2 - 1) * this.config.driftMax;
    const agentClass = this.config.agentClasses?.[slot] ?? null;
    const relay = this.relays?.relayOf(slot) ?? null;
    const prefix = relay === null ? PREFIX : relayPrefix(relay);
    const options = { ...this.config.keeper, agentClass };
    const agent = new SimAgent(slot, id, this.now, drift, prefix, options, this.random, this.agentHost(), this.config.broken);
    agent.keeper.slot.onLow = () => this.carry(agent, agent.driver.wake(agent.pool));
    this.agents.set(id, agent);
    this.slots[slot] = agent;
    this.carry(agent, agent.driver.start(agent.pool, agent.localUs(this.now)));
  }

  /** stopAgent — the agent leaves: it closes (returning its lease) or crashes (stranding it). */
  private stopAgent(slot: number, incarnation: number, crash: boolean): void {
    const agent = this.slots[slot];
    if (agent === null || agent === undefined || agent.id !== `a${slot}.${incarnation}`) return;
    this.slots[slot] = null;
    this.limiter.close(agent);
    if (crash) this.kill(agent);
    else this.withAgent(agent.id, (a) => this.carry(a, a.driver.close(a.localUs(this.now))));
  }

  private kill(agent: SimAgent): void {
    agent.alive = false;
    this.deaths.set(agent.id, { slot: agent.slot, diedUs: this.now, deadlineUs: this.now + this.reclaimDeadlineUs });
    if (this.slots[agent.slot] === agent) this.slots[agent.slot] = null;
  }

  private agentHost(): ConstructorParameters<typeof SimAgent>[7] {
    return { now: () => this.now, serve: (agent) => this.limiter.poll(agent), cancel: (agent) => this.limiter.close(agent) };
  }

  /** tick — `agent`'s driver ticks its pool now. */
  private tick(agent: SimAgent): void {
    this.carry(agent, agent.driver.tick(agent.pool, agent.localUs(this.now)));
  }

  /**
   * carry — carries out `agent`'s driver's commands now: requests and reports
   * onto the network (a request's timeout as an event), its next tick, a
   * wake. News, drops, the sweep and a settled close change nothing sent
   * and are not carried (a simulated agent runs its one pool for life).
   */
  private carry(agent: SimAgent, commands: readonly AgentCommand<SimAgent>[]): void {
    for (const command of commands) {
      if (command.type === 'send' || command.type === 'publish') this.send(agent, command);
      else if (command.type === 'wake-at') this.wakeAt(agent, command.atUs);
      else if (command.type === 'wake-soon' && !agent.wakePending) {
        agent.wakePending = true;
        this.queue.push(this.now, { k: 'agent-wake', id: agent.id });
      }
    }
    const { leaseId, slot } = agent.keeper;
    if (slot.balanceTokens < 0) this.violation(`${agent.id}: negative balance ${slot.balanceTokens}`);
    // A rate lease holds no more than the coordinator counts whenever its keeper acted, not only when it spends.
    const over = slot.hasLease ? this.law.overCount(agent.id, leaseId, slot.balanceTokens, this.now) : null;
    if (over !== null) this.violation(over);
  }

  /** send — a request (awaiting its reply until its timeout) or a report (awaiting none) of `agent` onto the network now. */
  private send(agent: SimAgent, command: Extract<AgentCommand<SimAgent>, { type: 'send' | 'publish' }>): void {
    const seq = command.message.seq;
    const attempt = agent.attemptOf(seq, this.now);
    const to: ReplyTo = { id: agent.id, slot: agent.slot, seq, attempt };
    const relay = this.relays?.relayOf(agent.slot) ?? null;
    // A published usage report is a one-way message, not a round-trip.
    if (command.type === 'publish') this.m.reports += 1;
    else this.m.roundTrips += 1;
    if (command.type !== 'publish' && relay === null) this.m.rootRoundTrips += 1;
    const { subject } = command;
    const bytes = encodeMessage(command.message);
    for (const at of this.network.arrivals(agent.slot, this.now)) {
      this.queue.push(at, relay === null ? { k: 'to-coordinator', to, subject, bytes } : { k: 'to-relay', relay, to, subject, bytes });
    }
    if (command.type === 'send') this.queue.push(this.now + command.timeoutMs * 1000, { k: 'attempt-failed', to, code: 'bus-timeout' });
  }

  /** wakeAt — `agent`'s one tick timer at its clock's `atUs` (Infinity: none), replacing the one set before. */
  private wakeAt(agent: SimAgent, atUs: number): void {
    agent.tickGeneration += 1;
    if (atUs === Infinity) return;
    const at = Math.max(this.now + 1, agent.trueUs(atUs));
    this.queue.push(at, { k: 'agent-tick', id: agent.id, gen: agent.tickGeneration });
  }

  private reply(agent: SimAgent, to: ReplyTo, reply: Reply): void {
    agent.settledAttempts.add(`${to.seq}:${to.attempt}`);
    const localUs = agent.localUs(this.now);
    if (reply.kind === 'grant') agent.grantArriving(to.seq, reply.ttlMs, localUs);
    else agent.replyArriving(localUs);
    this.carry(agent, agent.driver.answered(agent.pool, to.seq, reply, localUs));
  }

  private failed(agent: SimAgent, to: ReplyTo, code: string): void {
    const key = `${to.seq}:${to.attempt}`;
    if (agent.settledAttempts.has(key)) return;
    agent.settledAttempts.add(key);
    this.carry(agent, agent.driver.failed(agent.pool, to.seq, code, code, agent.localUs(this.now)));
  }

  private arrive(a: Arrival): void {
    this.m.offered(a.agent, a.cost, this.now - this.warmupUs);
    this.fairShares?.offer(a.agent, a.cost, this.now - this.warmupUs);
    const agent = this.slots[a.agent];
    if (agent === null || agent === undefined) {
      this.m.deniedCount += 1;
      return;
    }
    this.withAgent(agent.id, (live) => this.limiter.offer(live, a));
  }

  /**
   * admitted — `agent` admitted `costs` now, `shadowTokens` of them only
   * because of shadow mode. Those are outside the envelope by design until
   * one TTL after a switch back to enforcing (every lease granted in
   * shadow mode has ended by then, on every agent's clock); from then on
   * any is a violation, and counts in the envelope too.
   */
  private admitted(agent: SimAgent, costs: readonly number[], shadowTokens: number): void {
    let totalTokens = 0;
    for (const cost of costs) {
      this.m.admitted(agent.slot, cost, this.now - this.warmupUs);
      this.fairShares?.admit(agent.slot, cost, this.now - this.warmupUs);
      totalTokens += cost;
    }
    let judgedTokens = totalTokens;
    if (shadowTokens > 0) {
      this.m.shadowAdmittedTokens += shadowTokens;
      if (this.now < this.shadowJudgedFromUs) judgedTokens -= shadowTokens;
      else {
        this.m.shadowJudgedTokens += shadowTokens;
        const since =
          this.shadowOffUs === null ? 'the pool never was in shadow mode' : `${this.now - this.shadowOffUs} µs after the switch back`;
        this.violation(`${agent.id} admitted ${shadowTokens} tokens beyond its leases as in shadow mode, ${since}`);
      }
    }
    // A concurrency pool's promise is about requests in flight, not admissions over time: its own log judges it.
    if (judgedTokens > 0 && this.inFlight === null) this.judge(judgedTokens);
    // Which of a batch shadow mode admitted is not told apart: a lease's own checks judge batches without it.
    if (shadowTokens === 0) for (const cost of costs) this.checkLease(agent, cost);
  }

  /**
   * held — a request of `agent` took slot `handle` now: the in-flight log
   * counts it (`counted`: from the lease; one shadow mode admitted is
   * judged as shadow admissions are) until its release, at most its hold
   * bound as the agent's clock measures it; it is released after a service
   * time, or, a share of them, never (it hangs; its bound ends it).
   */
  private held(agent: SimAgent, handle: number, counted: boolean): void {
    const spec = this.config.pool.concurrency;
    if (spec === undefined || this.inFlight === null) return;
    const startLocalUs = agent.localUs(this.now);
    const boundUs = agent.trueUs(startLocalUs + agent.keeper.slot.holds.holdUs) - this.now;
    const ticket = counted ? this.inFlight.start(this.now, boundUs) : -1;
    if (this.service.next() < spec.hangShare) return;
    const serviceUs = Math.max(1, Math.round(this.service.exponential(spec.serviceMs * 1000)));
    this.queue.push(this.now + serviceUs, { k: 'slot-release', id: agent.id, handle, ticket });
  }

  /** release — `agent`'s request of slot `handle` ended now; its hold ends if the agent still counted it (a dead agent releases nothing). */
  private release(agent: SimAgent, handle: number, ticket: number): void {
    if (agent.keeper.slot.releaseAt(handle, agent.localUs(this.now)) && ticket >= 0) this.inFlight?.end(ticket, this.now);
  }

  /** judge — `tokens` admitted now count in the envelope (and a window pool's windows). */
  private judge(tokens: number): void {
    const excess = this.envelope.admit(this.now, tokens);
    if (excess > 0) {
      this.violation(`envelope exceeded by ${excess.toFixed(3)} tokens in window ${JSON.stringify(this.envelope.worstWindow)}`);
    }
    const over = this.windows?.admit(this.now, tokens) ?? 0;
    if (over > 0) {
      const w = this.windows as WindowWatch;
      const held = w.limitTokens + over;
      this.violation(
        `window limit exceeded: the window of ${w.windowUs / 1000} ms ending at ${this.now} µs held ${held} tokens, over the limit ${w.limitTokens} by ${over}`,
      );
    }
    if (this.config.recordAdmissions === true) this.admissions.push({ tUs: this.now, cost: tokens });
  }

  /** checkLease — `agent` spent `cost` from its lease now: before its own expiry, and while the coordinator counts the lease. */
  private checkLease(agent: SimAgent, cost: number): void {
    const localUs = agent.localUs(this.now);
    if (localUs >= agent.expectedExpiryLocalUs) {
      this.violation(`${agent.id} spent ${cost} at local ${localUs} µs, after its agent-side expiry ${agent.expectedExpiryLocalUs}`);
    }
    const { leaseId, slot } = agent.keeper;
    for (const problem of this.law.problems(agent.id, leaseId, cost, slot.balanceTokens, this.now)) this.violation(problem);
  }

  /**
   * switchShadow — the `index`th switch of the run's shadow spec: a reload
   * of every coordinator puts the pool in shadow mode (even index) or back
   * to enforcing (odd), whose checks start one TTL later.
   */
  private switchShadow(index: number): void {
    const shadow = index % 2 === 0;
    this.coordinators.reload(coordinatorConfigOf({ ...rootPoolOf(this.config), shadow }, POOL), this.now);
    this.shadowOffUs = shadow ? null : this.now;
    this.shadowJudgedFromUs = shadow ? Infinity : this.now + this.config.pool.leaseTtlMs * 1000;
  }

  private fault(index: number): void {
    const fault = this.config.faults[index];
    if (fault === undefined) return;
    if (fault.kind === 'restart-coordinator' || fault.kind === 'failover-coordinator') return this.coordinators.down(fault, this.now);
    if (fault.kind === 'reclaim-coordinator') return this.coordinators.reclaim(fault, this.now);
    if (isRelayFault(fault)) return this.relays?.fault(fault, this.now);
    const agent = this.slots[fault.agent];
    if (agent === null || agent === undefined) return;
    if (fault.kind === 'pause-agent') {
      agent.pausedUntilUs = Math.max(agent.pausedUntilUs, this.now + fault.forUs);
      this.queue.push(agent.pausedUntilUs, { k: 'resume', id: agent.id });
      return;
    }
    this.kill(agent);
    this.restarts[fault.agent] = (this.restarts[fault.agent] ?? 0) + 1;
    const incarnation = 1000 * (this.restarts[fault.agent] ?? 0);
    this.queue.push(this.now + fault.downUs, { k: 'agent-start', slot: fault.agent, incarnation });
  }

  private resume(id: string): void {
    const agent = this.agents.get(id);
    if (agent === undefined || !agent.alive || agent.paused(this.now)) return;
    for (const f of agent.deferred.splice(0)) f();
    this.tick(agent);
  }

  private violation(message: string): void {
    this.m.violation(`t=${this.now} µs: ${message}`);
  }

  private result(): SimResult {
    const fairShare = this.fairShares?.report() ?? null;
    const c = this.coordinators;
    this.m.rootRoundTrips += this.relays?.upstreamAttempts ?? 0;
    const store = {
      takeovers: c.takeovers,
      storeWrites: c.storeWrites,
      fencedWrites: c.fencedWrites,
      reclaims: c.reclaims,
      lateOutcomes: c.lateOutcomes,
      relayRestarts: this.relays?.restarts ?? 0,
    };
    const inFlight = this.inFlight?.check() ?? null;
    if (inFlight !== null && !inFlight.ok) {
      const { peak, peakAtUs, limit } = inFlight;
      this.m.violation(`in-flight limit exceeded: ${peak} requests held slots at once at t=${peakAtUs} µs, over the limit ${limit}`);
    }
    const checks = {
      worstExcessTokens: this.envelope.worstExcessTokens,
      peakInFlight: inFlight?.peak ?? null,
      meanInFlight: inFlight === null ? null : inFlight.heldUs / Math.max(1, this.endUs - this.warmupUs),
      shadowAdmittedTokens: this.m.shadowAdmittedTokens,
      shadowJudgedTokens: this.m.shadowJudgedTokens,
      fullestWindowTokens: this.windows === null ? null : (this.windows.fullest?.admittedTokens ?? 0),
      admissions: this.admissions,
      fairShare,
      hostileGrantedTokens: this.hostiles?.grantedTokens ?? 0,
    };
    return this.m.result(this.config.seed, checks, this.now / 1e6, this.events, store);
  }
}
