/**
 * Uplink: a relay's chunk lease from the root for one pool, as the relay,
 * an agent toward the root, keeps it (docs/design.md, "Relays"). Pure: the
 * adapter sends what `poll` returns and hands back what comes.
 *
 * Rules:
 * - One agent id and lease secret per relay incarnation: a relay that
 *   restarts opens a new lease, and the root counts the old one until it
 *   expires there.
 * - `tokensLeft` is `level + Σ downstream bounds` (RelayCredit): never less
 *   than what the subtree may still spend, or the root would count too little.
 * - Under a class (`agentClass`), a request states the relay's fleet
 *   weight, Σ the weights of its live downstream leases whose agents
 *   report demand (at least 1): a root that lists the class in
 *   `relayClasses` weighs the relay as that fleet.
 * - `tokensWanted` tops the level up to what the downstream agents' reported
 *   demand needs over `refreshMs`, plus the turns of held requests (at least
 *   `initialTokens`, so a relay with no agent yet has something to start on).
 * - A retry (no reply within the hold plus `replyTimeoutMs`) repeats the
 *   request, seq and first-send instant alike; one older than half the lease
 *   TTL is given up, and the next request takes a new seq.
 * - A relay is an agent toward the root: the lease client's rules
 *   (@tokenlease/shared, lease-client*.ts) are its rules. A reply is
 *   checked by the lease client's grant check, and against the relay's
 *   pool: the root's capacity and refill must be the ones configured, a
 *   chunk lease, not in shadow mode. A refused or mismatched reply changes
 *   nothing but the backoff. The lease ends at the lease client's expiry
 *   (first send + TTL × (1 − drift margin)); a stale-sequence refusal's
 *   floor is the next request's, as for an agent.
 * - The lease is renewed every TTL/3, and sooner when requests are held or
 *   the level falls below a quarter of its target (at most every `gapMs`,
 *   or after a grant short of its ask when the root says tokens accrue,
 *   `retryAfterMs`) while the root's lease limit leaves room for more: a
 *   relay whose agents hold the whole lease asks on its schedule, not every
 *   gap. A relay short of tokens asks to be held, as an agent does, so it
 *   keeps its place in the root's turns.
 * - Each acquire tells the root the calls the downstream agents reported
 *   since the last acquire the root granted (shared calls.ts), so the
 *   root's operators see the whole fleet's admissions and denials.
 */
import {
  clientLeaseEndUs,
  FLEET_WEIGHT_MAX,
  grantProblem,
  seqAbove,
  staleSeqFloor,
  WIRE_TOKENS_MAX,
  NO_CALLS,
  type CallCounts,
  type LeaseGrant,
  type LeaseRequest,
  type LeaseReturn,
  type Reply,
} from '@tokenlease/shared';
import type { PoolConfig } from './config.js';
import type { RelayCredit } from './relay-credit.js';

const US_PER_MS = 1000;

export interface UplinkOptions {
  readonly agentId: string;
  /** 22 to 128 base64url characters; never logged. */
  readonly leaseSecret: string;
  /** Fraction of the TTL cut from the lease's end, as an agent's keeper does. */
  readonly driftMargin: number;
  readonly refreshMs: number;
  /** How long the root may hold a request. */
  readonly holdMs: number;
  readonly replyTimeoutMs: number;
  /** The longest TTL a grant may carry (the lease client's check). */
  readonly leaseTtlMsMax: number;
  /** The class to ask under (a root pool listing it in `relayClasses` weighs the relay by its fleet weight); null or absent: none. */
  readonly agentClass?: string | null;
  /** What to ask for at least. */
  readonly initialTokens: number;
  /** Shortest gap between two requests that were not due, ms. */
  readonly gapMs: number;
}

/** DownstreamView — what the relayed pool shows the uplink: its downstream bounds, demand and held turns. */
export interface DownstreamView {
  readonly leasedTokens: number;
  readonly demandPerSecond: number;
  readonly waitingTurnsTokens: number;
  readonly waiting: number;
  /** Σ weight over the live downstream leases whose agents report demand: the fleet the relay speaks for. */
  readonly fleetWeight: number;
  /** The calls the downstream agents reported since the relayed pool was made. */
  readonly calls: CallCounts;
}

/** UplinkOutcome — what a reply did, for the adapter's log. */
export type UplinkOutcome =
  | {
      readonly kind: 'granted';
      readonly leaseId: string;
      readonly tokensGranted: number;
      readonly tokensHeld: number;
      readonly ttlMs: number;
    }
  | { readonly kind: 'refused'; readonly problem: string }
  | { readonly kind: 'error'; readonly code: string; readonly message: string; readonly retryAfterMs: number }
  | { readonly kind: 'ignored' };

