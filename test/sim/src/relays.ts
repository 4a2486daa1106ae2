/**
 * Relays: the relay processes of a tree (docs/design.md, "Relays"), each
 * the real relay driver (coordinator/src/core/relay-driver.ts) the NATS
 * service runs, its commands carried out on the virtual clock: replies to
 * the agents, requests to the root, wakes. Nothing of what a relay decides
 * is written here. Its agents'
 * requests come through the network (`to-relay`) and its replies go back
 * through the host; its requests to the root go through the network to
 * whichever root process serves (`to-coordinator`), and the root's replies
 * come back (`relay-reply`) to the incarnation that sent them.
 *
 * - A crash loses everything: held requests, downstream leases, the uplink
 *   and its lease (which the root counts until it expires there). `downUs`
 *   later a new incarnation starts from nothing, with a new epoch and a new
 *   upstream agent id. Meanwhile its agents hear "no responders".
 * - A pause: the relay acts on nothing (no tick, no request, no reply)
 *   until it resumes; then it handles what came meanwhile, in order, at the
 *   resume instant (its clock jumped ahead), and ticks.
 * - A relay's clock may drift (`TreeSpec.relayDrift`): its core runs on
 *   its own reading of time, and the grants it sends count, for the expiry
 *   check, as long as its clock says. Its uplink's margin covers its drift
 *   against the root's; the agents' margin covers theirs against it.
 * - Partitions are the network's: a relay's link to the root is the network
 *   slot `relayLink(index)`, its agents' links are their own slots.
 * - A wake keeps an earlier one already set, as the service's timer does,
 *   and comes within COORDINATOR_TICK_US_MAX.
 * - Broken on purpose (`relay-no-ttl-cap`): grants to the agents carry the
 *   pool's full TTL, not cut to the end of the relay's own lease.
 *   (`spend-after-upstream-lost`): the relay's credit does not notice that
 *   its upstream lease ended (LostLeaseCredit): it keeps granting its
 *   agents what its level held, for the pool's full TTL.
 */
import {
  parseRelayConfig,
  RelayCredit,
  RelayDriver,
  type Delivery,
  type Pool,
  type RelayCommand,
  type RelayConfig,
  type RelayCreditFactory,
  type UplinkSettings,
} from '@tokenlease/coordinator/internal';
import { encodeMessage, subjectFor, type LeaseRequest, type LeaseReturn } from '@tokenlease/shared';
import type { Broken, RelayFault, SimPool, TreeSpec } from './sim-config.js';
import { relayOfSlot } from './tree.js';
import { COORDINATOR_TICK_US_MAX, POOL, PREFIX, relayLink, type Event, type ReplyTo } from './sim-events.js';

/**
 * UPLINK_DEFAULTS — a simulated relay's uplink settings unless the tree
 * says: the product's defaults, with a reply timeout and hold sized to the
 * simulated network's milliseconds rather than a WAN's second.
 */
export const UPLINK_DEFAULTS: Partial<UplinkSettings> = { holdMs: 50, replyTimeoutMs: 250 };

/** RelaysHost — what the relays need from the simulation. */
export interface RelaysHost {
  push(atUs: number, event: Event): void;
  /** send — puts replies a relay incarnation of `epoch` produced at `producedUs` for its agents on the network now. */
  /** send — `perUs`: how many of its own µs the producing process counts per true µs (a grant lasts its TTL of those). */
  send(deliveries: readonly Delivery<ReplyTo>[], producedUs: number, epoch: number, perUs?: number): void;
  /** arrivals — when the copies of a message sent at `nowUs` on network slot `slot` arrive (none if lost or cut). */
  arrivals(slot: number, nowUs: number): number[];
  /** failed — a relay core threw or faulted: a broken invariant. */
  failed(message: string): void;
  /** resumed — relay `index` acts again after a pause. */
  resumed(index: number): void;
}

/** Step — a driver event at the relay's own µs. */
type Step = (localUs: number) => RelayCommand<ReplyTo>[];

/** LOCAL_BASE_US — what a relay's clock reads when its incarnation starts. */
const LOCAL_BASE_US = 2_000_000_000;

