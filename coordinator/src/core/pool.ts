/**
 * Pool: one global token bucket whose tokens are leased to agents.
 *
 * Rules (the credit argument of docs/design.md, in code):
 * - Credit is `level + Σ lease bounds`, in exact units (token-scale.ts).
 *   It never exceeds capacity B plus the pool's allowance A (credit.ts),
 *   checked after every change. So the fleet admits at most `B + A + r·T`
 *   in any window of length T (A = 0: the strict bucket).
 * - A grant moves tokens from the level into a lease; a report lowers a
 *   lease's bound and never raises it; a return moves the unspent part back
 *   to the level; an expiry drops the bound (those tokens are lost).
 * - Refill is computed before expired leases are reclaimed, so a lease that
 *   lapsed between two calls still clips the refill of that gap: the error
 *   is always on the side of admitting less.
 * - After a start the pool is empty and refills nothing until the quiet
 *   period (at least one TTL) is over: leases of a previous incarnation may
 *   still be spent until then.
 * - A lease is bound to the secret of the request that opened it: a request
 *   for its agent with another secret is refused `forbidden` (a report is
 *   ignored) and changes nothing, before its sequence number is even read.
 * - The coordinator's lease expiry is `grant time + TTL`, never earlier than
 *   `receipt time + TTL`; the agent counts from when it sent, so it always
 *   stops spending first.
 * - An agent whose clock runs outside the pool's `clockDriftLimit` gets
 *   nothing more, and a slow one's lease is counted as long as it may
 *   spend it: clock-check.ts.
 * - Chunk grants and holding: chunk-grant.ts. Rate leases: rate-grant.ts.
 *   Takeover from a durable store: pool-takeover.ts. A new configuration
 *   while it serves: pool-reconfigure.ts (a lease of the old one is never
 *   renewed under its id: its agent gets a new lease).
 */
import {
  assertInvariant,
  type CallCounts,
  type LeaseReport,
  type LeaseRequest,
  type LeaseReturn,
  type PoolStatus,
  type Reply,
} from '@tokenlease/shared';
import { clockAfterAcquire, clockRefusal } from './clock-check.js';
import type { PoolConfig } from './config.js';
import { acquireChunk, bindingOf, serveWaiters, grant, type Delivery } from './chunk-grant.js';
import { lastGrantOf } from './grant-memo.js';
import type { Waiter } from './hold-queue.js';
import { LeaseTable, staleSequenceReply, type LeaseRecord } from './lease-table.js';
import {
  admissionRefusal,
  forbidden,
  grantedClaim,
  leaseExpiryUs,
  makePoolParts,
  type CreditFactory,
  type PoolParts,
} from './pool-parts.js';
import { isDamaged, type PoolChanges, type StoredPool } from './pool-state.js';
import { reconfigureParts, sameLimits } from './pool-reconfigure.js';
import type { PoolTallyCounts } from './pool-tally.js';
import { adoptKept, quarantine, stateProblem } from './pool-takeover.js';
import { acquireRate } from './rate-grant.js';
import { heldAt } from './rate-lease.js';
import { WindowCredit } from './window-credit.js';

export type { Delivery } from './chunk-grant.js';

/** PoolSnapshot — what a pool holds as of its last step, read without changing anything (for metrics and status pages). */
export interface PoolSnapshot {
  readonly config: PoolConfig;
  readonly levelTokens: number;
  /** Σ bounds of live leases and of retired parts still counted. */
  readonly leasedTokens: number;
  readonly leases: number;
  readonly waiting: number;
  readonly quietUntilUs: number;
  readonly epoch: number;
  /** A window pool's tokens on their way back to the level (0 for a bucket pool). */
  readonly coolingTokens: number;
  /** Calls its agents reported deciding since the pool was made (shared calls.ts). */
  readonly calls: CallCounts;
}

export class Pool<R> {
  /** The pool's state, shared with the files that keep its rules; replaced whole by `reconfigure`. */
  private partsNow: PoolParts<R>;
  /** Last time a request reached this pool, µs. */
  lastActivityUs = 0;

  /**
   * Pool — a pool of `config` that starts at `startUs`, empty and quiet for
   * `quietPeriodMs`. `restarts` distinguishes the lease ids of a pool
   * restarted after a fault from its predecessor's (0 at first).
   */
  constructor(config: PoolConfig, epoch: number, startUs: number, quietPeriodMs: number, restarts = 0, creditOf?: CreditFactory) {
    this.partsNow = makePoolParts<R>(config, epoch, startUs, quietPeriodMs, restarts, creditOf);
  }

  get parts(): PoolParts<R> {
    return this.partsNow;
  }

  /** Why the stored state of a pool taken over was not adopted (null: it was, or there was none). */
  damage: string | null = null;

