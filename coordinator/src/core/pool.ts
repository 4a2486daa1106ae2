/**
 * Pool: one global token bucket whose tokens are leased to agents.
 *
 * Rules (the credit argument of DESIGN.md, in code):
 * - Credit is `level + Σ lease bounds`, in exact units (token-scale.ts).
 *   It never exceeds capacity B plus the pool's allowance A: refill adds at
 *   most `r·Δt` and is clipped so that `level ≤ B` and
 *   `level + Σ bounds ≤ B + A`. Checked after every change. So the fleet
 *   admits at most `B + A + r·T` in any window (A = 0: the strict bucket).
 * - A grant moves tokens from the level into a lease; a report lowers a
 *   lease's bound and never raises it; a return moves the unspent part back
 *   to the level; an expiry drops the bound (those tokens are lost).
 * - Refill is computed before expired leases are reclaimed, so a lease that
 *   lapsed between two calls still clips the refill of that gap: the error
 *   is always on the side of admitting less.
 * - After a start the pool is empty and refills nothing until the quiet
 *   period (at least one TTL) is over: leases of a previous incarnation, up
 *   to the whole capacity, may still be spent until then, so they count as
 *   a full bound. Refill that started earlier would let those leases and a
 *   fresh grant land in one window.
 * - No crumbs: a request that cannot get its turn, `min(wanted,
 *   minGrantTokens × w)` for its class's weight w, is held (up to its hold
 *   time) in a FIFO queue, and waiting agents are served in arrival order,
 *   a turn each while others wait (a backlog is split in proportion to the
 *   turns): under contention agents' shares follow their weights. A held request that times out gets what there is; one
 *   that may not wait gets nothing while others wait before it; one that a
 *   newer request of its agent supersedes is answered `stale-sequence`.
 * - The coordinator's lease expiry is `grant time + TTL`, never earlier than
 *   `receipt time + TTL`; the agent counts from when it sent, so it always
 *   stops spending first.
 * - A pool taken over from a durable store (`takeOver`) has no quiet
 *   period: it knows the kept leases, treats each as live for a full TTL
 *   from the takeover and refills from the takeover on, so the owners' gap
 *   mints nothing. Its level is clipped so the kept credit fits B + A; a
 *   pool the store has no record of starts full (it has no lease anywhere).
 *   Such a pool records which leases changed, for the adapter to write
 *   before it sends the replies (`takeChanges`).
 * - In rate mode (`leaseMode: 'rate'`) every acquire re-bases the lease on
 *   the agent's report and gives it a rate: its weighted max-min fair share
 *   (waterFill) of the refill among the live leases' reported demands,
 *   within what other leases leave unassigned; a cap in proportion to that
 *   rate (its share of B); and a top-up from the level. See rate-lease.ts
 *   for why the envelope holds.
 */
import { assertInvariant, tokenScale, waitUs, DURATION_MS_MAX, type LeaseGrant, type LeaseReport, type LeaseRequest, type LeaseReturn, type PoolStatus, type Reply, type TokenScale } from '@tokenlease/shared';
import type { PoolConfig } from './config.js';
import { LeaseTable, staleSequenceReply, type LeaseRecord } from './lease-table.js';
import { ChangeLog, type PersistedPool, type PoolChanges } from './pool-state.js';
import { Credit } from './credit.js';
import { decideRateGrant, fairShareOf, heldAt } from './rate-lease.js';

/** Delivery — a reply and the opaque target it goes to. */
export interface Delivery<R> {
  readonly to: R;
  readonly reply: Reply;
}

interface Waiter<R> {
  readonly record: LeaseRecord;
  readonly wantTokens: number;
  /** The turn worth a reply: min(wanted, minGrantTokens × its class's weight). */
  readonly thresholdTokens: number;
  to: R;
  readonly deadlineUs: number;
}

export class Pool<R> {
  readonly scale: TokenScale;
  readonly leases: LeaseTable;
  private readonly credit: Credit;
  private readonly quietUntilUs: number;
  private readonly ttlUs: number;
  private waiters: Waiter<R>[] = [];
  /** Agents whose lease changed since the last `takeChanges`; null when nothing is written anywhere. */
  private changed: ChangeLog | null = null;
  /** The refill period in µs, the unit of rate leases' ρ. */
  private readonly periodUs: number;
  /** Last time a request reached this pool, µs. */
  lastActivityUs = 0;

