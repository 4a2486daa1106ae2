/**
 * RelayCore: a relay as a pure state machine (docs/design.md, "Relays").
 * Downstream it is a CoordinatorCore whose pools draw on RelayCredits, so
 * agents see the coordinator protocol unchanged; upstream it keeps one
 * Uplink per pool, an agent's chunk lease from the root.
 *
 * Events in: `receive` (a downstream request), `upstreamReply` (the root's
 * reply to what `upstream` returned), `tick`. Effects out: downstream
 * deliveries and upstream requests. No clock, no I/O. What drives it, and
 * what it decides beyond that (logs, lapses, timeouts), is RelayDriver's.
 *
 * Rules:
 * - A pool the downstream core restarted after a fault has a new credit:
 *   its uplink is dropped (its lease lapses at the root, counting what the
 *   old pool's agents may still spend) and a new one, with a new agent id,
 *   starts from nothing.
 * - Work per call does not grow with the number of downstream leases: the
 *   uplink reads the pool's running sums. A request touches one pool and
 *   its uplink (`upstreamTouched`, `touchedDeadlineUs`); a tick looks at
 *   every pool held, as the coordinator's tick does.
 * - Every uplink is made here, with the relay's uplink settings, the lease
 *   client's longest TTL and the pool's lease limit as its first ask; only
 *   its agent id and secret (randomness) come from outside.
 * - Template pools are relayed as configured ones, each with its own
 *   uplink; a pool forgotten (idle past its template's `idleEvictMs`, or
 *   removed and drained) has no downstream lease left, so its upstream
 *   lease is returned.
 */