  /**
   * takeOver — the pool as a new owner at `takeoverUs` finds it in the store
   * (`state`, or null when it has no record); damaged state is not adopted
   * (see pool-takeover.ts) and `damage` says why.
   */
  static takeOver<R>(config: PoolConfig, epoch: number, takeoverUs: number, state: StoredPool): Pool<R> {
    const problem = state === null ? null : isDamaged(state) ? state.damaged : stateProblem(config, state);
    if (problem === null) {
      const pool = new Pool<R>(config, epoch, takeoverUs, 0);
      adoptKept(pool.parts, takeoverUs, isDamaged(state) ? null : state);
      return pool;
    }
    const pool = new Pool<R>(config, epoch, takeoverUs, config.leaseTtlMs);
    quarantine(pool.parts, isDamaged(state) ? state.agentIds : (state?.leases.map((l) => l.agentId) ?? []));
    pool.damage = problem;
    return pool;
  }

  get config(): PoolConfig {
    return this.parts.config;
  }

  get scale(): PoolParts<R>['scale'] {
    return this.parts.scale;
  }

  get leases(): LeaseTable {
    return this.parts.leases;
  }

  /**
   * takeChanges — the level and the leases changed since the last call, or
   * null when no lease changed (refill alone is not written: a store that
   * lags behind on refill only under-admits after a takeover).
   */
  takeChanges(): PoolChanges | null {
    return this.parts.changed?.take(this.parts.leases, this.parts.credit.levelTokens) ?? null;
  }

  /** requeueChanges — marks the leases of changes that were not written as changed again. */
  requeueChanges(changes: PoolChanges): void {
    this.parts.changed?.requeue(changes);
  }

  /** releaseWaiters — takes every held request out of the queue (when the pool changes owner); returns their reply targets. */
  releaseWaiters(): { seq: number; to: R }[] {
    return this.parts.waiters.takeAll().map((w) => ({ seq: w.record.lastSeq, to: w.to }));
  }

  /** heldRequests — the held requests in arrival order (for inspection). */
  heldRequests(): readonly Waiter<R>[] {
    return this.parts.waiters.inOrder();
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
    if (this.parts.leases.size > 0 || this.parts.leases.retiredCount > 0 || this.parts.waiters.size > 0) return Infinity;
    return this.parts.credit.fullAtUs();
  }

  /**
   * acquire — grants, renews or holds `req`, sent under the identity token
   * `identity` (the subject's); replies go to `out`. A new lease is that
   * identity's (counted against its caps); a class the configuration does
   * not grant to it weighs 1 (grantedClaim), and is counted in the tally.
   */
  acquire(req: LeaseRequest, to: R, nowUs: number, out: Delivery<R>[], identity: string): void {
    this.touch(nowUs);
    this.tick(nowUs, out);
    const p = this.parts;
    const existing = p.leases.find(req.agentId, req.leaseId);
    if (existing !== undefined && existing.secret !== req.leaseSecret) {
      out.push({ to, reply: forbidden(existing, req.seq, nowUs) });
      return;
    }
    if (existing !== undefined && req.seq <= existing.lastSeq) {
      if (req.seq === existing.lastSeq) this.repeat(existing, to, out);
      else out.push({ to, reply: staleSequenceReply(req.seq, existing.lastSeq) });
      return;
    }
    const drift = clockRefusal(p, existing, req, nowUs);
    if (drift !== null) {
      out.push({ to, reply: drift });
      return;
    }
    const refusal = admissionRefusal(p, req, existing === undefined, nowUs, existing === undefined ? identity : existing.identity);
    if (refusal !== null) {
      out.push({ to, reply: refusal });
      return;
    }
    this.dropWaiter(req.agentId, req.seq, out);
    p.tally.reported(req.calls);
    let record = existing;
    if (record !== undefined && record.generation < p.leases.generation) {
      // Granted under a configuration since replaced: never renewed under its id (an agent refuses a grant that
      // changes its lease's capacity). What the agent may still spend of it counts until its old expiry.
      p.leases.retire(record, p.leases.names(record, req.leaseId) ? Math.min(this.spendable(record, nowUs), req.tokensLeft) : 0);
      record = undefined;
    } else if (record !== undefined && p.leases.names(record, req.leaseId)) p.leases.clearRetired(req.agentId);
    if (record === undefined) {
      record = p.leases.open(req.agentId, req.leaseSecret, req.seq, leaseExpiryUs(p, nowUs), identity);
      record.isRate = p.config.leaseMode === 'rate';
      this.opened += 1;
    }
    const claim = grantedClaim(p.config, req, identity);
    if (claim !== req) p.tally.classClaimRefused();
    record.agentClass = claim.agentClass ?? null;
    if (record.isRate) acquireRate(p, claim, record, to, nowUs, out);
    else acquireChunk(p, claim, record, to, nowUs, out);
    clockAfterAcquire(p, req, record, nowUs);
    p.credit.settle(nowUs, p.leases.boundTokensSum);
  }

