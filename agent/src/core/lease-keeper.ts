/**
 * LeaseKeeper: keeps one agent's lease on one pool topped up, as a pure
 * state machine (events and `nowUs` in, send actions out, and the next
 * instant it wants a tick). It holds the lease; the rules of each concern
 * are kept by the part named beside it.
 *
 * Rules:
 * - One request in flight at a time, retried with the same sequence, backed
 *   off after failures (request-cycle.ts).
 * - The agent-side expiry is `first send of that sequence + TTL·(1 − drift
 *   margin)`: the coordinator's expiry starts when it granted, which is
 *   later, so the agent always stops spending first. At or after it a tick
 *   drops the lease.
 * - Every acquire reports the unspent balance at send time. A grant under a
 *   new lease id replaces the balance (the old lease is gone on the
 *   coordinator); under the same id it adds to what is left. A grant that
 *   says the pool is short (`retryAfterMs`) defers the next ask that long,
 *   but not past the renewal.
 * - Ask before running dry, for demand over `refreshMs` (demand-watch.ts).
 * - Renew shortly before expiry (round-trip.ts) while in use; return the
 *   balance after `idleReturnMs` without use (demand-watch.ts), and on
 *   close. A return zeroes the local balance before it is sent.
 * - A rate lease (the grant carries a rate) fills by itself: it renews once
 *   per `refreshMs` (sooner when demand doubled), stops accruing when it
 *   sends and accrues again from the reply's arrival (rate-renewal.ts).
 * - Every acquire and return tells the calls decided since the last one
 *   answered (call-reports.ts), for operators.
 * - Usage reports (`reportMs`) tell a chunk lease's balance between
 *   renewals, only while nothing is in flight (usage-report.ts).
 * - Every message about a lease carries the agent's secret. A `forbidden`
 *   refusal means a lease under another secret holds this agent id (a
 *   client that took the id while this keeper held no lease, or a previous
 *   incarnation that used the same id): the keeper moves to a fresh id,
 *   `<agentId>.~<random>` (moved-id.ts: no one who knows the agent's id can
 *   hold it in advance), and asks again after the shortest back-off,
 *   instead of waiting for that lease to lapse. A `stale-sequence` refusal names the
 *   floor to ask above, and the next request goes at once above it.
 * - Whatever tells the coordinator the balance (an acquire, a report, a
 *   return) or changes the lease (a new one installed, one ended) starts a
 *   new told generation of the slot (`told()`): a take of an earlier one is
 *   never given back (lease-slot.ts, refunds).
 * - A grant no honest coordinator would send is refused as an error and
 *   changes nothing (the lease client's check, @tokenlease/shared). With
 *   `expectedLimits`, so is one beyond the limits the agent was configured
 *   to expect, or beyond what such a pool could have granted by then
 *   (grant-budget.ts: what the keeper gives back unspent counts back).
 *   With a grant verifier (the agent's public keys), so is a grant not
 *   signed for this request by one of them (shared grant-signature.ts).
 * - Every mode a grant carries (its shadow flag, its rate, the largest
 *   cost it fits) lives and dies with its lease: at the lease's expiry or
 *   return the slot enforces, accrues nothing and refuses no cost as
 *   `never-fits`, until the next grant says again. The pool's limits shown
 *   to callers (`limits`: capacity, largest lease, refill) are the last
 *   grant's, null before the first; they inform headers and waits, never
 *   an admission. An `unknown-pool` refusal marks the
 *   slot (its denials say so) until a grant arrives, and is news once per
 *   run of such refusals (`takeUnknownPoolNews`).
 * - `retryAfterUs(cost)` is the expected wait until `cost` can be admitted:
 *   one round-trip when the pool was not short at its last word (a grant
 *   is on its way or will be asked for at once); else the coordinator's
 *   hint, and at least the time the pool's refill takes to bring what is
 *   missing; never before the next request may leave (a back-off). A rate
 *   lease's own accrual counts as the pool's refill.
 * - `release` returns the lease now and forgets the demand that would
 *   bring it back (a limiter closed or dropped); later use asks again.
 */
