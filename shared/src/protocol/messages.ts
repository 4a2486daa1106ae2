/**
 * Messages of protocol v2. Requests go agent → coordinator on
 * `<prefix>.v2.<op>.<pool>.<identity>`; every request gets exactly one
 * reply, except a usage report, which is published and answered by nothing.
 *
 * Only durations cross the wire (`ttlMs`, `holdMs`, `retryAfterMs`), never a
 * clock reading to act on: each side measures time on its own monotonic
 * clock. The one reading that travels, an acquire's `clockMs`, is compared
 * only with the same agent's earlier ones: the coordinator measures how fast
 * the agent's clock runs against its own (docs/design.md, "Clocks").
 *
 * What v2 adds to v1: every message about a lease carries the agent's
 * `leaseSecret` (at least 128 random bits the agent draws once per pool),
 * and the coordinator binds each lease to the secret of the request that
 * opened it, so nobody else can renew, return or report it; the identity
 * token in the subject; the pool's refill in every grant; `forbidden`
 * refusals; `seqFloor` on `stale-sequence`.
 */
import type { CallCounts } from './calls.js';
import type { PoolList, PoolsQuery, ReloadCommand, ReloadOutcome } from './operator.js';
import type { Op } from './subjects.js';

/** LeaseRequest — acquire a lease, or renew and top up the one held, reporting what is left of it. */
export interface LeaseRequest {
  readonly v: 2;
  readonly op: 'acquire';
  readonly agentId: string;
  readonly pool: string;
  /** The agent's secret for this pool; the lease it opens is bound to it. Never logged, stored only by the coordinator. */
  readonly leaseSecret: string;
  /** Per-agent sequence number; a retry repeats it and gets the original reply. */
  readonly seq: number;
  /** The lease held, or null. */
  readonly leaseId: string | null;
  /** Unspent tokens of `leaseId` when the request was sent; 0 without a lease. */
  readonly tokensLeft: number;
  /** Tokens wanted on top of `tokensLeft`; 0 renews without topping up. */
  readonly tokensWanted: number;
  /** Recent demand, tokens per second (admitted, denied and waiting). */
  readonly demandPerSecond: number;
  /** How long the coordinator may hold the request while a worthwhile grant accrues, ms. */
  readonly holdMs: number;
  /** The agent's class, weighted by the pool's `classWeights`; absent: weight 1. */
  readonly agentClass?: string;
  /**
   * The weight of the fleet the request speaks for: a relay states the sum
   * of the weights of its live downstream leases whose agents report
   * demand. Counted only for a class the
   * pool lists in `relayClasses`, up to the most it allows; absent: 1.
   */
  readonly fleetWeight?: number;
  /** Calls the agent decided since its last request answered with a grant or receipt (calls.ts); absent: none. */
  readonly calls?: CallCounts;
  /**
   * The agent's monotonic clock when it sent the request, whole ms from an
   * origin of its own (a retry repeats it). Only the difference between two
   * of one agent's readings means anything: against the coordinator's own
   * elapsed time it shows a clock running outside the agents' drift margin.
   * Absent: the coordinator cannot check this agent's clock.
   */
  readonly clockMs?: number;
}

/**
 * LeaseReturn — give back the unspent tokens of a lease and end it. The
 * coordinator's memory of the agent ends with the lease, so a repeated
 * return finds nothing and returns 0 tokens: never twice the tokens.
 */
export interface LeaseReturn {
  readonly v: 2;
  readonly op: 'return';
  readonly agentId: string;
  readonly pool: string;
  readonly leaseSecret: string;
  readonly seq: number;
  readonly leaseId: string;
  readonly tokensLeft: number;
  /** Calls the agent decided since its last request answered with a grant or receipt (calls.ts); absent: none. */
  readonly calls?: CallCounts;
}

/**
 * LeaseReport — a usage report between renewals: "lease L has `tokensLeft`
 * left". Published, never answered. The coordinator lowers the lease's
 * bound to it (never raises it) only when `seq` is newer than the last
 * acquire or return it handled for the agent; an agent sends one only while
 * no request of its own is in flight, so the report counts every grant.
 */
export interface LeaseReport {
  readonly v: 2;
  readonly op: 'report';
  readonly agentId: string;
  readonly pool: string;
  readonly leaseSecret: string;
  readonly seq: number;
  readonly leaseId: string;
  readonly tokensLeft: number;
}

/** StatusQuery — read a pool's credit, and one agent's lease when `agentId` is given; changes nothing. */
export interface StatusQuery {
  readonly v: 2;
  readonly op: 'status';
  readonly pool: string;
  readonly agentId?: string;
}

/** AgentLease — what the coordinator holds for one agent: lease, bound and time left. */
export interface AgentLease {
  readonly leaseId: string;
  readonly tokensHeld: number;
  readonly expiresInMs: number;
}