interface SimRelay {
  readonly index: number;
  readonly incarnation: number;
  readonly epoch: number;
  readonly driver: RelayDriver<ReplyTo>;
  /** The true µs its incarnation started, and its clock's drift (its µs per true µs, less 1). */
  readonly startUs: number;
  readonly drift: number;
  alive: boolean;
  pausedUntilUs: number;
  readonly deferred: Step[];
  tickGen: number;
  /** When its pending tick comes, true µs (Infinity: none pending). */
  tickAtUs: number;
  attempts: number;
}

/** relayPrefix — the subject prefix relay `index` serves its agents on. */
export function relayPrefix(index: number): string {
  return `relay${index}`;
}

/** relayConfigOf — relay `index`'s configuration: the run's pool, served on its own prefix, leased from the root's. */
export function relayConfigOf(p: SimPool, tree: TreeSpec, index: number): RelayConfig {
  return parseRelayConfig('simulation', {
    upstreamPrefix: PREFIX,
    subjectPrefix: relayPrefix(index),
    pools: {
      [POOL]: {
        ...(p.window === true
          ? { window: { limit: p.capacity, windowMs: p.refill.periodMs } }
          : { capacity: p.capacity, refill: { tokens: p.refill.tokens, periodMs: p.refill.periodMs } }),
        leaseTtlMs: tree.relayLeaseTtlMs ?? p.leaseTtlMs,
        maxLeaseTokens: p.maxLeaseTokens,
        ...(p.minGrantTokens === undefined ? {} : { minGrantTokens: p.minGrantTokens }),
        ...(p.maxHoldMs === undefined ? {} : { maxHoldMs: p.maxHoldMs }),
        ...(p.classWeights === undefined ? {} : { classWeights: p.classWeights }),
        ...(p.allowance ? { allowance: p.allowance } : {}),
        ...(p.leaseMode === undefined ? {} : { leaseMode: p.leaseMode }),
      },
    },
    uplink: { ...UPLINK_DEFAULTS, ...tree.uplink },
  });
}

export class Relays {
  /** Relay incarnations started after the first of each. */
  restarts = 0;
  /** Request attempts the relays sent to the root. */
  upstreamAttempts = 0;
  private readonly relays: SimRelay[] = [];
  private readonly configs: RelayConfig[];
  private tickGen = 0;

  constructor(
    private readonly tree: TreeSpec,
    pool: SimPool,
    private readonly host: RelaysHost,
    private readonly broken: Broken | undefined,
  ) {
    if (!(Number.isSafeInteger(tree.relays) && tree.relays >= 1)) throw new Error(`a tree needs at least one relay, not ${tree.relays}`);
    this.configs = Array.from({ length: tree.relays }, (_, i) => relayConfigOf(pool, tree, i));
  }

  /** relayOf — the relay agent slot `slot` leases from, or null: the root. */
  relayOf(slot: number): number | null {
    return relayOfSlot(this.tree, slot);
  }

  /** start — every relay's first incarnation. */
  start(nowUs: number): void {
    for (let i = 0; i < this.tree.relays; i += 1) this.relays.push(this.make(i, 0, nowUs));
  }

  /** poolOf — relay `index`'s pool as its live incarnation holds it (undefined while it is down). */
  poolOf(index: number): Pool<ReplyTo> | undefined {
    const relay = this.relays[index];
    return relay?.alive === true ? relay.driver.relay.core.pool(POOL) : undefined;
  }

  paused(index: number, nowUs: number): boolean {
    return nowUs < (this.relays[index]?.pausedUntilUs ?? -1);
  }

  /** fromRoot — puts the root's reply to a relay's request on the relay's link now. */
  fromRoot(to: ReplyTo, reply: Delivery<ReplyTo>['reply'], nowUs: number): void {
    for (const at of this.host.arrivals(to.slot, nowUs)) this.host.push(at, { k: 'relay-reply', to, reply });
  }

  handle(e: Extract<Event, { k: 'to-relay' | 'relay-reply' | 'relay-tick' | 'relay-up' | 'relay-resume' }>, nowUs: number): void {
    switch (e.k) {
      case 'to-relay':
        return this.request(e, nowUs);
      case 'relay-reply': {
        const target = e.to.relay;
        const relay = target === undefined ? undefined : this.relays[target.index];
        if (target === undefined || relay === undefined || relay.incarnation !== target.incarnation) return;
        return this.act(relay, nowUs, (t) => relay.driver.upstreamReply(target.request, e.reply, t));
      }
      case 'relay-tick': {
        const relay = this.relays[e.relay];
        if (relay === undefined || relay.tickGen !== e.gen || this.paused(e.relay, nowUs)) return;
        relay.tickAtUs = Infinity;
        return this.act(relay, nowUs, (t) => relay.driver.tick(t));
      }
      case 'relay-up':
        return this.up(e.relay, nowUs);
      case 'relay-resume':
        return this.resume(e.relay, nowUs);
    }
  }