import {
  clientLeaseEndUs,
  grantProblem,
  grantSigningText,
  SECRET_PATTERN,
  staleSeqFloor,
  type CallCounts,
  type LeaseGrant,
  type LeaseRequest,
  type LeaseReturn,
  type Reply,
} from '@tokenlease/shared';
import { AgentError } from '../errors.js';
import { DemandWatch } from './demand-watch.js';
import { GrantBudget } from './grant-budget.js';
import type { KeeperOptions } from './keeper-options.js';
import type { InFlight, KeeperHooks, KeeperStats, SendAction } from './keeper-types.js';
import { LeaseSlot } from './lease-slot.js';
import { movedAgentId } from './moved-id.js';
import { RateRenewal } from './rate-renewal.js';
import { RequestCycle } from './request-cycle.js';
import { RoundTrip } from './round-trip.js';
import { US_PER_MS } from './units.js';
import { UsageReports } from './usage-report.js';
import { CallReports } from './call-reports.js';

export type { GrantVerifier, KeeperHooks, KeeperStats, SendAction } from './keeper-types.js';

/** PoolLimits — a pool's limits as its last grant told them: the quota and window a limiter can show. */
export interface PoolLimits {
  /** B: the most the pool holds, tokens. */
  readonly capacityTokens: number;
  /** The most one lease holds, tokens. */
  readonly maxLeaseTokens: number;
  /** The refill: `refillTokens` every `refillPeriodMs`. */
  readonly refillTokens: number;
  readonly refillPeriodMs: number;
  /** A: how far the fleet's leases may exceed the bucket (the promise is B + A + r·T); 0 for most pools. */
  readonly allowanceTokens: number;
  /** A sliding-window pool: at most `capacityTokens` in every window of `refillPeriodMs`. */
  readonly window: boolean;
}

const NONE: readonly SendAction[] = [];

export class LeaseKeeper {
  readonly slot: LeaseSlot;
  readonly stats: KeeperStats = {
    requests: 0,
    attempts: 0,
    failures: 0,
    tokensGranted: 0,
    tokensReturned: 0,
    leasesStarted: 0,
    reports: 0,
    lastErrorCode: null,
    lastErrorMessage: null,
  };
  /** Cost of `take()` calls waiting for tokens; kept by the pool's TakeQueue. */
  waitingTokens = 0;
  private heldLeaseId: string | null = null;
  /** The tag of the slot holds of the lease that last ended here (endLease), until the next grant: a late renewal of it resumes them. */
  private endedTag: number | null = null;
  /** The TTL the next grant is expected to carry, µs: the last grant's, or `assumedTtlMs` before any. */
  private ttlUs: number;
  private readonly cycle: RequestCycle;
  private readonly demand: DemandWatch;
  private readonly rate: RateRenewal;
  private readonly reports: UsageReports;
  private readonly calls: CallReports;
  private readonly roundTrip = new RoundTrip();
  private lastTickUs = 0;
  private closing = false;
  /** The last grant's capacity, to tell a changed one mid-lease; 0 before any. */
  private capacityTokens = 0;
  /** Why the last reply was refused as implausible, until taken. */
  private rejection: string | null = null;
  /** The sequence floor a stale-sequence refusal named: the next request goes above it. */
  private seqFloor = 0;
  /** The id a `forbidden` refusal last moved this keeper to; null: not moved. */
  private movedId: string | null = null;
  /** The pool's limits from the last grant; null before any. */
  private poolLimits: PoolLimits | null = null;
  /** Until when the coordinator expects the pool to be short (its last hint), µs; 0: not short. */
  private shortUntilUs = 0;
  /** An unknown-pool refusal not yet reported. */
  private unknownPoolNews = false;
  /** A release asked for while a request was in flight: sent when it settles. */
  private releasePending = false;
  /** What grants may add up to by the expected limits; null: none expected. */
  private readonly budget: GrantBudget | null;

