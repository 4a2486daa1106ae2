/**
 * LeaseKeeper: keeps one agent's lease on one pool topped up, as a pure
 * state machine (events and `nowUs` in, send actions out).
 *
 * Rules:
 * - One request in flight at a time, retried with the same sequence, backed
 *   off after failures (request-cycle.ts).
 * - The agent-side expiry is `first send of that sequence + TTL·(1 − drift
 *   margin)`: the coordinator's expiry starts when it granted, which is
 *   later, so the agent always stops spending first.
 * - Every acquire reports the unspent balance at send time. A grant under a
 *   new lease id replaces the balance (the old lease is gone on the
 *   coordinator); under the same id it adds to what is left.
 * - Ask before running dry: the low watermark covers demand over two
 *   round-trips; the ask covers demand over `refreshMs`, at least the
 *   largest denied cost and the waiting cost, at most one lease.
 * - Renew shortly before expiry while in use; return the balance after
 *   `idleReturnMs` without use, and on close. A return zeroes the local
 *   balance before it is sent.
 * - A rate lease (the grant carries a rate) fills by itself: it renews once
 *   per `refreshMs` (sooner when demand doubled), stops accruing when it
 *   sends and accrues again from the reply's arrival (rate-renewal.ts).
 * - Usage reports (`reportMs`) tell a chunk lease's balance between
 *   renewals, only while nothing is in flight (usage-report.ts).
 */
import { DEMAND_PER_SECOND_MAX, type LeaseGrant, type LeaseRequest, type LeaseReturn, type Reply } from '@tokenlease/shared';
import { DEMAND_PER_SECOND_MIN, DemandMeter } from './demand-meter.js';
import type { KeeperOptions } from './keeper-options.js';
import type { InFlight, KeeperStats, SendAction } from './keeper-types.js';
import { LeaseSlot } from './lease-slot.js';
import { RateRenewal } from './rate-renewal.js';
import { RequestCycle } from './request-cycle.js';
import { RoundTrip } from './round-trip.js';
import { US_PER_MS } from './units.js';
import { UsageReports } from './usage-report.js';

export type { KeeperStats, SendAction } from './keeper-types.js';

/** The low watermark covers demand over this many round-trips plus `LOW_WATERMARK_US_SLACK`. */
const LOW_WATERMARK_RTTS = 2;
const LOW_WATERMARK_US_SLACK = 10_000;
/** Demand goes on the wire in steps of a thousandth of a token per second. */
const DEMAND_STEPS_PER_TOKEN = 1000;
/** At renewal time a lease used within this fraction of `idleReturnMs` is renewed, a quieter one returned. */
const RENEW_IDLE_FRACTION_MAX = 1 / 2;
const NONE: readonly SendAction[] = [];

export class LeaseKeeper {
  readonly slot: LeaseSlot;
  readonly stats: KeeperStats = {
    requests: 0, attempts: 0, failures: 0, tokensGranted: 0, tokensReturned: 0, leasesStarted: 0, reports: 0,
    lastErrorCode: null, lastErrorMessage: null,
  };
  /** Cost of `take()` calls waiting for tokens; set by the adapter. */
  waitingTokens = 0;
  private heldLeaseId: string | null = null;
  private ttlUs: number;
  private readonly cycle: RequestCycle;
  private readonly rate: RateRenewal;
  private readonly reports: UsageReports;
  private readonly roundTrip = new RoundTrip();
  private readonly demand = new DemandMeter();
  private lastDemandCount = 0;
  private lastActiveUs = 0;
  private everAsked = false;
  private deniedAtLastAsk = 0;
  private lastTickUs = 0;
  private closing = false;

  constructor(
    readonly agentId: string,
    pool: string,
    private readonly nextSeq: () => number,
    private readonly options: KeeperOptions,
    random: () => number,
  ) {
    this.slot = new LeaseSlot(pool);
    this.cycle = new RequestCycle(this.slot, options, this.stats, random);
    this.rate = new RateRenewal(this.slot, options);
    this.reports = new UsageReports({ agentId, pool, nextSeq }, options.reportMs, this.stats);
    this.slot.configureFallback(options.fallbackPerSecond, options.fallbackBurstTokens || Math.max(1, options.fallbackPerSecond), 0);
    this.ttlUs = options.assumedTtlMs * US_PER_MS;
  }