  constructor(
    readonly config: PoolConfig,
    private readonly epoch: number,
    startUs: number,
    quietPeriodMs: number,
    /** Distinguishes the lease ids of a pool restarted after a fault from its predecessor's; 0 at first. */
    restarts = 0,
  ) {
    this.scale = tokenScale(config.capacity, config.refill);
    this.leases = new LeaseTable(restarts === 0 ? `${epoch.toString(36)}-` : `${epoch.toString(36)}.${restarts.toString(36)}-`);
    this.quietUntilUs = startUs + quietPeriodMs * 1000;
    this.credit = new Credit(this.scale, config.name, config.allowance, this.quietUntilUs);
    this.ttlUs = config.leaseTtlMs * 1000;
    this.periodUs = config.refill.periodMs * 1000;
  }

  /**
   * takeOver — the pool as a new owner at `takeoverUs` finds it in the
   * store (`state`, or null when the store has no record of it), with
   * change tracking on.
   */
  static takeOver<R>(config: PoolConfig, epoch: number, takeoverUs: number, state: PersistedPool | null): Pool<R> {
    const pool = new Pool<R>(config, epoch, takeoverUs, 0);
    pool.changed = new ChangeLog();
    for (const kept of state?.leases ?? []) {
      const record = pool.leases.adopt(kept.agentId, kept.leaseId, kept.boundTokens, kept.lastSeq, takeoverUs + pool.ttlUs);
      // A kept rate lease may be full and keeps trickling at its rate until it renews or expires.
      record.heldTokens = kept.boundTokens;
      record.accrualFromUs = takeoverUs;
      pool.leases.setRate(record, kept.ratePerPeriod ?? 0);
      // A request that was held when the store last heard of it: a retry of it learns the balance and asks again.
      record.lastReply = kept.lastReply ?? pool.grantReply(record, 0, 1);
    }
    pool.credit.restore(state?.levelTokens ?? null, pool.leases.boundTokensSum);
    pool.checkCredit();
    return pool;
  }

  /**
   * takeChanges — the level and the leases changed since the last call, or
   * null when no lease changed (refill alone is not written: a store that
   * lags behind on refill only under-admits after a takeover).
   */
  takeChanges(): PoolChanges | null {
    return this.changed?.take(this.leases, this.credit.levelTokens) ?? null;
  }

  /** requeueChanges — marks the leases of changes that were not written as changed again. */
  requeueChanges(changes: PoolChanges): void {
    this.changed?.requeue(changes);
  }

  /** releaseWaiters — takes every held request out of the queue (when the pool changes owner); returns their reply targets. */
  releaseWaiters(): { seq: number; to: R }[] {
    const held = this.waiters.map((w) => ({ seq: w.record.lastSeq, to: w.to }));
    this.waiters = [];
    return held;
  }

  /** touch — notes a request at `nowUs` (for idle eviction of template pools). */
  touch(nowUs: number): void {
    this.lastActivityUs = Math.max(this.lastActivityUs, nowUs);
  }

  /**
   * idleFullAtUs — when this pool, left alone, will have no lease, no held
   * request and a full level (Infinity while a lease or request is open).
   */
  idleFullAtUs(): number {
    if (this.leases.size > 0 || this.waiters.length > 0) return Infinity;
    return this.credit.fullAtUs();
  }