  /**
   * LeaseKeeper — `agentId`'s keeper for `pool`. `nextSeq(floor)` returns the
   * agent's next sequence number, above `floor`; `secret` (at least 128
   * random bits, base64url) binds its leases; `hooks` draw the fresh suffix
   * of a moved id and check grants' signatures. Throws AgentError
   * ('invalid-argument') for a secret that is not one.
   */
  constructor(
    private readonly baseAgentId: string,
    pool: string,
    private readonly nextSeq: (floor?: number) => number,
    private readonly options: KeeperOptions,
    random: () => number,
    private readonly secret: string,
    private readonly hooks: KeeperHooks,
  ) {
    if (!SECRET_PATTERN.test(secret))
      throw new AgentError('invalid-argument', 'the lease secret must be 22 to 128 characters of base64url', { pool });
    this.slot = new LeaseSlot(pool);
    this.cycle = new RequestCycle(this.slot, options, this.stats, random);
    this.demand = new DemandWatch(this.slot, options);
    this.rate = new RateRenewal(this.slot, options);
    const source = { pool, secret, nextSeq: () => this.takeSeq(), agentId: () => this.agentId, told: () => this.slot.told() };
    this.reports = new UsageReports(source, options.reportMs, this.stats);
    this.calls = new CallReports(this.slot);
    const burstTokens = options.fallbackBurstTokens || Math.max(1, options.fallbackPerSecond);
    this.slot.configureFallback(options.fallbackPerSecond, burstTokens, 0);
    this.ttlUs = options.assumedTtlMs * US_PER_MS;
    const rttMaxUs = (options.holdMs + options.replyTimeoutMs) * US_PER_MS;
    this.budget = options.expectedLimits === null ? null : new GrantBudget(options.expectedLimits, rttMaxUs, 0);
  }

  get pool(): string {
    return this.slot.pool;
  }

  /** agentId — the id this keeper asks under: the agent's, or the fresh one the last `forbidden` moved it to. */
  get agentId(): string {
    return this.movedId ?? this.baseAgentId;
  }

  /** leaseId — the lease this keeper holds or last held, or null. */
  get leaseId(): string | null {
    return this.heldLeaseId;
  }

  /** settled — closing and nothing left to send or wait for. */
  get settled(): boolean {
    return this.closing && this.cycle.inFlight === null && this.slot.balanceTokens === 0;
  }

  /** demandPerSecond — the current demand estimate, tokens per second. */
  get demandPerSecond(): number {
    return this.demand.perSecond;
  }

  /** limits — the pool's limits from its last grant; null before the first. */
  get limits(): PoolLimits | null {
    return this.poolLimits;
  }

  /** heard — whether the pool has answered: a grant, or `unknown-pool`. */
  get heard(): boolean {
    return this.poolLimits !== null || this.slot.unknownPool;
  }

  /** unavailable — whether the last attempt found no coordinator able to grant (no reply, unavailable, not-owner, internal). */
  get unavailable(): boolean {
    return this.cycle.unavailable;
  }

  /** quiet — no lease, nothing in flight or due, no take waiting, not closing: nothing will happen without an event. */
  get quiet(): boolean {
    return !this.slot.hasLease && this.cycle.inFlight === null && this.waitingTokens === 0 && !this.closing && !this.releasePending;
  }

  /** lastActiveUs — the last tick that saw an admission, a denial or a waiting take, µs. */
  get lastActiveUs(): number {
    return this.demand.lastActiveUs;
  }

  /** takeUnknownPoolNews — true once after the coordinator began saying the pool does not exist. */
  takeUnknownPoolNews(): boolean {
    const news = this.unknownPoolNews;
    this.unknownPoolNews = false;
    return news;
  }

  /** retryAfterUs — the expected wait at `nowUs` until `costTokens` can be admitted, µs (see the rules). */
  retryAfterUs(costTokens: number, nowUs: number): number {
    const s = this.slot;
    const rttUs = this.rttUs;
    const missingTokens = costTokens - (s.hasLease && nowUs < s.expiresAtUs ? s.balanceTokens : 0);
    if (missingTokens <= 0) return rttUs;
    let waitUs = rttUs;
    const flight = this.cycle.inFlight;
    const nextSendUs = flight === null ? this.cycle.notBeforeUs : (flight.retryAtUs ?? 0);
    if (nextSendUs > nowUs) waitUs = Math.max(waitUs, nextSendUs - nowUs + rttUs);
    if (s.hasLease && s.rateTokens > 0) return Math.max(waitUs, Math.ceil((missingTokens * s.ratePeriodUs) / s.rateTokens));
    const limits = this.poolLimits;
    if (this.shortUntilUs > nowUs && limits !== null) {
      const refillUs = Math.ceil((missingTokens * limits.refillPeriodMs * US_PER_MS) / limits.refillTokens);
      waitUs = Math.max(waitUs, this.shortUntilUs - nowUs + rttUs, refillUs);
    }
    return waitUs;
  }