interface InFlight {
  readonly request: LeaseRequest;
  readonly firstSendUs: number;
  lastSendUs: number;
}

export class Uplink {
  private seq = 0;
  /** The floor a stale-sequence refusal named: the next request goes above it (0: none). */
  private seqFloor = 0;
  private inFlight: InFlight | null = null;
  private dueUs = 0;
  private quietUntilUs = 0;
  /** Whether the level was below a quarter of its target, with room in the lease for more, at the last `poll` (then it asks again as soon as it may). */
  private low = false;
  /** The most the root lets one lease hold, as its last grant said (Infinity before any). */
  private leaseLimitTokens = Infinity;
  /** The downstream calls the root has been told (as of the last granted acquire). */
  private toldCalls: CallCounts = NO_CALLS;

  constructor(
    private readonly pool: PoolConfig,
    readonly credit: RelayCredit,
    private readonly options: UplinkOptions,
  ) {}

  /** nextDueUs — when `poll` may next have something to send (a retry, a renewal). */
  nextDueUs(): number {
    const f = this.inFlight;
    if (f !== null) return f.lastSendUs + (this.options.holdMs + this.options.replyTimeoutMs) * US_PER_MS;
    return Math.max(this.quietUntilUs, this.low ? 0 : Math.min(this.dueUs, this.credit.leaseEndUs));
  }

  /** poll — the request to send at `nowUs` (a new one, or a retry of the one in flight), or null. */
  poll(nowUs: number, view: DownstreamView): LeaseRequest | null {
    const f = this.inFlight;
    if (f !== null) {
      if (nowUs < this.nextDueUs()) return null;
      if (nowUs - f.firstSendUs < (this.pool.leaseTtlMs * US_PER_MS) / 2) {
        f.lastSendUs = nowUs;
        return f.request;
      }
      this.inFlight = null;
    }
    if (nowUs < this.quietUntilUs) return null;
    const target = this.targetTokens(view);
    // What the root could still add: its lease limit less what the subtree holds of the lease.
    const roomTokens = Math.max(0, this.leaseLimitTokens - view.leasedTokens - this.credit.levelTokens);
    const wantTokens = Math.min(Math.max(0, target - this.credit.levelTokens), roomTokens);
    this.low = wantTokens > 0 && this.credit.levelTokens * 4 < target;
    if (nowUs < this.dueUs && view.waiting === 0 && !this.low) return null;
    const { leaseId, tokensLeft } = this.credit.upstreamReport(view.leasedTokens);
    const request: LeaseRequest = {
      v: 2,
      op: 'acquire',
      agentId: this.options.agentId,
      pool: this.pool.name,
      leaseSecret: this.options.leaseSecret,
      seq: this.takeSeq(),
      leaseId,
      tokensLeft,
      tokensWanted: Math.min(WIRE_TOKENS_MAX, wantTokens),
      demandPerSecond: view.demandPerSecond,
      holdMs: view.waiting > 0 || this.low ? this.options.holdMs : 0,
      ...(this.options.agentClass ? { agentClass: this.options.agentClass, fleetWeight: fleetWeightOf(view) } : {}),
      ...this.callsField(view.calls),
      clockMs: Math.floor(nowUs / US_PER_MS),
    };
    this.inFlight = { request, firstSendUs: nowUs, lastSendUs: nowUs };
    return request;
  }