  /** acquire — grants, renews or holds `req`; replies go to `out`. */
  acquire(req: LeaseRequest, to: R, nowUs: number, out: Delivery<R>[]): void {
    this.touch(nowUs);
    this.tick(nowUs, out);
    const existing = this.leases.get(req.agentId);
    if (existing !== undefined && req.seq <= existing.lastSeq) {
      if (req.seq === existing.lastSeq) this.repeat(existing, to, out);
      else out.push({ to, reply: staleSequenceReply(req.seq, existing.lastSeq) });
      return;
    }
    this.dropWaiter(req.agentId, req.seq, out);
    const record = existing ?? this.leases.open(req.agentId, req.seq, nowUs + this.ttlUs);
    if (this.config.leaseMode === 'rate') {
      this.acquireRate(req, record, to, nowUs, out);
      return;
    }
    // A report concerns only the lease it names; a lease the agent does not
    // name is one whose grant never reached it, so nothing of it can be spent.
    const reportedTokens = req.leaseId === record.leaseId ? Math.min(record.boundTokens, req.tokensLeft) : 0;
    this.leases.setBound(record, reportedTokens);
    record.lastSeq = req.seq;
    record.lastReply = null;
    this.leases.extend(record, nowUs + this.ttlUs);
    this.changed?.add(req.agentId);
    const wantTokens = Math.max(0, Math.min(req.tokensWanted, this.config.maxLeaseTokens - record.boundTokens));
    const holdUs = Math.min(req.holdMs, this.config.maxHoldMs) * 1000;
    const weight = this.weightOf(req);
    const thresholdTokens = Math.min(wantTokens, this.config.minGrantTokens * weight);
    if (wantTokens === 0 || (this.waiters.length === 0 && (holdUs === 0 || this.worthGranting(thresholdTokens)))) {
      this.grant(record, wantTokens, to, nowUs, out);
    } else if (holdUs === 0) {
      // It may not wait and others are waiting first: renew only, and say when to ask again.
      this.grant(record, wantTokens, to, nowUs, out, 0);
    } else {
      this.waiters.push({ record, wantTokens, thresholdTokens, to, deadlineUs: nowUs + holdUs });
    }
    this.checkCredit();
  }

  /** giveBack — ends the named lease and moves its unspent tokens back to the level. */
  giveBack(req: LeaseReturn, to: R, nowUs: number, out: Delivery<R>[]): void {
    this.touch(nowUs);
    this.tick(nowUs, out);
    const record = this.leases.get(req.agentId);
    let tokensReturned = 0;
    if (record !== undefined && record.leaseId === req.leaseId && req.seq > record.lastSeq) {
      this.dropWaiter(req.agentId, req.seq, out);
      tokensReturned = Math.min(req.tokensLeft, this.config.leaseMode === 'rate' ? heldAt(record, nowUs, this.periodUs) : record.boundTokens);
      this.leases.remove(record);
      this.changed?.add(req.agentId);
      // With an allowance the level may not take all of it back: it never holds more than B.
      this.credit.give(tokensReturned);
    }
    out.push({ to, reply: { v: 1, kind: 'receipt', seq: req.seq, tokensReturned } });
    this.checkCredit();
    this.serveWaiters(nowUs, out);
  }

  /**
   * report — a usage report lowers its chunk lease's bound (never raises
   * it) when it is newer than the agent's last acquire or return; anything
   * else (another lease, an old report, a rate lease, whose bound is its
   * cap) changes nothing. No reply.
   */
  report(req: LeaseReport, nowUs: number, out: Delivery<R>[]): void {
    this.touch(nowUs);
    this.tick(nowUs, out);
    const record = this.leases.get(req.agentId);
    if (record === undefined || record.leaseId !== req.leaseId || req.seq <= record.lastSeq || this.config.leaseMode === 'rate') return;
    if (req.tokensLeft >= record.boundTokens || this.waiters.some((w) => w.record === record)) return;
    this.leases.setBound(record, req.tokensLeft);
    this.changed?.add(req.agentId);
  }

  /** tick — refills, reclaims expired leases and answers the waiters that can be answered. */
  tick(nowUs: number, out: Delivery<R>[]): void {
    this.credit.refill(nowUs, this.leases.boundTokensSum, this.leases.ratePerPeriodSum, this.config.refill.tokens, this.config.leaseMode === 'rate');
    // Held requests are answered before reclaiming: a held lease is live
    // until its reply, whenever the adapter gets round to calling.
    this.serveWaiters(nowUs, out);
    for (const agentId of this.leases.reclaimExpired(nowUs)) this.changed?.add(agentId);
    this.checkCredit();
  }