  /** release — returns the lease at `nowUs` (or once the request in flight settles) and forgets the demand that would renew it. */
  release(nowUs: number): readonly SendAction[] {
    this.demand.forget(nowUs);
    this.slot.wantedCostTokens = 0;
    this.releasePending = true;
    return this.tick(nowUs);
  }

  /** rttUs — the smallest recent round-trip, µs (before any sample: 2 ms). */
  get rttUs(): number {
    return this.roundTrip.rttUs;
  }

  /** tick — samples demand, expires the lease when due and decides whether to send. */
  tick(nowUs: number): readonly SendAction[] {
    const s = this.slot;
    this.lastTickUs = nowUs;
    this.demand.observe(this.waitingTokens, nowUs);
    s.expireHolds(nowUs);
    if (s.hasLease && nowUs >= s.expiresAtUs) {
      this.endLease(nowUs);
      s.noteExpiry();
    }
    if (this.cycle.inFlight !== null) return this.cycle.retryDue(nowUs);
    if (this.closing) return s.balanceTokens > 0 ? this.sendReturn(nowUs) : NONE;
    if (this.releasePending) {
      this.releasePending = false;
      if (s.hasLease) return this.sendReturn(nowUs);
    }
    if (nowUs < this.cycle.notBeforeUs) return NONE;
    if (s.hasLease && this.demand.idle(nowUs)) return this.sendReturn(nowUs);
    const wantTokens = this.demand.tokensWanted(this.waitingTokens);
    // A rate lease fills by itself: it renews on its own schedule, not whenever it runs low.
    if (this.rate.held && s.hasLease) {
      const due = nowUs >= this.rate.renewAtUs(this.roundTrip.renewLeadUs()) || this.rate.outgrown(nowUs, this.demand.perSecond);
      return due ? this.sendAcquire(wantTokens, nowUs) : NONE;
    }
    if (wantTokens > 0 && this.demand.needsTokens(this.waitingTokens, nowUs)) return this.sendAcquire(wantTokens, nowUs);
    if (s.hasLease && nowUs >= s.expiresAtUs - this.roundTrip.renewLeadUs()) {
      // Renew a lease in use; give back one that has gone quiet rather than let it lapse.
      return this.demand.inUse(nowUs) ? this.sendAcquire(wantTokens, nowUs) : this.sendReturn(nowUs);
    }
    return this.reports.report(this.chunkLeaseId(), s.balanceTokens + s.heldSlots, nowUs);
  }

  /** onReply — applies the reply to request `seq`; replies to any other sequence are stale and ignored. */
  onReply(seq: number, reply: Reply, nowUs: number): readonly SendAction[] {
    const flight = this.cycle.settle(seq);
    if (flight === null) return NONE;
    this.slot.noteRoundTrip(nowUs - flight.firstSentAtUs);
    const op = flight.message.op;
    const seqFloor = staleSeqFloor(reply);
    if (reply.kind === 'grant' && flight.message.op === 'acquire') {
      const sameLease = reply.leaseId === this.heldLeaseId && this.slot.hasLease;
      const problem =
        this.signatureProblem(reply, flight.message) ??
        grantProblem(reply, flight.message, this.options, sameLease ? this.capacityTokens : 0) ??
        this.kindProblem(reply, sameLease) ??
        this.chargeBudget(reply, flight, sameLease, nowUs);
      // The coordinator counted the calls when it accepted the request, whatever this keeper makes of the grant.
      this.calls.answered(flight.message.calls);
      if (problem === null) this.applyGrant(reply, flight, nowUs);
      else {
        this.rejection = problem;
        this.cycle.refused(nowUs, 'implausible-grant', problem, 0);
      }
    } else if (reply.kind === 'receipt' && op === 'return') {
      this.stats.tokensReturned += reply.tokensReturned;
      this.calls.answered(flight.message.calls);
    } else if (reply.kind === 'error' && seqFloor !== null) {
      // Our sequence fell behind the coordinator's (a restart, a lost counter): ask again at once above its floor.
      this.seqFloor = Math.max(this.seqFloor, seqFloor);
      this.cycle.refused(nowUs, reply.code, reply.message, 0);
      this.cycle.deferUntil(nowUs);
    } else if (reply.kind === 'error' && reply.code === 'forbidden' && op === 'acquire') {
      // Another secret holds this id: a fresh id, not a wait for that lease to lapse.
      this.movedId = movedAgentId(this.baseAgentId, this.hooks.idSuffix());
      this.heldLeaseId = null;
      this.cycle.refused(nowUs, reply.code, reply.message, 0);
    } else if (reply.kind === 'error') {
      if (reply.code === 'unknown-pool') {
        this.unknownPoolNews ||= !this.slot.unknownPool;
        this.slot.unknownPool = true;
        // Ask again only when the name is used again, not on a timer.
        this.slot.wantedCostTokens = 0;
        this.demand.forget(nowUs);
      }
      if (reply.retryAfterMs > 0) this.shortUntilUs = nowUs + reply.retryAfterMs * US_PER_MS;
      this.cycle.refused(nowUs, reply.code, reply.message, reply.retryAfterMs * US_PER_MS);
    } else this.cycle.refused(nowUs, 'bad-reply', `unexpected ${reply.kind} reply to ${op}`, 0);
    return this.tick(nowUs);
  }