  get pool(): string {
    return this.slot.pool;
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

  /** rttUs — the smallest recent round-trip, µs (before any sample: 2 ms). */
  get rttUs(): number {
    return this.roundTrip.rttUs;
  }

  /** tick — samples demand, expires the lease when due and decides whether to send. */
  tick(nowUs: number): readonly SendAction[] {
    this.lastTickUs = nowUs;
    this.observeDemand(nowUs);
    if (this.slot.hasLease && nowUs >= this.slot.expiresAtUs) {
      this.slot.hasLease = false;
      this.slot.balanceTokens = 0;
    }
    if (this.cycle.inFlight !== null) return this.cycle.retryDue(nowUs);
    if (this.closing) return this.slot.balanceTokens > 0 ? this.sendReturn(nowUs) : NONE;
    if (nowUs < this.cycle.notBeforeUs) return NONE;
    const idleUs = nowUs - this.lastActiveUs;
    const idleReturnUs = this.options.idleReturnMs * US_PER_MS;
    if (this.slot.hasLease && idleUs >= idleReturnUs) return this.sendReturn(nowUs);
    const wantTokens = this.tokensWanted();
    // A rate lease fills by itself: it renews on its own schedule, not whenever it runs low.
    if (this.rate.held && this.slot.hasLease) {
      const due = nowUs >= this.rate.renewAtUs(this.roundTrip.renewLeadUs()) || this.rate.outgrown(nowUs, this.demand.perSecond);
      return due ? this.sendAcquire(wantTokens, nowUs) : NONE;
    }
    if (wantTokens > 0 && this.needsTokens(nowUs)) return this.sendAcquire(wantTokens, nowUs);
    if (this.slot.hasLease && nowUs >= this.slot.expiresAtUs - this.roundTrip.renewLeadUs()) {
      // Renew a lease in use; give back one that has gone quiet rather than let it lapse.
      return idleUs < idleReturnUs * RENEW_IDLE_FRACTION_MAX ? this.sendAcquire(wantTokens, nowUs) : this.sendReturn(nowUs);
    }
    return this.reports.report(this.chunkLeaseId(), this.slot.balanceTokens, nowUs);
  }

  /** onReply — applies the reply to request `seq`; replies to any other sequence are stale and ignored. */
  onReply(seq: number, reply: Reply, nowUs: number): readonly SendAction[] {
    const flight = this.cycle.settle(seq);
    if (flight === null) return NONE;
    if (reply.kind === 'grant' && flight.message.op === 'acquire') this.applyGrant(reply, flight, nowUs);
    else if (reply.kind === 'receipt' && flight.message.op === 'return') this.stats.tokensReturned += reply.tokensReturned;
    else if (reply.kind === 'error') this.cycle.refused(nowUs, reply.code, reply.message, reply.retryAfterMs * US_PER_MS);
    else this.cycle.refused(nowUs, 'bad-reply', `unexpected ${reply.kind} reply to ${flight.message.op}`, 0);
    return this.tick(nowUs);
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
    // Closing with nothing in flight: tick has already sent the return it would send; the renewal and idle instants no longer apply.
    if (this.closing) return Infinity;
    const notBeforeUs = this.cycle.notBeforeUs;
    let deadline = notBeforeUs > this.lastTickUs ? notBeforeUs : Infinity;
    if (s.hasLease) {
      deadline = Math.min(deadline, this.reports.dueAtUs(this.chunkLeaseId()));
      const renewLeadUs = this.roundTrip.renewLeadUs();
      const renewAtUs = this.rate.held ? this.rate.renewAtUs(renewLeadUs) : s.expiresAtUs - renewLeadUs;
      const actAtUs = Math.min(renewAtUs, this.lastActiveUs + this.options.idleReturnMs * US_PER_MS);
      deadline = Math.min(deadline, Math.max(notBeforeUs, actAtUs), s.expiresAtUs);
    }
    return deadline;
  }

  private observeDemand(nowUs: number): void {
    const count = this.slot.admittedTokens + this.slot.deniedTokens;
    this.demand.sample(count, nowUs);
    if (count !== this.lastDemandCount || this.waitingTokens > 0) this.lastActiveUs = nowUs;
    this.lastDemandCount = count;
  }

  private needsTokens(nowUs: number): boolean {
    const s = this.slot;
    if (!this.everAsked) return true;
    if (!s.hasLease) {
      // Remembered demand alone does not bring back a lease returned for idleness.
      const recentlyActive = nowUs - this.lastActiveUs < this.options.idleReturnMs * US_PER_MS * RENEW_IDLE_FRACTION_MAX;
      return s.wantedCostTokens > 0 || this.waitingTokens > 0 || (recentlyActive && this.demand.perSecond > DEMAND_PER_SECOND_MIN);
    }
    const floorTokens = Math.max(s.lowWatermarkTokens, Math.min(this.options.initialTokens, s.costMaxTokens));
    // Denied since it last asked: demand outruns what it gets, so it keeps a
    // request waiting at the coordinator and takes every turn it is due.
    const starved = s.deniedTokens > this.deniedAtLastAsk;
    return starved || s.balanceTokens < floorTokens || s.wantedCostTokens > s.balanceTokens || this.waitingTokens > s.balanceTokens;
  }

  /** chunkLeaseId — the id of the chunk lease held, or null (none held, or a rate lease). */
  private chunkLeaseId(): string | null {
    return this.slot.hasLease && !this.rate.held ? this.heldLeaseId : null;
  }

  private tokensWanted(): number {
    const s = this.slot;
    const target = Math.max(
      this.demand.tokensOver(this.options.refreshMs * US_PER_MS),
      this.options.initialTokens,
      s.wantedCostTokens,
      this.waitingTokens,
      s.lowWatermarkTokens + 1,
    );
    const capped = Math.min(target, s.costMaxTokens);
    return Math.max(0, capped - (s.hasLease ? s.balanceTokens : 0));
  }

  private sendAcquire(tokensWanted: number, nowUs: number): readonly SendAction[] {
    const s = this.slot;
    this.rate.sending(nowUs);
    const message: LeaseRequest = {
      v: 1,
      op: 'acquire',
      agentId: this.agentId,
      pool: this.pool,
      seq: this.nextSeq(),
      leaseId: this.heldLeaseId,
      tokensLeft: s.hasLease ? s.balanceTokens : 0,
      tokensWanted,
      demandPerSecond: Math.min(DEMAND_PER_SECOND_MAX, Math.round(this.demand.perSecond * DEMAND_STEPS_PER_TOKEN) / DEMAND_STEPS_PER_TOKEN),
      holdMs: this.options.holdMs,
      ...(this.options.agentClass === null ? {} : { agentClass: this.options.agentClass }),
    };
    this.everAsked = true;
    this.deniedAtLastAsk = s.deniedTokens;
    this.stats.requests += 1;
    return this.cycle.launch(message, nowUs);
  }

  private sendReturn(nowUs: number): readonly SendAction[] {
    const s = this.slot;
    this.rate.returning(nowUs);
    const leaseId = this.heldLeaseId;
    const tokensLeft = s.balanceTokens;
    s.balanceTokens = 0;
    s.hasLease = false;
    s.expiresAtUs = 0;
    this.heldLeaseId = null;
    if (leaseId === null || tokensLeft === 0) return NONE;
    const message: LeaseReturn = { v: 1, op: 'return', agentId: this.agentId, pool: this.pool, seq: this.nextSeq(), leaseId, tokensLeft };
    return this.cycle.launch(message, nowUs);
  }

  private applyGrant(reply: LeaseGrant, flight: InFlight, nowUs: number): void {
    const s = this.slot;
    const sameLease = reply.leaseId === this.heldLeaseId && s.hasLease;
    if (!sameLease) this.stats.leasesStarted += 1;
    s.balanceTokens = (sameLease ? s.balanceTokens : 0) + reply.tokensGranted;
    this.rate.granted(reply, nowUs, sameLease, this.demand.perSecond);
    this.reports.granted(s.balanceTokens, nowUs);
    this.heldLeaseId = reply.leaseId;
    this.ttlUs = reply.ttlMs * US_PER_MS;
    s.expiresAtUs = flight.firstSentAtUs + Math.floor(this.ttlUs * (1 - this.options.driftMargin));
    s.hasLease = true;
    s.costMaxTokens = Math.min(reply.capacityTokens, reply.maxLeaseTokens);
    if (s.wantedCostTokens <= s.balanceTokens || s.wantedCostTokens > s.costMaxTokens) s.wantedCostTokens = 0;
    this.stats.tokensGranted += reply.tokensGranted;
    this.cycle.granted();
    this.roundTrip.answered(flight, nowUs);
    if (!sameLease) this.lastActiveUs = Math.max(this.lastActiveUs, nowUs);
    s.lowWatermarkTokens = Math.min(s.costMaxTokens, this.demand.tokensOver(LOW_WATERMARK_RTTS * this.rttUs + LOW_WATERMARK_US_SLACK));
    if (reply.retryAfterMs > 0) {
      // The pool is short: ask again when the coordinator expects tokens, not before.
      this.cycle.deferUntil(Math.min(nowUs + reply.retryAfterMs * US_PER_MS, s.expiresAtUs - this.roundTrip.renewLeadUs()));
    }
  }
}