  /** fault — a relay's crash or pause at `nowUs` (a partition is the network's). */
  fault(f: RelayFault, nowUs: number): void {
    const relay = this.relays[f.relay];
    if (relay === undefined || !relay.alive) return;
    if (f.kind === 'crash-relay') {
      relay.alive = false;
      relay.deferred.length = 0;
      this.host.push(nowUs + f.downUs, { k: 'relay-up', relay: f.relay });
    } else if (f.kind === 'pause-relay') {
      relay.pausedUntilUs = Math.max(relay.pausedUntilUs, nowUs + f.forUs);
      this.host.push(relay.pausedUntilUs, { k: 'relay-resume', relay: f.relay });
    }
  }

  private request(e: Extract<Event, { k: 'to-relay' }>, nowUs: number): void {
    const relay = this.relays[e.relay];
    if (relay === undefined) return;
    if (!relay.alive) {
      // No relay subscribed on its prefix: NATS answers "no responders" at once.
      for (const at of this.host.arrivals(e.to.slot, nowUs))
        this.host.push(at, { k: 'attempt-failed', to: e.to, code: 'bus-no-responders' });
      return;
    }
    this.act(relay, nowUs, (t) => relay.driver.request(e.subject, e.bytes, e.to, t));
  }

  private up(index: number, nowUs: number): void {
    const old = this.relays[index];
    if (old === undefined || old.alive) return;
    this.restarts += 1;
    this.relays[index] = this.make(index, old.incarnation + 1, nowUs);
  }

  private resume(index: number, nowUs: number): void {
    const relay = this.relays[index];
    if (relay === undefined || !relay.alive || this.paused(index, nowUs)) return;
    for (const step of relay.deferred.splice(0)) this.act(relay, nowUs, step);
    this.act(relay, nowUs, (t) => relay.driver.tick(t));
    this.host.resumed(index);
  }

  private make(index: number, incarnation: number, nowUs: number): SimRelay {
    const config = this.configs[index] as RelayConfig;
    let uplinks = 0;
    const identityOf = (): { agentId: string; leaseSecret: string } => {
      uplinks += 1;
      return {
        agentId: `relay${index}.${incarnation}.${uplinks}`,
        leaseSecret: `relay-secret-${index}-${incarnation}-${uplinks}`.padEnd(24, '0'),
      };
    };
    // Epochs apart from the root's (1, 2, …) and from every other incarnation's.
    const epoch = 1_000_000 * (index + 1) + incarnation;
    const creditOf: RelayCreditFactory | undefined =
      this.broken === 'spend-after-upstream-lost' ? (p, scale, retryUs) => new LostLeaseCredit(scale, p.name, retryUs) : undefined;
    const driver = new RelayDriver<ReplyTo>({ config, epoch, startUs: LOCAL_BASE_US, identityOf, ...(creditOf ? { creditOf } : {}) });
    const drift = this.tree.relayDrift?.[index] ?? 0;
    const relay: SimRelay = {
      index,
      incarnation,
      epoch,
      driver,
      startUs: nowUs,
      drift,
      alive: true,
      pausedUntilUs: -1,
      deferred: [],
      tickGen: 0,
      tickAtUs: Infinity,
      attempts: 0,
    };
    this.act(relay, nowUs, (t) => driver.start(t));
    return relay;
  }