  /** onReply — handles the root's reply at `nowUs` beside `leasedTokens` of downstream bounds; `answers`: the request it answers. */
  onReply(reply: Reply, nowUs: number, leasedTokens: number, answers?: LeaseRequest): UplinkOutcome {
    const f = this.inFlight;
    if (f === null || !('seq' in reply) || reply.seq !== f.request.seq) return { kind: 'ignored' };
    // A reply to another uplink's request (of a pool restarted since) may carry the same seq.
    if (answers !== undefined && answers !== f.request) return { kind: 'ignored' };
    if (reply.kind === 'error') {
      this.inFlight = null;
      this.seqFloor = Math.max(this.seqFloor, staleSeqFloor(reply) ?? 0);
      this.quietUntilUs = nowUs + Math.max(this.options.gapMs, reply.retryAfterMs) * US_PER_MS;
      return { kind: 'error', code: reply.code, message: reply.message, retryAfterMs: reply.retryAfterMs };
    }
    if (reply.kind !== 'grant') return this.refuse(nowUs, `answers an acquire with a ${reply.kind}`);
    // Capacity 0: every grant is checked against the configured capacity below, a stricter rule than "the same as the last".
    const problem = grantProblem(reply, f.request, this.options, 0) ?? this.poolProblem(reply);
    if (problem !== null) return this.refuse(nowUs, problem);
    const endUs = clientLeaseEndUs(f.firstSendUs, reply.ttlMs, this.options.driftMargin);
    const grant = { leaseId: reply.leaseId, tokensGranted: reply.tokensGranted, tokensHeld: reply.tokensHeld, endUs };
    const creditProblem = this.credit.grantProblem(grant, leasedTokens);
    if (creditProblem !== null) return this.refuse(nowUs, creditProblem);
    this.inFlight = null;
    const told = f.request.calls ?? NO_CALLS;
    this.toldCalls = {
      admitted: this.toldCalls.admitted + told.admitted,
      denied: this.toldCalls.denied + told.denied,
      shadowDenied: this.toldCalls.shadowDenied + told.shadowDenied,
    };
    this.credit.applyGrant(grant, leasedTokens, nowUs);
    this.leaseLimitTokens = reply.maxLeaseTokens;
    this.dueUs = nowUs + Math.floor((reply.ttlMs * US_PER_MS) / 3);
    // Short of what it asked, it asks again when the root expects tokens, as an agent does, to keep its place in the turns.
    this.quietUntilUs = nowUs + (reply.retryAfterMs > 0 ? reply.retryAfterMs : this.options.gapMs) * US_PER_MS;
    const { leaseId, tokensGranted, tokensHeld, ttlMs } = reply;
    return { kind: 'granted', leaseId, tokensGranted, tokensHeld, ttlMs };
  }

  /**
   * returnRequest — the return that gives the lease back at shutdown, or
   * null: only a lease with no downstream lease left is returned (their
   * agents may still spend; the root counts them until its lease expires).
   */
  returnRequest(leasedTokens: number): LeaseReturn | null {
    const { leaseId, tokensLeft } = this.credit.upstreamReport(leasedTokens);
    if (leaseId === null || leasedTokens > 0) return null;
    const seq = this.takeSeq();
    this.inFlight = null;
    this.credit.lapse();
    const { agentId, leaseSecret } = this.options;
    return { v: 2, op: 'return', agentId, pool: this.pool.name, leaseSecret, seq, leaseId, tokensLeft };
  }

  /** callsField — the `calls` field of an acquire: the downstream calls of `totals` not yet told, or nothing. */
  private callsField(totals: CallCounts): { calls?: CallCounts } {
    const told = this.toldCalls;
    const calls = {
      admitted: Math.max(0, totals.admitted - told.admitted),
      denied: Math.max(0, totals.denied - told.denied),
      shadowDenied: Math.max(0, totals.shadowDenied - told.shadowDenied),
    };
    return calls.admitted > 0 || calls.denied > 0 || calls.shadowDenied > 0 ? { calls } : {};
  }

  /** takeSeq — the next sequence number, above any floor the root named. */
  private takeSeq(): number {
    this.seq = seqAbove(this.seq, this.seqFloor);
    this.seqFloor = 0;
    return this.seq;
  }

  /** targetTokens — what the relay would like in its level: its agents' demand over a refresh interval, within the root's lease limit. */
  private targetTokens(view: DownstreamView): number {
    const demandTokens = Math.ceil((view.demandPerSecond * this.options.refreshMs) / 1000);
    const target = Math.max(this.options.initialTokens, demandTokens + view.waitingTurnsTokens);
    return Math.min(this.pool.capacity, this.leaseLimitTokens, target);
  }

  private refuse(nowUs: number, problem: string): UplinkOutcome {
    this.inFlight = null;
    this.quietUntilUs = nowUs + Math.max(this.options.gapMs, this.options.replyTimeoutMs) * US_PER_MS;
    return { kind: 'refused', problem };
  }

  /** poolProblem — why `g`, plausible as a grant, is not one for this relay's pool (null: it is). */
  private poolProblem(g: LeaseGrant): string | null {
    const p = this.pool;
    if (g.capacityTokens !== p.capacity || g.refillTokens !== p.refill.tokens || g.refillPeriodMs !== p.refill.periodMs) {
      return `names capacity ${g.capacityTokens} and refill ${g.refillTokens}/${g.refillPeriodMs} ms; this relay serves ${p.capacity} and ${p.refill.tokens}/${p.refill.periodMs} ms`;
    }
    if (g.rate !== undefined || g.shadow === true) return 'is a rate lease or in shadow mode, which a relay does not serve';
    return null;
  }
}

/** fleetWeightOf — the fleet weight a request states: Σ downstream weights, within [1, FLEET_WEIGHT_MAX]. */
function fleetWeightOf(view: DownstreamView): number {
  return Math.max(1, Math.min(FLEET_WEIGHT_MAX, Math.round(view.fleetWeight)));
}