  /** takeRejection — why the last grant was refused as implausible (once), or null. */
  takeRejection(): string | null {
    const rejection = this.rejection;
    this.rejection = null;
    return rejection;
  }

  /** onFailure — request `seq` got no reply (timeout, no coordinator, bus down): retry it later. */
  onFailure(seq: number, code: string, message: string, nowUs: number): readonly SendAction[] {
    return this.cycle.failed(seq, code, message, nowUs, this.ttlUs, this.closing) ? this.tick(nowUs) : NONE;
  }

  /** close — stops asking and returns what is left (now, or when the request in flight is answered). */
  close(nowUs: number): readonly SendAction[] {
    this.closing = true;
    return this.tick(nowUs);
  }

  /** nextDeadlineUs — the next instant `tick` may act without an event. */
  nextDeadlineUs(): number {
    const s = this.slot;
    const flight = this.cycle.inFlight;
    if (flight !== null) return flight.retryAtUs ?? Infinity;
    // Closing with nothing in flight: tick has already sent the return it
    // would send; the renewal and idle instants no longer apply.
    if (this.closing) return Infinity;
    const notBeforeUs = this.cycle.notBeforeUs;
    let deadline = notBeforeUs > this.lastTickUs ? notBeforeUs : Infinity;
    if (s.hasLease) {
      // tick sends no report before notBeforeUs either: a report due while deferred waits for it, or the keeper would spin.
      deadline = Math.min(deadline, Math.max(notBeforeUs, this.reports.dueAtUs(this.chunkLeaseId())));
      const renewLeadUs = this.roundTrip.renewLeadUs();
      const renewAtUs = this.rate.held ? this.rate.renewAtUs(renewLeadUs) : s.expiresAtUs - renewLeadUs;
      const actAtUs = Math.min(renewAtUs, this.demand.idleAtUs());
      deadline = Math.min(deadline, Math.max(notBeforeUs, actAtUs), s.expiresAtUs);
    }
    return deadline;
  }

  /** signatureProblem — why `reply` is not signed for `request` by a key the agent trusts, or null (or no keys configured). */
  private signatureProblem(reply: LeaseGrant, request: LeaseRequest): string | null {
    const verify = this.hooks.verifyGrant;
    if (verify === null) return null;
    if (reply.sig === undefined) return 'carries no signature, and this agent accepts only signed grants';
    const text = grantSigningText(reply, { agentId: request.agentId, pool: request.pool });
    return verify(text, reply.sig) ? null : 'carries a signature that none of the configured keys made for this request';
  }

  /** kindProblem — why `reply` changes its lease between slots and tokens (a lease's busy slots would go untold), or null. */
  private kindProblem(reply: LeaseGrant, sameLease: boolean): string | null {
    if (!sameLease || (reply.holdMs !== undefined) === this.slot.concurrency) return null;
    return `changes the pool mid-lease ${this.slot.concurrency ? 'from slots to tokens' : 'from tokens to slots'}`;
  }

