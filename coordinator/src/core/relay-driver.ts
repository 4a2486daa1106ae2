/**
 * RelayDriver: what drives a relay (docs/design.md, "Relays"), as a pure
 * state machine in the manner of a protocol driver: events in (a
 * downstream request, the root's reply or its absence, a tick, a
 * reconfiguration, stop), commands out (reply downstream, send upstream
 * with its timeout, log, count an upstream outcome, report pool faults,
 * wake at t). The NATS service (adapters/relay-service.ts) and the
 * simulator (test/sim relays.ts) run this same driver; each only carries
 * its commands out. No clock, no I/O, no randomness: the time is each
 * event's `nowUs`, the uplinks' ids come from the identity source.
 *
 * Rules:
 * - A downstream request is answered as a coordinator answers it; then
 *   only the pool it reached asks the root (work per request does not grow
 *   with the pools held), and the next wake is that pool's deadline.
 * - A tick lets go what the downstream core holds due, notes lapsed
 *   upstream leases, sends what is due to the root for every pool, and
 *   wakes at the core's next deadline.
 * - An upstream request waits `holdMs + replyTimeoutMs` for its reply (the
 *   root may hold it), a return `replyTimeoutMs`; an unanswered one is
 *   counted and logged at debug, and the uplink retries on its own schedule.
 * - A reply is handed to the pool's uplink only for an acquire and before
 *   `stop`; the root's receipt of a return changes nothing here. Bytes off
 *   the bus that decode to no reply are dropped unanswered and uncounted:
 *   the uplink asks again on its own schedule, as after a timeout.
 * - A pool's upstream lease that ends unrenewed is logged once
 *   (`upstream-lost`); its agents then get `unavailable` until a new lease
 *   comes. A grant under a lease id new for the pool is logged at info, a
 *   renewal at debug; a refusal at warn. Lease secrets are never logged.
 * - `stop` answers every held request and returns each upstream lease no
 *   downstream lease draws on; replies after it are ignored.
 */
import { decodeReply, type LeaseRequest, type LeaseReturn, type Reply } from '@tokenlease/shared';
import type { PoolFault } from './coordinator-core.js';
import type { Delivery } from './pool.js';
import type { ReconfigureSummary } from './pool-registry.js';
import type { RelayConfig } from './relay-config.js';
import { RelayCore, type RelayCreditFactory, type UplinkIdentitySource } from './relay-core.js';
import type { UplinkOutcome } from './uplink.js';

/** UpstreamOutcome — how one upstream request ended. */
export type UpstreamOutcome = 'granted' | 'refused' | 'error' | 'unanswered';

/** RelayLog — a log line: level, structured fields (`event` first) and a message. */
export interface RelayLog {
  readonly level: 'debug' | 'info' | 'warn';
  readonly fields: { readonly event: string } & Readonly<Record<string, unknown>>;
  readonly message: string;
}

/** RelayCommand — what the adapter carries out, in order. */
export type RelayCommand<R> =
  /** Deliver replies downstream; `where` names what they answer, for the reply log. */
  | { readonly kind: 'reply'; readonly deliveries: Delivery<R>[]; readonly where?: { readonly pool?: string; readonly subject?: string } }
  /** Send `message` to the root and feed back its reply (`upstreamReply`) or its absence after `timeoutMs` (`upstreamFailed`). */
  | { readonly kind: 'send-upstream'; readonly message: LeaseRequest | LeaseReturn; readonly timeoutMs: number }
  | { readonly kind: 'log'; readonly log: RelayLog }
  /** An upstream request for `pool` ended as `outcome` (the relay's metrics). */
  | { readonly kind: 'upstream-outcome'; readonly pool: string; readonly outcome: UpstreamOutcome }
  /** Pool faults the downstream core contained, to log. */
  | { readonly kind: 'faults'; readonly faults: PoolFault[] }
  /** Call `tick` at `atUs` at the latest (Infinity: no deadline); an earlier wake already set stays. */
  | { readonly kind: 'wake'; readonly atUs: number };