import { LEASE_CLIENT_DEFAULTS, parseSubject, type LeaseRequest, type LeaseReturn, type Reply } from '@tokenlease/shared';
import type { PoolConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import type { ReconfigureSummary } from './pool-registry.js';
import type { Delivery, Pool } from './pool.js';
import { RelayCredit } from './relay-credit.js';
import type { RelayConfig } from './relay-config.js';
import { Uplink, type DownstreamView, type UplinkOutcome } from './uplink.js';

/** UplinkIdentity — what a new uplink asks the root under: a fresh agent id, and a lease secret (never logged). */
export interface UplinkIdentity {
  readonly agentId: string;
  /** 22 to 128 base64url characters. */
  readonly leaseSecret: string;
}

/** UplinkIdentitySource — a fresh identity for a new uplink of pool `pool` (the adapter's randomness). */
export type UplinkIdentitySource = (pool: string) => UplinkIdentity;

/** RelayCreditFactory — the credit of relayed pool `pool`; `RelayCredit` unless a simulation breaks it on purpose. */
export type RelayCreditFactory = (pool: PoolConfig, scale: RelayCredit['scale'], retryUs: number) => RelayCredit;

/** UpstreamLeaseView — what a relayed pool holds from the root now: the root's bound, when the relay stops using it (µs), and its fleet weight. */
export interface UpstreamLeaseView {
  readonly pool: string;
  readonly countedTokens: number;
  readonly endUs: number;
  /** Σ weight of its live downstream leases whose agents report demand, at least 1. */
  readonly fleetWeight: number;
}

/** How long a downstream agent refused for want of an upstream lease, or short of tokens, waits before asking again, ms. */
export const RELAY_RETRY_MS = 100;

export class RelayCore<R> {
  readonly core: CoordinatorCore<R>;
  private readonly uplinks = new Map<string, Uplink>();
  private configNow: RelayConfig;
  /** The pool the last `receive` named, or null. */
  private touched: string | null = null;
  /** Uplinks made since the last `takeStartedUplinks`: pool and agent id. */
  private started: { pool: string; agentId: string }[] = [];

  /** RelayCore — serves `config` from `startUs`; new uplinks ask under `identityOf`'s ids; `creditOf` is for simulations only. */
  constructor(
    config: RelayConfig,
    epoch: number,
    startUs: number,
    private readonly identityOf: UplinkIdentitySource,
    creditOf: RelayCreditFactory = (pool, scale, retryUs) => new RelayCredit(scale, pool.name, retryUs),
  ) {
    const credit = (pool: PoolConfig, scale: RelayCredit['scale']): RelayCredit => creditOf(pool, scale, RELAY_RETRY_MS * 1000);
    this.core = new CoordinatorCore<R>(config.downstream, epoch, startUs, false, 'relay', credit);
    this.configNow = config;
  }

  /** config — the configuration served now (replaced by `reconfigure`). */
  get config(): RelayConfig {
    return this.configNow;
  }

  /**
   * reconfigureProblem — why `config` cannot replace the one served without
   * a restart, or null: the prefixes and the uplink settings must stay
   * (every upstream lease and agent id was made under them).
   */
  reconfigureProblem(config: RelayConfig): string | null {
    const was = this.configNow;
    if (config.upstreamPrefix !== was.upstreamPrefix) {
      return `upstreamPrefix changes from ${JSON.stringify(was.upstreamPrefix)} to ${JSON.stringify(config.upstreamPrefix)}: that needs a restart`;
    }
    const keys = Object.keys(was.uplink) as (keyof RelayConfig['uplink'])[];
    const changed = keys.filter((key) => config.uplink[key] !== was.uplink[key]);
    if (changed.length > 0) return `uplink.${changed[0]} changes: uplink settings need a restart`;
    return this.core.reconfigureProblem(config.downstream);
  }

  /**
   * reconfigure — serves `config` from `nowUs` on (call `reconfigureProblem`
   * first): pools added get an uplink at the next `upstream`; a changed
   * pool starts over with a new credit, so a new uplink; a removed one
   * retires and its uplink is no longer renewed (once it has no downstream
   * lease left it is forgotten and its upstream lease returned). Replies to
   * requests held under the old configuration go to `visit` by pool.
   */
  reconfigure(config: RelayConfig, nowUs: number, visit: (pool: string, out: Delivery<R>[]) => void): ReconfigureSummary {
    const problem = this.reconfigureProblem(config);
    if (problem !== null) throw new Error(problem);
    this.configNow = config;
    return this.core.reconfigure(config.downstream, nowUs, visit);
  }

  /** receive — a downstream request: answered exactly as a coordinator answers it. */
  receive(subject: string, payload: Uint8Array, replyTo: R, nowUs: number): Delivery<R>[] {
    this.touched = parseSubject(this.core.config.subjectPrefix, subject)?.pool ?? null;
    return this.core.receive(subject, payload, replyTo, nowUs);
  }

  /**
   * tick — the downstream core's tick, every pool with an uplink made due
   * first: a relay's credit moves with its uplinks (a lease from the root
   * granted, lost or ended), not only with requests and the pools' own
   * deadlines, and a relay already looks at every uplink when it is woken.
   */
  tick(nowUs: number): Delivery<R>[] {
    for (const name of this.uplinks.keys()) this.core.wake(name);
    return this.core.tick(nowUs);
  }

  /**
   * upstream — what is due to the root at `nowUs`: a request at most per
   * pool served (configured or made from a template), and the return of
   * the upstream lease of every pool no longer held (an idle template pool
   * forgotten, a removed pool gone): nothing downstream draws on it.
   */
  upstream(nowUs: number): (LeaseRequest | LeaseReturn)[] {
    const out: (LeaseRequest | LeaseReturn)[] = [];
    for (const held of this.core.held()) {
      if (held.kind !== 'removed') this.poll(held.name, nowUs, out);
    }
    for (const [name, uplink] of this.uplinks) {
      if (this.core.pool(name) !== undefined) continue;
      this.uplinks.delete(name);
      const ret = uplink.returnRequest(0);
      if (ret !== null) out.push(ret);
    }
    return out;
  }

  /** upstreamTouched — the request due to the root at `nowUs` for the pool the last `receive` reached, if any (work independent of the pools held). */
  upstreamTouched(nowUs: number): LeaseRequest[] {
    const out: LeaseRequest[] = [];
    if (this.touched !== null) this.poll(this.touched, nowUs, out);
    return out;
  }

  /** touchedDeadlineUs — when the pool the last `receive` reached, or its uplink, next has work (Infinity: none). */
  touchedDeadlineUs(): number {
    const uplink = this.touched === null ? undefined : this.uplinks.get(this.touched);
    return Math.min(this.core.touchedDeadlineUs(), uplink?.nextDueUs() ?? Infinity);
  }

  private poll(name: string, nowUs: number, out: (LeaseRequest | LeaseReturn)[]): void {
    const found = this.uplinkFor(name);
    const request = found?.uplink.poll(nowUs, viewOf(found.pool)) ?? null;
    if (request !== null) out.push(request);
  }

  /**
   * upstreamReply — the root's reply to `request` at `nowUs` (ignored unless
   * it answers the pool's current uplink's request in flight); returns what
   * it did (for the log) and the downstream replies it lets go (held
   * requests served from a grant).
   */
  upstreamReply(request: LeaseRequest, reply: Reply, nowUs: number): { outcome: UplinkOutcome; out: Delivery<R>[] } {
    const found = this.uplinkFor(request.pool);
    if (found === undefined) return { outcome: { kind: 'ignored' }, out: [] };
    const out = this.core.tick(nowUs);
    const outcome = found.uplink.onReply(reply, nowUs, found.pool.leases.boundTokensSum, request);
    // The pool's credit changed outside a request or a tick: it is made due, so a tick serves (or refuses) its held requests.
    if (outcome.kind !== 'ignored') this.core.wake(request.pool);
    if (outcome.kind === 'granted') out.push(...this.core.tick(nowUs));
    return { outcome, out };
  }

  /** returns — at shutdown, the returns of every upstream lease that no downstream lease still draws on. */
  returns(nowUs: number): LeaseReturn[] {
    this.core.tick(nowUs);
    const out: LeaseReturn[] = [];
    for (const [name, uplink] of this.uplinks) {
      const pool = this.core.pool(name);
      const ret = pool === undefined ? null : uplink.returnRequest(pool.leases.boundTokensSum);
      if (ret !== null) out.push(ret);
    }
    return out;
  }

  /** nextDeadlineUs — when the downstream core or an uplink next has work. */
  nextDeadlineUs(): number {
    let deadline = this.core.nextDeadlineUs();
    for (const uplink of this.uplinks.values()) deadline = Math.min(deadline, uplink.nextDueUs());
    return deadline;
  }

  /** upstreamLeases — every pool served now (not removed) and what it holds from the root. */
  upstreamLeases(): UpstreamLeaseView[] {
    const out: UpstreamLeaseView[] = [];
    for (const held of this.core.held()) {
      const credit = held.pool.parts.credit;
      if (held.kind === 'removed' || !(credit instanceof RelayCredit)) continue;
      const fleetWeight = Math.max(1, held.pool.parts.leases.demandingWeightsSum);
      out.push({ pool: held.name, countedTokens: credit.countedTokens, endUs: credit.leaseEndUs, fleetWeight });
    }
    return out;
  }

  /** takeStartedUplinks — the uplinks made since the last call (pool, agent id), once. */
  takeStartedUplinks(): { pool: string; agentId: string }[] {
    const started = this.started;
    this.started = [];
    return started;
  }

  /** uplinkFor — the pool and its uplink, a new uplink when the pool's credit is not the one the last drew on. */
  private uplinkFor(name: string): { pool: Pool<R>; uplink: Uplink } | undefined {
    const pool = this.core.pool(name);
    if (pool === undefined || !(pool.parts.credit instanceof RelayCredit)) return undefined;
    let uplink = this.uplinks.get(name);
    if (uplink === undefined || uplink.credit !== pool.parts.credit) {
      const identity = this.identityOf(name);
      uplink = new Uplink(pool.config, pool.parts.credit, {
        ...this.configNow.uplink,
        leaseTtlMsMax: LEASE_CLIENT_DEFAULTS.leaseTtlMsMax,
        initialTokens: pool.config.maxLeaseTokens,
        agentId: identity.agentId,
        leaseSecret: identity.leaseSecret,
      });
      this.uplinks.set(name, uplink);
      this.started.push({ pool: name, agentId: identity.agentId });
    }
    return { pool, uplink };
  }
}

function viewOf<R>(pool: Pool<R>): DownstreamView {
  const p = pool.parts;
  return {
    leasedTokens: p.leases.boundTokensSum,
    demandPerSecond: p.leases.demandPerSecondSum,
    waitingTurnsTokens: p.waiters.turnsTokens,
    waiting: p.waiters.size,
    fleetWeight: p.leases.demandingWeightsSum,
    calls: p.tally.callTotals,
  };
}