/** Request — every request of protocol v2, told apart by `op`. */
export type Request = LeaseRequest | LeaseReturn | LeaseReport | StatusQuery | PoolsQuery | ReloadCommand;

/**
 * LeaseRate — what makes a lease a rate (trickle) lease: the agent's
 * balance grows by `tokensPerPeriod` every `periodMs` (continuously, in
 * whole µs) from the moment the reply arrives, never above `capTokens`.
 */
export interface LeaseRate {
  readonly tokensPerPeriod: number;
  readonly periodMs: number;
  readonly capTokens: number;
}

/** LeaseGrant — the lease after this request: id, tokens added, TTL and the pool's limits. */
export interface LeaseGrant {
  readonly v: 2;
  readonly kind: 'grant';
  readonly seq: number;
  readonly leaseId: string;
  /** Tokens added by this reply (0 when nothing accrued within the hold). */
  readonly tokensGranted: number;
  /** The coordinator's bound on the lease after this reply. */
  readonly tokensHeld: number;
  /** Lease lifetime from the moment the request was sent, before the agent's drift margin. */
  readonly ttlMs: number;
  readonly epoch: number;
  readonly maxLeaseTokens: number;
  readonly capacityTokens: number;
  /** The pool's refill: `refillTokens` every `refillPeriodMs` (its quota and window). */
  readonly refillTokens: number;
  readonly refillPeriodMs: number;
  /** Present when the pool has an allowance A > 0: the fleet's promise is B + A + r·T. */
  readonly allowanceTokens?: number;
  /** Present and true for a sliding-window pool: at most `capacityTokens` in every window of `refillPeriodMs`. */
  readonly window?: boolean;
  /**
   * Present for a concurrency pool: each token is a slot, and a request holds
   * one at most this long, ms, on the agent's clock before its drift margin
   * (the agent counts it released then, whatever the work does).
   */
  readonly holdMs?: number;
  /**
   * Present on a concurrency pool's grant to a lease above its fair share
   * while others wait: the most slots (free and busy) the lease may keep
   * from now on; the agent gives the rest back as their requests end.
   */
  readonly slotsMax?: number;
  /** When `tokensGranted` fell short, the estimated wait before asking again; else 0. */
  readonly retryAfterMs: number;
  /** Present for a rate lease: the balance also accrues at this rate up to its cap. */
  readonly rate?: LeaseRate;
  /** Present and true while the pool is in shadow mode: agents admit, and count what they would have denied. */
  readonly shadow?: boolean;
  /** Present when the coordinator signs its grants: Ed25519 over the grant and its request, base64url (grant-signature.ts). */
  readonly sig?: string;
}

/** ReturnReceipt — the tokens a return moved back into the pool. */
export interface ReturnReceipt {
  readonly v: 2;
  readonly kind: 'receipt';
  readonly seq: number;
  readonly tokensReturned: number;
}

/** PoolStatus — a pool's credit as the coordinator sees it now. */
export interface PoolStatus {
  readonly v: 2;
  readonly kind: 'status';
  readonly pool: string;
  readonly epoch: number;
  readonly capacityTokens: number;
  /** Whole tokens in the pool's level. */
  readonly levelTokens: number;
  /** Sum of the bounds of live leases. */
  readonly leasedTokens: number;
  readonly leases: number;
  readonly waiting: number;
  /** Ms until the pool grants again after a restart; 0 when it grants now. */
  readonly quietMs: number;
  /** Calls the pool's agents told this coordinator they decided since it made the pool (calls.ts); absent from older coordinators. */
  readonly calls?: CallCounts;
  /** The asked-for agent's lease, or null when it holds none; absent when no agent was asked for. */
  readonly agentLease?: AgentLease | null;
}

/** ErrorCode — why a coordinator refused a request (an ErrorReply's `code`). */
export type ErrorCode =
  | 'bad-request'
  | 'unsupported-version'
  | 'unknown-pool'
  | 'stale-sequence'
  | 'forbidden'
  | 'not-owner'
  | 'unavailable'
  | 'clock-drift'
  | 'internal';

/** ErrorReply — a typed refusal. `fault: 'peer'` means the request was wrong; `coordinator` means we failed. */
export interface ErrorReply {
  readonly v: 2;
  readonly kind: 'error';
  readonly seq: number | null;
  readonly code: ErrorCode;
  readonly fault: 'peer' | 'coordinator';
  readonly message: string;
  readonly retryAfterMs: number;
  /** On `stale-sequence`: the last sequence number the coordinator handled for the agent; ask again above it. */
  readonly seqFloor?: number;
}

/** Reply — every reply of protocol v2, told apart by `kind`. */
export type Reply = LeaseGrant | ReturnReceipt | PoolStatus | ErrorReply | PoolList | ReloadOutcome;

/** RequestOf — the request of the op `O`. */
export type RequestOf<O extends Op> = Extract<Request, { op: O }>;