  /** giveBack — ends the named lease and moves its unspent tokens back to the level. */
  giveBack(req: LeaseReturn, to: R, nowUs: number, out: Delivery<R>[]): void {
    this.touch(nowUs);
    this.tick(nowUs, out);
    const p = this.parts;
    const record = p.leases.find(req.agentId, req.leaseId);
    if (record !== undefined && record.secret !== req.leaseSecret) {
      out.push({ to, reply: forbidden(record, req.seq, nowUs) });
      return;
    }
    let tokensReturned = 0;
    if (record !== undefined && p.leases.names(record, req.leaseId) && req.seq > record.lastSeq) {
      this.dropWaiter(req.agentId, req.seq, out);
      p.tally.reported(req.calls);
      tokensReturned = Math.min(req.tokensLeft, this.spendable(record, nowUs));
      p.leases.remove(record);
      p.leases.clearRetired(req.agentId);
      p.changed?.add(req.agentId);
      // With an allowance the level may not take all of it back: it never holds more than B, nor credit more than B + A.
      p.credit.give(tokensReturned, p.leases.boundTokensSum);
      this.returned += 1;
    }
    out.push({ to, reply: { v: 2, kind: 'receipt', seq: req.seq, tokensReturned } });
    p.credit.settle(nowUs, p.leases.boundTokensSum);
    serveWaiters(p, nowUs, out);
  }

  /**
   * report — a usage report lowers its chunk lease's bound (never raises
   * it) when it is newer than the agent's last acquire or return; anything
   * else (another lease or secret, an old report, a rate lease, whose bound
   * is its cap, a lease whose request is held) changes nothing. No reply.
   */
  report(req: LeaseReport, nowUs: number, out: Delivery<R>[]): void {
    this.touch(nowUs);
    this.tick(nowUs, out);
    const p = this.parts;
    const record = p.leases.find(req.agentId, req.leaseId);
    if (record === undefined || record.secret !== req.leaseSecret || !p.leases.names(record, req.leaseId)) return;
    if (req.seq <= record.lastSeq || record.isRate) return;
    if (p.waiters.get(req.agentId) !== undefined) return;
    // Sent after the agent learnt of this lease: nothing of a lease it held before is left to spend.
    if (p.leases.retiredOf(req.agentId) !== undefined) {
      p.leases.clearRetired(req.agentId);
      p.changed?.add(req.agentId);
    }
    if (req.tokensLeft >= record.boundTokens) return;
    p.leases.setBound(record, req.tokensLeft);
    p.changed?.add(req.agentId);
    p.credit.settle(nowUs, p.leases.boundTokensSum);
  }

  /** tick — refills, reclaims expired leases and answers the waiters that can be answered. */
  tick(nowUs: number, out: Delivery<R>[]): void {
    const p = this.parts;
    // Rate leases kept from a previous mode still take their rate out of the refill.
    const rateMode = p.config.leaseMode === 'rate' || p.leases.ratePerPeriodSum > 0;
    p.credit.refill(nowUs, p.leases.boundTokensSum, p.leases.ratePerPeriodSum, p.config.refill.tokens, rateMode);
    // Held requests are answered before reclaiming: a held lease is live
    // until its reply, whenever the adapter gets round to calling.
    serveWaiters(p, nowUs, out);
    for (const agentId of p.leases.reclaimExpired(nowUs)) p.changed?.add(agentId);
    p.credit.settle(nowUs, p.leases.boundTokensSum);
  }

  /** flush — answers every held request now with what there is (shutdown). */
  flush(nowUs: number, out: Delivery<R>[]): void {
    this.tick(nowUs, out);
    for (const w of this.parts.waiters.takeAll()) {
      this.parts.tally.held(nowUs - w.heldAtUs);
      grant(this.parts, w.record, w.wantTokens, w.to, nowUs, out, Infinity, w.heldAtUs);
    }
  }

  /** status — the pool's credit at `nowUs`, and `agentId`'s lease when one is named. */
  status(nowUs: number, out: Delivery<R>[], agentId?: string): PoolStatus {
    this.tick(nowUs, out);
    const p = this.parts;
    const record = agentId === undefined ? undefined : p.leases.get(agentId);
    const agentLease =
      record === undefined
        ? null
        : { leaseId: record.leaseId, tokensHeld: record.boundTokens, expiresInMs: Math.ceil((record.expiresAtUs - nowUs) / 1000) };
    return {
      ...(agentId === undefined ? {} : { agentLease }),
      v: 2,
      kind: 'status',
      pool: p.config.name,
      epoch: p.epoch,
      capacityTokens: p.config.capacity,
      levelTokens: p.credit.levelTokens,
      leasedTokens: p.leases.boundTokensSum,
      leases: p.leases.size,
      waiting: p.waiters.size,
      quietMs: Math.ceil(Math.max(0, p.quietUntilUs - nowUs) / 1000),
      calls: p.tally.callTotals,
    };
  }