  /** chargeBudget — takes `reply`'s tokens from the grant budget and returns null, or says why they do not fit (changing nothing). */
  private chargeBudget(reply: LeaseGrant, flight: InFlight, sameLease: boolean, nowUs: number): string | null {
    if (this.budget === null || flight.message.op !== 'acquire') return null;
    const heldTokens = sameLease ? flight.message.tokensLeft : 0;
    // A new lease replaces the one in hand: its unspent balance is given up, as on a return.
    const creditTokens = !sameLease && this.slot.hasLease ? this.slot.balanceTokens : 0;
    return this.budget.charge(reply.tokensGranted, heldTokens, creditTokens, flight.firstSentAtUs, nowUs);
  }

  /** chunkLeaseId — the id of the chunk lease held, or null (none held, or a rate lease). */
  private chunkLeaseId(): string | null {
    return this.slot.hasLease && !this.rate.held ? this.heldLeaseId : null;
  }

  private sendAcquire(tokensWanted: number, nowUs: number): readonly SendAction[] {
    const s = this.slot;
    this.rate.sending(nowUs);
    s.told();
    const message: LeaseRequest = {
      v: 2,
      op: 'acquire',
      agentId: this.agentId,
      pool: this.pool,
      leaseSecret: this.secret,
      seq: this.takeSeq(),
      // A lapsed lease of slots is not named: what it held may still be busy, and a named lease's shortfall counts as free.
      leaseId: s.concurrency && !s.hasLease ? null : this.heldLeaseId,
      tokensLeft: s.hasLease ? s.balanceTokens + s.heldSlots : 0,
      tokensWanted,
      demandPerSecond: this.demand.perSecondOnWire(this.rate.held && s.hasLease && s.balanceTokens >= s.rateCapTokens),
      holdMs: this.options.holdMs,
      ...(this.options.agentClass === null ? {} : { agentClass: this.options.agentClass }),
      ...this.callsField(),
      clockMs: Math.floor(nowUs / US_PER_MS),
    };
    this.demand.asked();
    this.stats.requests += 1;
    return this.cycle.launch(message, nowUs);
  }

  private sendReturn(nowUs: number): readonly SendAction[] {
    const leaseId = this.heldLeaseId;
    const tokensLeft = this.endLease(nowUs);
    this.heldLeaseId = null;
    if (leaseId === null || tokensLeft === 0) return NONE;
    const message: LeaseReturn = {
      v: 2,
      op: 'return',
      agentId: this.agentId,
      pool: this.pool,
      leaseSecret: this.secret,
      seq: this.takeSeq(),
      leaseId,
      tokensLeft,
      ...this.callsField(),
    };
    return this.cycle.launch(message, nowUs);
  }

  /**
   * endLease — the lease in hand ends at `nowUs` (expired or returned), and
   * with it every mode its grant carried: its balance, its rate, its shadow
   * flag and the largest cost it could fit. Until the next grant the slot
   * enforces and knows no limit that could admit or refuse on the old
   * lease's word (docs/design.md, "Modes live and die with their lease").
   * Returns the balance it had, a rate lease's accrued up to `nowUs`.
   */
  private endLease(nowUs: number): number {
    const s = this.slot;
    // A rate lease's balance accrued by itself, never charged to the budget: nothing of it is credited back.
    const chargedTokens = this.rate.held ? 0 : s.balanceTokens;
    this.rate.returning(nowUs);
    const tokensLeft = s.balanceTokens;
    this.budget?.credit(chargedTokens, nowUs);
    s.told();
    s.balanceTokens = 0;
    // Its busy slots are the coordinator's again once their requests are past their bound: a release gives nothing back
    // (unless a renewal that named it lands after all: applyGrant resumes it).
    this.endedTag = s.concurrency ? s.holds.leaseTag : null;
    if (s.concurrency) s.holds.newLease();
    s.slotsMax = Infinity;
    s.hasLease = false;
    s.expiresAtUs = 0;
    s.shadowGranted = false;
    s.costMaxTokens = Infinity;
    return tokensLeft;
  }