/** RelayDriverOptions — a relay's configuration, epoch and start, where its uplinks' ids come from, and (simulations only) its credits. */
export interface RelayDriverOptions {
  readonly config: RelayConfig;
  readonly epoch: number;
  readonly startUs: number;
  readonly identityOf: UplinkIdentitySource;
  readonly creditOf?: RelayCreditFactory;
}

export class RelayDriver<R> {
  readonly relay: RelayCore<R>;
  /** Pools whose upstream lease was live at the last look: a lapse is logged once. */
  private readonly live = new Set<string>();
  /** The upstream lease id of each pool's last grant: a new one is news, a renewal is not. */
  private readonly leaseOf = new Map<string, string>();
  private stopped = false;

  constructor(options: RelayDriverOptions) {
    const { config, epoch, startUs, identityOf, creditOf } = options;
    this.relay = new RelayCore<R>(config, epoch, startUs, identityOf, creditOf);
  }

  /** serving — false once `stop` was called. */
  get serving(): boolean {
    return !this.stopped;
  }

  /** start — the first requests to the root, and the first wake. */
  start(nowUs: number): RelayCommand<R>[] {
    const out: RelayCommand<R>[] = [];
    this.sendUpstream(this.relay.upstream(nowUs), out);
    return this.finish(out, this.relay.nextDeadlineUs());
  }

  /** request — a downstream request on `subject`, its reply to go to `replyTo`. */
  request(subject: string, payload: Uint8Array, replyTo: R, nowUs: number): RelayCommand<R>[] {
    if (this.stopped) return [];
    const out: RelayCommand<R>[] = [
      { kind: 'reply', deliveries: this.relay.receive(subject, payload, replyTo, nowUs), where: { subject } },
    ];
    this.faults(out);
    this.sendUpstream(this.relay.upstreamTouched(nowUs), out);
    return this.finish(out, this.relay.touchedDeadlineUs());
  }

  /** tick — a wake: due deliveries, lapses, what is due to the root. */
  tick(nowUs: number): RelayCommand<R>[] {
    if (this.stopped) return [];
    const out: RelayCommand<R>[] = [{ kind: 'reply', deliveries: this.relay.tick(nowUs) }];
    this.noteLapses(nowUs, out);
    this.sendUpstream(this.relay.upstream(nowUs), out);
    this.faults(out);
    return this.finish(out, this.relay.nextDeadlineUs());
  }

  /** upstreamReply — the root's reply to `message`, one a `send-upstream` command sent. */
  upstreamReply(message: LeaseRequest | LeaseReturn, reply: Reply, nowUs: number): RelayCommand<R>[] {
    if (this.stopped || message.op !== 'acquire') return [];
    const { outcome, out: deliveries } = this.relay.upstreamReply(message, reply, nowUs);
    const out: RelayCommand<R>[] = [];
    this.noteOutcome(message.pool, outcome, out);
    out.push({ kind: 'reply', deliveries });
    this.noteLapses(nowUs, out);
    return this.finish(out, this.relay.nextDeadlineUs());
  }

  /** upstreamAnswer — the root's reply to `message` as the bus brought it: decoded, then as `upstreamReply`; bytes that decode to no reply give nothing. */
  upstreamAnswer(message: LeaseRequest | LeaseReturn, bytes: Uint8Array, nowUs: number): RelayCommand<R>[] {
    const decoded = decodeReply(bytes);
    return decoded.ok ? this.upstreamReply(message, decoded.value, nowUs) : [];
  }

  /** upstreamFailed — no reply to `message` within its timeout (or the bus failed); `error` is logged as the cause. */
  upstreamFailed(message: LeaseRequest | LeaseReturn, error: unknown): RelayCommand<R>[] {
    const out: RelayCommand<R>[] = [];
    if (message.op === 'acquire') out.push({ kind: 'upstream-outcome', pool: message.pool, outcome: 'unanswered' });
    out.push(log('debug', { event: 'upstream-unanswered', pool: message.pool, err: error }, 'no upstream reply'));
    return out;
  }