  /** flush — answers every held request now with what there is (shutdown). */
  flush(nowUs: number, out: Delivery<R>[]): void {
    this.tick(nowUs, out);
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) this.grant(w.record, w.wantTokens, w.to, nowUs, out);
  }

  /** status — the pool's credit at `nowUs`, and `agentId`'s lease when one is named. */
  status(nowUs: number, out: Delivery<R>[], agentId?: string): PoolStatus {
    this.tick(nowUs, out);
    const record = agentId === undefined ? undefined : this.leases.get(agentId);
    const agentLease =
      record === undefined
        ? null
        : { leaseId: record.leaseId, tokensHeld: record.boundTokens, expiresInMs: Math.ceil((record.expiresAtUs - nowUs) / 1000) };
    return {
      ...(agentId === undefined ? {} : { agentLease }),
      v: 1,
      kind: 'status',
      pool: this.config.name,
      epoch: this.epoch,
      capacityTokens: this.config.capacity,
      levelTokens: this.credit.levelTokens,
      leasedTokens: this.leases.boundTokensSum,
      leases: this.leases.size,
      waiting: this.waiters.length,
      quietMs: Math.ceil(Math.max(0, this.quietUntilUs - nowUs) / 1000),
    };
  }

  /** nextDeadlineUs — when `tick` next has work: a hold ends, a waiter's grant accrues or a lease expires. */
  nextDeadlineUs(): number {
    let deadline = this.leases.earliestExpiryUs();
    for (const w of this.waiters) deadline = Math.min(deadline, w.deadlineUs);
    const head = this.waiters[0];
    if (head !== undefined) deadline = Math.min(deadline, this.credit.accruesAtUs(head.thresholdTokens, this.leases.boundTokensSum));
    return deadline;
  }

  private repeat(record: LeaseRecord, to: R, out: Delivery<R>[]): void {
    if (record.lastReply !== null) {
      out.push({ to, reply: record.lastReply });
      return;
    }
    // Still held: answer the retry's reply target instead of the first one.
    const waiter = this.waiters.find((w) => w.record === record);
    assertInvariant(waiter !== undefined, `held request of ${record.agentId} has no waiter`);
    waiter.to = to;
  }

  private serveWaiters(nowUs: number, out: Delivery<R>[]): void {
    while (this.waiters.length > 0) {
      const head = this.waiters[0] as Waiter<R>;
      if (!this.worthGranting(head.thresholdTokens)) break;
      this.waiters.shift();
      // With others still waiting, a turn is its threshold; a lone waiter
      // (or one at the back) takes what it wants of what there is.
      this.grant(head.record, head.wantTokens, head.to, nowUs, out, this.waiters.length > 0 ? Math.max(head.thresholdTokens, this.fairRest(head)) : Infinity);
    }
    if (!this.waiters.some((w) => w.deadlineUs <= nowUs)) return;
    const due = this.waiters.filter((w) => w.deadlineUs <= nowUs);
    this.waiters = this.waiters.filter((w) => w.deadlineUs > nowUs);
    for (const w of due) this.grant(w.record, w.wantTokens, w.to, nowUs, out);
  }

  private grant(record: LeaseRecord, wantTokens: number, to: R, nowUs: number, out: Delivery<R>[], tokensMax = Infinity): void {
    const tokensGranted = Math.min(wantTokens, tokensMax, this.credit.levelTokens);
    this.credit.take(tokensGranted);
    this.leases.setBound(record, record.boundTokens + tokensGranted);
    this.leases.extend(record, nowUs + this.ttlUs);
    const reply = this.grantReply(record, tokensGranted, tokensGranted < wantTokens ? this.retryAfterMs(wantTokens - tokensGranted, nowUs) : 0);
    record.lastReply = reply;
    this.changed?.add(record.agentId);
    out.push({ to, reply });
    this.checkCredit();
  }

  /**
   * acquireRate — rate mode: re-bases the lease on the agent's report (it
   * stopped accruing when it sent), then gives it its fair rate, a cap in
   * proportion and a top-up from the level, all within B + A. No rate in
   * the quiet period: leases of a previous incarnation may still spend.
   */
  private acquireRate(req: LeaseRequest, record: LeaseRecord, to: R, nowUs: number, out: Delivery<R>[]): void {
    const held = req.leaseId === record.leaseId ? Math.min(heldAt(record, nowUs, this.periodUs), req.tokensLeft) : 0;
    this.leases.setRate(record, 0);
    Object.assign(record, { heldTokens: held, accrualFromUs: nowUs, lastSeq: req.seq, demandPerSecond: req.demandPerSecond, weight: this.weightOf(req) });
    this.leases.extend(record, nowUs + this.ttlUs);
    this.changed?.add(req.agentId);
    const otherBoundsTokens = this.leases.boundTokensSum - record.boundTokens;
    // The level is shared by weight too: a renewal may take its weight's part of it.
    const leases = [...this.leases.all()];
    const levelShare = Math.floor((this.credit.levelTokens * record.weight) / leases.reduce((sum, l) => sum + l.weight, 0));
    const d = decideRateGrant(this.config, { held, tokensWanted: req.tokensWanted, levelTokens: levelShare, otherRates: this.leases.ratePerPeriodSum, share: (assignable) => (nowUs < this.quietUntilUs ? 0 : fairShareOf(leases, record, assignable, this.config.refill.periodMs)) }, (topUp) => Math.floor((this.credit.ceilingUnits - this.credit.levelUnits + topUp * this.scale.unitsPerToken) / this.scale.unitsPerToken) - otherBoundsTokens);
    this.credit.take(d.topUp);
    assertInvariant(d.capTokens >= held + d.topUp, `pool ${this.config.name}: no room for the ${held + d.topUp} tokens lease ${record.leaseId} holds`);
    this.leases.setBound(record, d.capTokens);
    this.leases.setRate(record, d.ratePerPeriod);
    record.heldTokens = held + d.topUp;
    const base = this.grantReply(record, d.topUp, d.missingTokens > 0 ? this.retryAfterMs(d.missingTokens, nowUs) : 0);
    const reply: LeaseGrant = { ...base, tokensHeld: held + d.topUp, rate: { tokensPerPeriod: d.ratePerPeriod, periodMs: this.config.refill.periodMs, capTokens: d.capTokens } };
    record.lastReply = reply;
    out.push({ to, reply });
    this.checkCredit();
  }

  private weightOf(req: LeaseRequest): number {
    return req.agentClass === undefined ? 1 : (this.config.classWeights.get(req.agentClass) ?? 1);
  }

  private grantReply(record: LeaseRecord, tokensGranted: number, retryAfterMs: number): LeaseGrant {
    return {
      v: 1,
      kind: 'grant',
      seq: record.lastSeq,
      leaseId: record.leaseId,
      tokensGranted,
      tokensHeld: record.boundTokens,
      ttlMs: this.config.leaseTtlMs,
      epoch: this.epoch,
      maxLeaseTokens: this.config.maxLeaseTokens,
      capacityTokens: this.config.capacity,
      retryAfterMs,
    };
  }

  private retryAfterMs(missingTokens: number, nowUs: number): number {
    const thresholdTokens = Math.min(missingTokens, this.config.minGrantTokens);
    const accrueUs = waitUs(this.scale, thresholdTokens * this.scale.unitsPerToken - this.credit.levelUnits);
    const quietUs = Math.max(0, this.quietUntilUs - nowUs);
    return Math.min(DURATION_MS_MAX, Math.max(1, Math.ceil((quietUs + accrueUs) / 1000)));
  }

  private worthGranting(thresholdTokens: number): boolean {
    return this.credit.has(thresholdTokens);
  }

  /**
   * fairRest — the head's part when what there is exceeds every waiter's
   * turn: the level divided in proportion to the waiters' turns (its own
   * included), so a backlog is shared by weight rather than first come.
   */
  private fairRest(head: Waiter<R>): number {
    const turns = this.waiters.reduce((sum, w) => sum + w.thresholdTokens, head.thresholdTokens);
    return Math.floor((this.credit.levelTokens * head.thresholdTokens) / turns);
  }

  /** dropWaiter — a newer request of the agent supersedes its held one, which is answered as stale. */
  private dropWaiter(agentId: string, newerSeq: number, out: Delivery<R>[]): void {
    const held = this.waiters.find((w) => w.record.agentId === agentId);
    if (held === undefined) return;
    this.waiters = this.waiters.filter((w) => w !== held);
    out.push({ to: held.to, reply: staleSequenceReply(held.record.lastSeq, newerSeq, 'superseded by') });
  }

  private checkCredit(): void {
    this.credit.check(this.leases.boundTokensSum);
  }
}