  /** callsField — the `calls` field of the next request: the calls not yet told, or nothing. */
  private callsField(): { calls?: CallCounts } {
    const calls = this.calls.pending();
    return calls === null ? {} : { calls };
  }

  /** takeSeq — the next sequence number, above any floor the coordinator named. */
  private takeSeq(): number {
    const seq = this.nextSeq(this.seqFloor);
    this.seqFloor = 0;
    return seq;
  }

  private applyGrant(reply: LeaseGrant, flight: InFlight, nowUs: number): void {
    const s = this.slot;
    this.capacityTokens = reply.capacityTokens;
    this.poolLimits = {
      capacityTokens: reply.capacityTokens,
      maxLeaseTokens: reply.maxLeaseTokens,
      refillTokens: reply.refillTokens,
      refillPeriodMs: reply.refillPeriodMs,
      allowanceTokens: reply.allowanceTokens ?? 0,
      window: reply.window === true,
    };
    s.unknownPool = false;
    // The flag of the latest grant applies, for as long as its lease lives: the coordinator switches shadow mode without a restart here.
    s.shadowGranted = reply.shadow === true;
    this.shortUntilUs = reply.retryAfterMs > 0 ? nowUs + reply.retryAfterMs * US_PER_MS : 0;
    const sameLease = reply.leaseId === this.heldLeaseId && s.hasLease;
    // A renewal that named the lease of slots in hand came back after that lease lapsed here: the coordinator
    // renewed it with its busy slots (the renewal told them), so their requests give them back to it when they end.
    const resumed =
      !sameLease &&
      s.concurrency &&
      this.endedTag !== null &&
      reply.leaseId === this.heldLeaseId &&
      flight.message.leaseId === reply.leaseId;
    if (!sameLease && !resumed) this.stats.leasesStarted += 1;
    if (!sameLease) s.told();
    if (resumed) s.holds.resumeLease(this.endedTag as number);
    else if (!sameLease && s.concurrency) s.holds.newLease();
    this.endedTag = null;
    s.concurrency = reply.holdMs !== undefined;
    // The bound counts on the agent's clock, cut by the drift margin as the TTL is: the coordinator's D is real time.
    if (reply.holdMs !== undefined) s.holds.holdUs = Math.floor(reply.holdMs * US_PER_MS * (1 - this.options.driftMargin));
    // Resumed, its free slots are what the coordinator holds for it beside every request still counted.
    s.balanceTokens = sameLease
      ? s.balanceTokens + reply.tokensGranted
      : resumed
        ? Math.max(0, reply.tokensHeld - s.heldSlots)
        : reply.tokensGranted;
    // Told to shed: free slots above the cap go at once (the next acquire tells so), busy ones as their requests end.
    s.slotsMax = reply.slotsMax ?? Infinity;
    if (reply.slotsMax !== undefined) s.balanceTokens = Math.min(s.balanceTokens, Math.max(0, reply.slotsMax - s.busySlots));
    this.rate.granted(reply, nowUs, sameLease, flight.message.op === 'acquire' ? flight.message.demandPerSecond : this.demand.perSecond);
    this.reports.granted(s.balanceTokens + s.heldSlots, nowUs);
    this.heldLeaseId = reply.leaseId;
    this.ttlUs = reply.ttlMs * US_PER_MS;
    s.expiresAtUs = clientLeaseEndUs(flight.firstSentAtUs, reply.ttlMs, this.options.driftMargin);
    s.hasLease = true;
    s.costMaxTokens = Math.min(reply.capacityTokens, reply.maxLeaseTokens);
    if (s.wantedCostTokens <= s.balanceTokens || s.wantedCostTokens > s.costMaxTokens) s.wantedCostTokens = 0;
    this.stats.tokensGranted += reply.tokensGranted;
    this.cycle.granted();
    this.roundTrip.answered(flight, nowUs);
    if (!sameLease) this.demand.leaseStarted(nowUs);
    s.lowWatermarkTokens = this.demand.lowWatermarkTokens(this.rttUs);
    if (reply.retryAfterMs > 0) {
      // The pool is short: ask again when the coordinator expects tokens, not before.
      this.cycle.deferUntil(Math.min(nowUs + reply.retryAfterMs * US_PER_MS, s.expiresAtUs - this.roundTrip.renewLeadUs()));
    }
  }
}
