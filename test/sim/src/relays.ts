/**
 * Relays: the relay processes of a tree (docs/design.md, "Relays"), each
 * the real RelayCore with its uplinks, driven on the virtual clock as
 * coordinator/src/core/relay-property.test.ts drives it. Its agents'
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
 * - Broken on purpose (`relay-no-ttl-cap`): grants to the agents carry the
 *   pool's full TTL, not cut to the end of the relay's own lease.
 */
import {
  MAX_TTL_MS,
  parseRelayConfig,
  RelayCore,
  Uplink,
  type Delivery,
  type Pool,
  type PoolConfig,
  type RelayConfig,
  type RelayCredit,
  type UplinkSettings,
} from '@tokenlease/coordinator';
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

type Step = (nowUs: number) => Delivery<ReplyTo>[];

/** LOCAL_BASE_US — what a relay's clock reads when its incarnation starts. */
const LOCAL_BASE_US = 2_000_000_000;

interface SimRelay {
  readonly index: number;
  readonly incarnation: number;
  readonly epoch: number;
  readonly core: RelayCore<ReplyTo>;
  /** The true µs its incarnation started, and its clock's drift (its µs per true µs, less 1). */
  readonly startUs: number;
  readonly drift: number;
  alive: boolean;
  pausedUntilUs: number;
  readonly deferred: Step[];
  tickGen: number;
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
    return relay?.alive === true ? relay.core.core.pool(POOL) : undefined;
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
        const request = target.request;
        // A return's receipt changes nothing at the relay: the pool it returned is gone.
        if (request.op !== 'acquire') return;
        return this.act(relay, nowUs, (t) => relay.core.upstreamReply(request, e.reply, t).out);
      }
      case 'relay-tick': {
        const relay = this.relays[e.relay];
        if (relay !== undefined && relay.tickGen === e.gen && !this.paused(e.relay, nowUs)) this.act(relay, nowUs, () => []);
        return;
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
    this.act(relay, nowUs, (t) => relay.core.receive(e.subject, e.bytes, e.to, t));
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
    this.act(relay, nowUs, () => []);
    this.host.resumed(index);
  }

  private make(index: number, incarnation: number, nowUs: number): SimRelay {
    const config = this.configs[index] as RelayConfig;
    let uplinks = 0;
    const uplinkOf = (p: PoolConfig, credit: RelayCredit): Uplink => {
      uplinks += 1;
      const agentId = `relay${index}.${incarnation}.${uplinks}`;
      const leaseSecret = `relay-secret-${index}-${incarnation}-${uplinks}`.padEnd(24, '0');
      return new Uplink(p, credit, { ...config.uplink, leaseTtlMsMax: MAX_TTL_MS, initialTokens: p.maxLeaseTokens, agentId, leaseSecret });
    };
    // Epochs apart from the root's (1, 2, …) and from every other incarnation's.
    const epoch = 1_000_000 * (index + 1) + incarnation;
    const core = new RelayCore<ReplyTo>(config, epoch, LOCAL_BASE_US, uplinkOf);
    const drift = this.tree.relayDrift?.[index] ?? 0;
    const relay: SimRelay = {
      index,
      incarnation,
      epoch,
      core,
      startUs: nowUs,
      drift,
      alive: true,
      pausedUntilUs: -1,
      deferred: [],
      tickGen: 0,
      attempts: 0,
    };
    this.act(relay, nowUs, () => []);
    return relay;
  }

  /** act — `step` now, then the relay's tick, its requests due to the root, and its next tick; deferred while paused. */
  private act(relay: SimRelay, nowUs: number, step: Step): void {
    if (!relay.alive) return;
    if (nowUs < relay.pausedUntilUs) {
      relay.deferred.push(step);
      return;
    }
    const t = localUs(relay, nowUs);
    this.send(
      relay,
      this.guard(relay, () => step(t)),
      nowUs,
    );
    this.send(
      relay,
      this.guard(relay, () => relay.core.tick(t)),
      nowUs,
    );
    let requests: (LeaseRequest | LeaseReturn)[] = [];
    try {
      requests = relay.core.upstream(t);
    } catch (error) {
      this.host.failed(`relay ${relay.index} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    for (const request of requests) this.sendUp(relay, request, nowUs);
    relay.tickGen = this.tickGen += 1;
    const at = Math.min(nowUs + COORDINATOR_TICK_US_MAX, Math.max(nowUs + 1, trueUs(relay, relay.core.nextDeadlineUs())));
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

  private guard(relay: SimRelay, f: () => Delivery<ReplyTo>[]): Delivery<ReplyTo>[] {
    try {
      const out = f();
      // The core contains a pool's fault and serves on; in a simulation any fault is a bug.
      const fault = relay.core.core.takeFaults()[0];
      if (fault !== undefined) {
        const message = fault.error instanceof Error ? fault.error.message : String(fault.error);
        this.host.failed(`relay ${relay.index}: pool ${fault.pool} failed: ${message}`);
      }
      return out;
    } catch (error) {
      this.host.failed(`relay ${relay.index} failed: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
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