  /**
   * reconfigure — serves `config` from `nowUs` (RelayCore.reconfigure:
   * call `relay.reconfigureProblem` first); replies to requests held under
   * the old configuration go out by pool.
   */
  reconfigure(config: RelayConfig, nowUs: number): { summary: ReconfigureSummary; commands: RelayCommand<R>[] } {
    const out: RelayCommand<R>[] = [];
    const summary = this.relay.reconfigure(config, nowUs, (pool, deliveries) => out.push({ kind: 'reply', deliveries, where: { pool } }));
    this.noteLapses(nowUs, out);
    this.sendUpstream(this.relay.upstream(nowUs), out);
    return { summary, commands: this.finish(out, this.relay.nextDeadlineUs()) };
  }

  /** stop — answers every held request, and returns each upstream lease no downstream lease draws on; nothing is driven after. */
  stop(nowUs: number): RelayCommand<R>[] {
    if (this.stopped) return [];
    this.stopped = true;
    const out: RelayCommand<R>[] = [{ kind: 'reply', deliveries: this.relay.core.flush(nowUs) }];
    this.sendUpstream(this.relay.returns(nowUs), out);
    return out;
  }

  private sendUpstream(messages: readonly (LeaseRequest | LeaseReturn)[], out: RelayCommand<R>[]): void {
    const { holdMs, replyTimeoutMs } = this.relay.config.uplink;
    for (const message of messages) {
      out.push({ kind: 'send-upstream', message, timeoutMs: message.op === 'acquire' ? holdMs + replyTimeoutMs : replyTimeoutMs });
    }
  }

  /** finish — the uplinks made meanwhile logged, faults reported, and the wake at `atUs`. */
  private finish(out: RelayCommand<R>[], atUs: number): RelayCommand<R>[] {
    for (const { pool, agentId } of this.relay.takeStartedUplinks()) {
      out.push(log('info', { event: 'uplink-started', pool, agentId }, 'new upstream agent id for a pool'));
    }
    this.faults(out);
    out.push({ kind: 'wake', atUs });
    return out;
  }

  private faults(out: RelayCommand<R>[]): void {
    const faults = this.relay.core.takeFaults();
    if (faults.length > 0) out.push({ kind: 'faults', faults });
  }

  /** noteLapses — every pool served whose upstream lease ended unrenewed is logged once; pools no longer served are forgotten. */
  private noteLapses(nowUs: number, out: RelayCommand<R>[]): void {
    const held = new Set<string>();
    for (const { pool, endUs } of this.relay.upstreamLeases()) {
      held.add(pool);
      if (endUs > nowUs) this.live.add(pool);
      else if (this.live.delete(pool)) out.push(log('warn', { event: 'upstream-lost', pool }, 'upstream lease ended unrenewed'));
    }
    for (const pool of this.live) if (!held.has(pool)) this.live.delete(pool);
    for (const pool of this.leaseOf.keys()) if (!held.has(pool)) this.leaseOf.delete(pool);
  }

  private noteOutcome(pool: string, outcome: UplinkOutcome, out: RelayCommand<R>[]): void {
    if (outcome.kind === 'ignored') return;
    out.push({ kind: 'upstream-outcome', pool, outcome: outcome.kind });
    if (outcome.kind === 'granted') {
      const { leaseId, tokensGranted, tokensHeld, ttlMs } = outcome;
      const fresh = this.leaseOf.get(pool) !== leaseId;
      this.leaseOf.set(pool, leaseId);
      out.push(
        log(fresh ? 'info' : 'debug', { event: 'upstream-lease', pool, leaseId, tokensGranted, tokensHeld, ttlMs }, 'upstream grant'),
      );
    } else if (outcome.kind === 'refused') {
      out.push(log('warn', { event: 'upstream-refused', pool, problem: outcome.problem }, 'refused an implausible upstream grant'));
    } else {
      const { code, message, retryAfterMs } = outcome;
      out.push(log('warn', { event: 'upstream-refused', pool, code, reason: message, retryAfterMs }, 'the root refused a request'));
    }
  }
}

function log<R>(level: RelayLog['level'], fields: RelayLog['fields'], message: string): RelayCommand<R> {
  return { kind: 'log', log: { level, fields, message } };
}