  /**
   * switchShadow — from now on grants carry `config.shadow`, and requests
   * are admitted by its identity rules (caps per identity, class grants);
   * `config` must lease as the pool does (sameLimits): nothing else
   * changes, no lease is renewed early or dropped.
   */
  switchShadow(config: PoolConfig): void {
    assertInvariant(sameLimits(this.partsNow.config, config), `pool ${config.name}: switchShadow with other limits`);
    this.partsNow = { ...this.partsNow, config };
  }

  /**
   * reconfigure — from `nowUs` on the pool serves `config` (pool-reconfigure.ts):
   * held requests are answered first under the old one (to `out`), the
   * level is kept (clipped to the new limits), and every live lease is of
   * the old generation: its next acquire opens a new lease.
   */
  reconfigure(config: PoolConfig, nowUs: number, out: Delivery<R>[]): void {
    this.flush(nowUs, out);
    this.partsNow = reconfigureParts(this.partsNow, config, nowUs);
  }

  /**
   * snapshot — the pool as of its last step; changes nothing (no refill, no
   * expiry). With `nowUs`, a window (or concurrency) pool's tokens whose
   * cooling is over by then count in the level, as its next step would put
   * them, so a pool nobody asked since does not look held back for good.
   */
  snapshot(nowUs?: number): PoolSnapshot {
    const p = this.parts;
    const due = nowUs !== undefined && p.credit instanceof WindowCredit ? p.credit.dueTokens(nowUs, p.leases.boundTokensSum) : 0;
    return {
      config: p.config,
      levelTokens: p.credit.levelTokens + due,
      leasedTokens: p.leases.boundTokensSum,
      leases: p.leases.size,
      waiting: p.waiters.size,
      quietUntilUs: p.quietUntilUs,
      epoch: p.epoch,
      coolingTokens: p.credit instanceof WindowCredit ? p.credit.coolingTokens - due : 0,
      calls: p.tally.callTotals,
    };
  }

  /**
   * takeTally — what only the pool knows, counted since the last call:
   * leases opened, returned and expired, tokens lost at expiry, and how
   * long each held request was held (µs). Grants and refusals are counted
   * by the adapter from the replies it sends.
   */
  takeTally(): PoolTallyCounts {
    const p = this.parts;
    const counts = p.tally.take(p.leases);
    return { ...counts, leasesOpened: this.takeOpened(), leasesReturned: this.takeReturned() };
  }

  private opened = 0;
  private returned = 0;

  private takeOpened(): number {
    const n = this.opened;
    this.opened = 0;
    return n;
  }

  private takeReturned(): number {
    const n = this.returned;
    this.returned = 0;
    return n;
  }

  /** spendable — the most `record`'s agent may still spend of it: its bound, or what a rate lease has accrued. */
  private spendable(record: LeaseRecord, nowUs: number): number {
    return record.isRate ? heldAt(record, nowUs, this.parts.periodUs) : record.boundTokens;
  }

  /** nextDeadlineUs — when `tick` next has work: a hold ends, a waiter's grant accrues or a lease expires. */
  nextDeadlineUs(): number {
    const p = this.parts;
    let deadline = Math.min(p.leases.earliestExpiryUs(), p.waiters.earliestDeadlineUs());
    const head = p.waiters.head();
    if (head !== undefined) deadline = Math.min(deadline, p.credit.accruesAtUs(head.thresholdTokens, p.leases.boundTokensSum));
    return deadline;
  }

  private repeat(record: LeaseRecord, to: R, out: Delivery<R>[]): void {
    const lastReply = lastGrantOf(record);
    if (lastReply !== null) {
      out.push({ to, reply: lastReply, repeat: true, grantFor: bindingOf(this.parts, record) });
      return;
    }
    // Still held: answer the retry's reply target instead of the first one.
    const waiter = this.parts.waiters.get(record.agentId);
    assertInvariant(waiter !== undefined, `held request of ${record.agentId} has no waiter`);
    waiter.to = to;
  }

  /** dropWaiter — a newer request of the agent supersedes its held one, which is answered as stale. */
  private dropWaiter(agentId: string, newerSeq: number, out: Delivery<R>[]): void {
    const held = this.parts.waiters.remove(agentId);
    if (held === undefined) return;
    const reply: Reply = staleSequenceReply(held.record.lastSeq, newerSeq, 'superseded by');
    out.push({ to: held.to, reply });
  }
}