  /** act — `step` now, on the relay's clock, and its commands carried out; deferred while paused. */
  private act(relay: SimRelay, nowUs: number, step: Step): void {
    if (!relay.alive) return;
    if (nowUs < relay.pausedUntilUs) {
      relay.deferred.push(step);
      return;
    }
    let commands: RelayCommand<ReplyTo>[] = [];
    try {
      commands = step(localUs(relay, nowUs));
    } catch (error) {
      this.host.failed(`relay ${relay.index} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    for (const c of commands) this.carry(relay, c, nowUs);
  }

  /** carry — one command of relay `relay`'s driver, carried out at true `nowUs`; its logs and outcome counts are not the simulation's. */
  private carry(relay: SimRelay, c: RelayCommand<ReplyTo>, nowUs: number): void {
    if (c.kind === 'reply') this.send(relay, c.deliveries, nowUs);
    else if (c.kind === 'send-upstream') this.sendUp(relay, c.message, nowUs);
    else if (c.kind === 'wake') this.wake(relay, c.atUs, nowUs);
    else if (c.kind === 'faults') {
      // The core contains a pool's fault and serves on; in a simulation any fault is a bug.
      for (const fault of c.faults) {
        const message = fault.error instanceof Error ? fault.error.message : String(fault.error);
        this.host.failed(`relay ${relay.index}: pool ${fault.pool} failed: ${message}`);
      }
    }
  }

  /** wake — the relay's next tick at its own µs `atUs`, within COORDINATOR_TICK_US_MAX, unless one already comes sooner. */
  private wake(relay: SimRelay, atUs: number, nowUs: number): void {
    const at = Math.min(nowUs + COORDINATOR_TICK_US_MAX, Math.max(nowUs + 1, trueUs(relay, atUs)));
    if (relay.tickAtUs >= nowUs && relay.tickAtUs <= at) return;
    relay.tickAtUs = at;
    relay.tickGen = this.tickGen += 1;
    this.host.push(at, { k: 'relay-tick', relay: relay.index, gen: relay.tickGen });
  }

  private sendUp(relay: SimRelay, request: LeaseRequest | LeaseReturn, nowUs: number): void {
    relay.attempts += 1;
    this.upstreamAttempts += 1;
    const to: ReplyTo = {
      id: `relay${relay.index}.${relay.incarnation}`,
      slot: relayLink(relay.index),
      seq: request.seq,
      attempt: relay.attempts,
      relay: { index: relay.index, incarnation: relay.incarnation, request },
    };
    const subject = subjectFor(PREFIX, request.op, POOL);
    const bytes = encodeMessage(request);
    for (const at of this.host.arrivals(to.slot, nowUs)) this.host.push(at, { k: 'to-coordinator', to, subject, bytes });
  }

  private send(relay: SimRelay, deliveries: Delivery<ReplyTo>[], nowUs: number): void {
    if (deliveries.length === 0) return;
    const ttlMs = (this.configs[relay.index] as RelayConfig).downstream.pools[0]?.leaseTtlMs ?? 0;
    // Broken: the agents are told the pool's full TTL, as if the relay's own lease never ended.
    const sent =
      this.broken === 'relay-no-ttl-cap'
        ? deliveries.map((d) => (d.reply.kind === 'grant' ? { ...d, reply: { ...d.reply, ttlMs } } : d))
        : deliveries;
    this.host.send(sent, nowUs, relay.epoch, 1 + relay.drift);
  }
}

/**
 * LostLeaseCredit — broken on purpose (`spend-after-upstream-lost`): a
 * relay's credit that does not notice its upstream lease ended. The level
 * it had outlives that lease (until a newer lease takes over), and what it
 * grants after the end is not cut to it: the relay's agents keep spending
 * tokens the root no longer counts.
 */
class LostLeaseCredit extends RelayCredit {
  override get leaseEndUs(): number {
    const endUs = super.leaseEndUs;
    return endUs > this.lastRefillUs ? endUs : Infinity;
  }

  override refill(nowUs: number, leasedTokens: number): void {
    const endUs = super.leaseEndUs;
    const levelUnits = this.levelUnits;
    super.refill(nowUs, leasedTokens);
    if (nowUs >= endUs && super.leaseEndUs === endUs) this.levelUnits = levelUnits;
  }
}

/** localUs — what relay `r`'s clock reads at true time `nowUs`. */
function localUs(r: SimRelay, nowUs: number): number {
  return LOCAL_BASE_US + Math.floor((nowUs - r.startUs) * (1 + r.drift));
}

/** trueUs — the true time at which relay `r`'s clock reads `local` (Infinity stays Infinity). */
function trueUs(r: SimRelay, local: number): number {
  return r.startUs + Math.ceil((local - LOCAL_BASE_US) / (1 + r.drift));
}
