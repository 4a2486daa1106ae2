/**
 * CoordinatorCore: the coordinator as a pure state machine.
 *
 * Events in: `receive(subject, payload, replyTo, nowUs)` for each request
 * and `tick(nowUs)` at or after `nextDeadlineUs()`; an adapter holding
 * several requests may first name them to `readAhead`, which decodes them
 * and reads their leases together and changes nothing (read-ahead.ts).
 * Effects out: a list of deliveries (reply + opaque target). It reads no
 * clock and does no I/O, so the same code runs under the NATS adapter and
 * under the simulator.
 *
 * Rules:
 * - Every request gets exactly one reply, now or (when held) later.
 * - Bad input (unparseable, oversized, out of range, subject and payload
 *   disagreeing, unknown pool) gets a typed error reply with `fault: 'peer'`
 *   and changes nothing; a request of another protocol version, on its
 *   subject or in its payload, gets `unsupported-version`. A refusal
 *   quotes what it refuses, cut to MESSAGE_TEXT_LENGTH_MAX characters, so
 *   that every reply decodes whatever the input.
 * - With `bindIdentity`, an agent id must belong to the identity token of
 *   the subject (the identity, or `<identity>.` and more): NATS permissions
 *   pin that token to each user, so one credential cannot act as another's
 *   agents. Otherwise `forbidden`, and nothing changes.
 * - Each acquire counts under the subject's identity token: the lease it
 *   opens, the request it holds and the template pool it makes are that
 *   identity's, within its caps per identity (pool-parts.ts,
 *   pool-registry.ts), and the class it claims weighs only if the
 *   configuration grants it to that identity (`classIdentities`). What this
 *   protects depends on who vouches for the token: with `bindIdentity` and
 *   NATS permissions pinning it to each user, a credential; without, the
 *   sender's word.
 * - `nowUs` is an integer count of microseconds of a monotonic clock.
 * - A fault is contained to its pool: when handling a pool throws (a broken
 *   invariant), every reply that call produced for it becomes an `internal`
 *   refusal, its held requests are refused likewise, and the pool is
 *   restarted empty and quiet (durable mode: dropped, to be taken over
 *   again from the store). Other pools never notice. `takeFaults` hands
 *   the faults to the adapter to log, once per fault, not per request.
 * - Durable mode: the core holds only the pools it was given (`adopt`),
 *   each with the epoch of its ownership, and forgets those it lost
 *   (`release`); which pools those are is the adapter's to learn.
 * - A new configuration (`reconfigure`) applies to live pools without a
 *   restart (pool-reconfigure.ts states the promise across it); one that
 *   would move the subjects (another prefix) is refused whole.
 * - Operators: `pools` lists the pools held (a page at a time, read
 *   without changing them); `reload` is the adapter's (it reads the file),
 *   once `receiveReload` says so. Both are answered only for identities
 *   operator-access.ts lets run them (others: `forbidden`, before the
 *   payload is read), and listings only within the listing budget
 *   (listing-budget.ts; beyond it: `unavailable` with the wait), so that
 *   repeated listings cannot stall the pools.
 */
import {
  assertTimeUs,
  decodeRequest,
  isOperatorOp,
  MESSAGE_TEXT_LENGTH_MAX,
  NO_CALLS,
  parseSubject,
  PROTOCOL_VERSION,
  subjectVersion,
  type ErrorCode,
  type Reply,
  type Request,
} from '@tokenlease/shared';
import type { CoordinatorConfig } from './config.js';
import type { LeaseTable } from './lease-table.js';
import { ListingBudget } from './listing-budget.js';
import { operatorRefusal } from './operator-access.js';
import { listingCost, listPools } from './pool-list.js';
import type { CreditFactory } from './pool-parts.js';
import type { Delivery, Pool } from './pool.js';
import { PoolRegistry, type PoolKind, type ReconfigureSummary } from './pool-registry.js';
import { concurrencyChangeProblem } from './pool-reconfigure.js';
import { PoolSchedule } from './pool-schedule.js';
import type { StoredPool } from './pool-state.js';
import type { PoolTallyCounts } from './pool-tally.js';
import { ReadAhead } from './read-ahead.js';

/** PoolFault — a pool whose handling threw, and what it threw. */
export interface PoolFault {
  readonly pool: string;
  readonly error: unknown;
}

/** How long a request refused for a pool fault should wait before asking again, ms. */
export const FAULT_RETRY_AFTER_MS = 1000;

/** HeldPool — a pool held now, how it is served, and the pool itself (for inspection only). */
export interface HeldPool<R> {
  readonly name: string;
  readonly kind: 'configured' | 'template' | 'removed';
  /** The template it was made from (`"tenant:*"`), or null. */
  readonly template: string | null;
  readonly pool: Pool<R>;
}

export class CoordinatorCore<R> {
  private readonly pools: PoolRegistry<R>;
  private configNow: CoordinatorConfig;
  /** Tallies of pools dropped (evicted, released, restarted) since the last `takeTallies`, so no count is lost. */
  private droppedTallies: { pool: string; counts: PoolTallyCounts }[] = [];
  private faults: PoolFault[] = [];
  /** Pools whose deadline could not be computed: the next tick contains them. */
  private readonly suspects = new Set<Pool<R>>();
  /** The pool the last `receive` reached, so the adapter can reschedule without scanning every pool. */
  private touched: Pool<R> | null = null;
  /** Requests the adapter said come next, decoded (readAhead). */
  private readonly ahead = new ReadAhead();
  private evicted: string[] = [];
  private readonly listingBudget: ListingBudget;
  /** When each pool next has work (pool-schedule.ts): a tick visits only the pools due. */
  private readonly schedule = new PoolSchedule<Pool<R>>();
  /** Set when pools were replaced wholesale (a start, a reconfiguration): every pool's instant is set again before use. */
  private scheduleStale = true;
  /**
   * Pools requests reached since their instants were last set: set again
   * before the schedule is read (not in `receive`). Almost always one pool
   * between settles, kept in `changedFirst`; the rest in `changedMore`.
   * Emptying a `Set` that lives in the old generation makes its new empty
   * table there: one per request, 120 bytes each, for the next full
   * collection (issue 32), so the set is emptied only when used.
   */
  private changedFirst: Pool<R> | null = null;
  private readonly changedMore = new Set<Pool<R>>();

  /**
   * CoordinatorCore — pools of `config`, all empty, refilling from the end
   * of the quiet period that starts at `startUs`. `epoch` names this
   * incarnation in lease ids and replies. `durable`: start with no pool
   * and serve only those adopted.
   */
  constructor(
    config: CoordinatorConfig,
    readonly epoch: number,
    startUs: number,
    private readonly durable = false,
    /** How this coordinator names itself to operators (`pools` replies). */
    public name = 'coordinator',
    /** Makes each pool's credit instead of a bucket's or window's (a relay: RelayCredit). */
    creditOf?: CreditFactory,
  ) {
    assertTimeUs(startUs, 'startUs');
    this.configNow = config;
    this.pools = new PoolRegistry<R>(config, epoch, startUs, durable, creditOf);
    this.listingBudget = new ListingBudget(startUs);
  }

  /** config — the configuration served now (replaced by `reconfigure`). */
  get config(): CoordinatorConfig {
    return this.configNow;
  }

  /**
   * reconfigureProblem — why `config` cannot replace the one served without
   * a restart, or null when it can: the subject prefix (and with it every
   * subject and subscription) must stay, and so must which pools count
   * slots, with hold bounds no shorter (concurrencyChangeProblem).
   */
  reconfigureProblem(config: CoordinatorConfig): string | null {
    if (config.subjectPrefix !== this.configNow.subjectPrefix) {
      return `subjectPrefix changes from ${JSON.stringify(this.configNow.subjectPrefix)} to ${JSON.stringify(config.subjectPrefix)}: that needs a restart`;
    }
    const before = new Map([...this.configNow.pools, ...this.configNow.templates.map((t) => t.pool)].map((p) => [p.name, p]));
    for (const next of [...config.pools, ...config.templates.map((t) => t.pool)]) {
      const old = before.get(next.name);
      const problem = old === undefined ? null : concurrencyChangeProblem(old, next);
      if (problem !== null) return problem;
    }
    return null;
  }

  /**
   * reconfigure — serves `config` from `nowUs` on: pools changed, added and
   * removed as PoolRegistry.reconfigure says; replies of requests held
   * under the old configuration go to `visit` by pool. Throws
   * CoordinatorError-free: call `reconfigureProblem` first (a problem here
   * is an assertion).
   */
  reconfigure(config: CoordinatorConfig, nowUs: number, visit: (pool: string, out: Delivery<R>[]) => void): ReconfigureSummary {
    assertTimeUs(nowUs);
    const problem = this.reconfigureProblem(config);
    if (problem !== null) throw new Error(problem);
    this.touched = null;
    this.suspects.clear();
    this.configNow = config;
    this.scheduleStale = true;
    return this.pools.reconfigure(config, nowUs, visit);
  }

  /** held — every pool held now (configured, template's and removed ones still lapsing), for inspection. */
  *held(): IterableIterator<HeldPool<R>> {
    for (const name of this.pools.names()) {
      const held = this.heldPool(name);
      if (held !== undefined) yield held;
    }
  }

  /** heldNames — the names of every pool held now, in no order: what a listing chooses its page among without looking at the pools. */
  heldNames(): IterableIterator<string> {
    return this.pools.names();
  }

  /** heldPool — the pool `name` as `held` shows it, or undefined when none of that name is held. */
  heldPool(name: string): HeldPool<R> | undefined {
    const pool = this.pools.existing(name);
    if (pool === undefined) return undefined;
    const kind = this.pools.isRetiring(name) ? 'removed' : this.pools.kindOf(name) === 'fixed' ? 'configured' : 'template';
    return { name, kind, template: kind === 'template' ? this.pools.templateKeyOf(name) : null, pool };
  }

  /** templateKeyOf — the template a name is (or would be) made from, as configured (`"tenant:*"`), or null. */
  templateKeyOf(name: string): string | null {
    return this.pools.templateKeyOf(name);
  }

  /** takeTallies — each pool's tally since the last call (pool-tally.ts), dropped pools' included; pools with nothing to tell are skipped. */
  takeTallies(visit: (pool: string, counts: PoolTallyCounts) => void): void {
    const dropped = this.droppedTallies;
    this.droppedTallies = [];
    for (const { pool, counts } of dropped) visit(pool, counts);
    for (const pool of this.pools.all()) {
      const counts = pool.takeTally();
      if (hasCounts(counts)) visit(pool.config.name, counts);
    }
  }

  /** keepTally — saves the tally of a pool about to be dropped. */
  private keepTally(pool: Pool<R> | undefined): void {
    if (pool === undefined) return;
    const counts = pool.takeTally();
    if (hasCounts(counts)) this.droppedTallies.push({ pool: pool.config.name, counts });
  }

  /** kindOf — whether `pool` names a configured pool, a template's pool, or neither. */
  kindOf(pool: string): PoolKind {
    return this.pools.kindOf(pool);
  }

  /**
   * adopt — (durable mode) takes the pool `name` over at `nowUs` under
   * `epoch`, with the store's `state` (null: no record, so it starts full);
   * 'damaged': taken over, but the state was not adopted (`pool(name).damage`
   * says why) and the pool starts empty and quiet for one TTL. `maker`:
   * the identity whose request made this coordinator claim a template pool,
   * counted against its `maxPoolsPerIdentity` (null: none).
   */
  adopt(
    name: string,
    epoch: number,
    nowUs: number,
    state: StoredPool,
    maker: string | null = null,
  ): 'adopted' | 'damaged' | 'too-many' | 'unknown' {
    assertTimeUs(nowUs);
    const before = this.pools.existing(name);
    const pool = this.pools.adopt(name, epoch, nowUs, state, maker);
    if (pool === undefined || pool === 'too-many') return pool ?? 'unknown';
    if (before !== undefined && before !== pool) this.schedule.forget(before);
    this.reschedule(pool);
    return pool.damage === null ? 'adopted' : 'damaged';
  }

  /** release — forgets the pool `name` (another coordinator owns it now); its held requests are told `not-owner`. */
  release(name: string): Delivery<R>[] {
    const pool = this.pools.release(name);
    this.keepTally(pool);
    if (pool !== undefined) {
      this.schedule.forget(pool);
      if (this.changedFirst === pool) this.changedFirst = null;
      this.changedMore.delete(pool);
    }
    if (this.touched === pool) this.touched = null;
    const message = `pool ${JSON.stringify(name)} is changing owner; ask again`;
    return (pool?.releaseWaiters() ?? []).map(({ seq, to }) => notOwner(to, seq, message));
  }

  /** takeEvicted — (durable mode) names of template pools forgotten by ticks since the last call. */
  takeEvicted(): string[] {
    const names = this.evicted;
    this.evicted = [];
    return names;
  }

  /**
   * readAhead — `payloads` are the next requests the adapter will hand to
   * `receive`, in that order: decodes them now and reads the leases they
   * name together, so that their waits for memory overlap (read-ahead.ts).
   * Changes nothing: each is answered in its turn as it would be without.
   * The payloads must reach `receive` unchanged.
   */
  readAhead(payloads: readonly Uint8Array[]): void {
    this.ahead.read(payloads, this.leasesOf);
  }

  private readonly leasesOf = (name: string): LeaseTable | undefined => this.pools.existing(name)?.leases;

  /** receive — handles one request's bytes; returns the replies it causes (possibly none while held). */
  receive(subject: string, payload: Uint8Array, replyTo: R, nowUs: number): Delivery<R>[] {
    assertTimeUs(nowUs);
    const out: Delivery<R>[] = [];
    const parts = parseSubject(this.config.subjectPrefix, subject);
    if (parts === null) {
      const version = subjectVersion(this.config.subjectPrefix, subject);
      const shown = JSON.stringify(subject.slice(0, 200));
      if (version !== null && version !== PROTOCOL_VERSION) {
        out.push(
          refusal(
            replyTo,
            'unsupported-version',
            null,
            `subject ${shown} is of protocol v${version}; this coordinator speaks v${PROTOCOL_VERSION}`,
          ),
        );
      } else out.push(refusal(replyTo, 'bad-request', null, `subject ${shown} is not a v${PROTOCOL_VERSION} request subject`));
      return out;
    }
    if (isOperatorOp(parts.op)) {
      // Before the payload is read: who may not ask learns nothing of how to ask.
      const denied = operatorRefusal(this.config, parts.identity);
      if (denied !== null) {
        out.push(refusal(replyTo, 'forbidden', null, denied));
        return out;
      }
    }
    const decoded = this.ahead.take(payload) ?? decodeRequest(payload);
    if (!decoded.ok) {
      out.push(refusal(replyTo, decoded.code, decoded.seq, decoded.message));
      return out;
    }
    const req = decoded.value;
    const seq = 'seq' in req ? req.seq : null;
    if (req.op !== parts.op || req.pool !== parts.pool) {
      out.push(
        refusal(replyTo, 'bad-request', seq, `payload (${req.op} on ${req.pool}) does not match subject (${parts.op} on ${parts.pool})`),
      );
      return out;
    }
    if (req.op === 'pools') {
      const waitMs = this.listingBudget.spend(listingCost(this, req), nowUs);
      out.push(waitMs === 0 ? { to: replyTo, reply: listPools(this, req, nowUs) } : listingDeferred(replyTo, waitMs));
      return out;
    }
    if (req.op === 'reload') {
      out.push(refusal(replyTo, 'bad-request', null, 'a reload is answered by every coordinator on its operator subscription, not here'));
      return out;
    }
    if (this.config.bindIdentity && req.op !== 'status' && !agentOfIdentity(req.agentId, parts.identity)) {
      const message = `agent ${JSON.stringify(req.agentId)} is not of identity ${JSON.stringify(parts.identity)}: its id must be the identity or start with "${parts.identity}."`;
      out.push(refusal(replyTo, 'forbidden', seq, message));
      return out;
    }
    // Only an acquire makes a pool from a template: a return, report or status for one that is not there finds nothing.
    const pool = req.op === 'acquire' ? this.pools.get(req.pool, nowUs, parts.identity) : this.pools.existing(req.pool);
    if (pool === undefined) {
      const why =
        req.op === 'acquire'
          ? 'is not configured and matches no template'
          : 'is not configured, and no template pool of that name is in use';
      out.push(refusal(replyTo, 'unknown-pool', seq, `pool ${JSON.stringify(req.pool)} ${why}`));
      return out;
    }
    if (pool === 'removed') {
      const message = `pool ${JSON.stringify(req.pool)} was removed from the configuration; its leases lapse`;
      out.push(refusal(replyTo, 'unknown-pool', seq, message));
      return out;
    }
    if (pool === 'too-many' || pool === 'identity-too-many') {
      out.push(this.templateFull(replyTo, seq, req.pool, pool === 'too-many' ? null : parts.identity));
      return out;
    }
    this.touched = pool;
    try {
      this.dispatch(pool, req, parts.identity, replyTo, nowUs, out);
    } catch (error) {
      this.contain(pool, error, nowUs, out, 0);
      if (!out.some((d) => d.to === replyTo)) out.push(internalError(replyTo, seq, req.pool));
    }
    if (this.touched !== null) this.noteChanged(this.touched);
    return out;
  }

  /**
   * makerRefusal — (durable mode, before a claim) the refusal of a request
   * under `identity` that would make this coordinator claim the template
   * pool `name` when that identity made as many of its template's pools as
   * one may; null when it may.
   */
  makerRefusal(name: string, identity: string, to: R): Delivery<R> | null {
    return this.pools.makerRefusal(name, identity) === null ? null : this.templateFull(to, null, name, identity);
  }

  /**
   * templateFull — the refusal of a new template pool `name`: its template
   * holds `maxPools` pools, or (`identity` not null) that identity made its
   * `maxPoolsPerIdentity` of them. Ask again once one may have been
   * forgotten: at the soonest a second (an idle pool lingers its template's
   * `idleEvictMs`, but another may be forgotten any moment).
   */
  private templateFull(to: R, seq: number | null, name: string, identity: string | null): Delivery<R> {
    const template = JSON.stringify(this.pools.templateKeyOf(name));
    const message =
      identity === null
        ? `pool ${JSON.stringify(name)}: its template has as many pools as it may hold`
        : `pool ${JSON.stringify(name)}: identity ${JSON.stringify(identity)} made as many pools of template ${template} as one identity may (maxPoolsPerIdentity)`;
    return { to, reply: { v: 2, kind: 'error', seq, code: 'unavailable', fault: 'peer', message: clipped(message), retryAfterMs: 1000 } };
  }

  /**
   * receiveReload — a request on the `reload` operator subscription:
   * 'reload' when it is a well-formed reload of an identity that may run
   * one (the adapter then re-reads its file and answers), else the refusal
   * `receive` gives it (`forbidden`, `bad-request`, …).
   */
  receiveReload(subject: string, payload: Uint8Array, replyTo: R, nowUs: number): 'reload' | Delivery<R>[] {
    const parts = parseSubject(this.config.subjectPrefix, subject);
    if (parts?.op === 'reload' && operatorRefusal(this.config, parts.identity) === null) {
      const decoded = decodeRequest(payload);
      if (decoded.ok && decoded.value.op === 'reload' && decoded.value.pool === parts.pool) return 'reload';
    }
    return this.receive(subject, payload, replyTo, nowUs);
  }

  /** takeFaults — the pool faults contained since the last call, for the adapter to log. */
  takeFaults(): PoolFault[] {
    const faults = this.faults;
    this.faults = [];
    return faults;
  }

  /**
   * contain — `pool` threw while producing `out` from index `mark` on:
   * those replies become `internal` refusals (nothing of a broken pool's
   * last step may reach an agent), its held requests are refused too, and
   * the pool restarts (memory mode) or is dropped (durable mode).
   */
  private contain(pool: Pool<R>, error: unknown, nowUs: number, out: Delivery<R>[], mark: number): void {
    const name = pool.config.name;
    const dropped = out.splice(mark);
    const held = pool.releaseWaiters();
    this.keepTally(this.pools.restart(name, nowUs));
    this.suspects.delete(pool);
    this.schedule.forget(pool);
    const restarted = this.pools.existing(name);
    if (restarted !== undefined) this.reschedule(restarted);
    if (this.touched === pool) this.touched = null;
    this.faults.push({ pool: name, error });
    for (const d of dropped) out.push(internalError(d.to, 'seq' in d.reply ? d.reply.seq : null, name));
    for (const h of held) if (!out.some((d) => d.to === h.to)) out.push(internalError(h.to, h.seq, name));
  }

  /** tick — refills, reclaims expired leases and answers held requests whose time has come. */
  tick(nowUs: number): Delivery<R>[] {
    assertTimeUs(nowUs);
    const out: Delivery<R>[] = [];
    this.tickEach(nowUs, (_pool, replies) => out.push(...replies));
    return out;
  }

  /**
   * tickEach — `tick`, handing each pool's replies to `visit` with its name
   * (for an adapter that writes per pool). Only the pools due at `nowUs`
   * are visited (pool-schedule.ts); an idle template pool or a retiring
   * pool due to be forgotten is forgotten here.
   */
  tickEach(nowUs: number, visit: (pool: string, out: Delivery<R>[]) => void): void {
    assertTimeUs(nowUs);
    this.settle();
    for (const pool of this.schedule.takeDue(nowUs)) {
      if (!this.pools.holds(pool)) continue;
      const out: Delivery<R>[] = [];
      try {
        if (this.suspects.has(pool)) throw new Error('its next deadline could not be computed');
        pool.tick(nowUs, out);
      } catch (error) {
        this.contain(pool, error, nowUs, out, 0);
      }
      if (out.length > 0) visit(pool.config.name, out);
      if (!this.pools.holds(pool)) continue;
      if (this.pools.evictIfIdle(pool, nowUs, (gone) => this.keepTally(gone))) {
        // Only a durable adapter collects them (to delete their records); memory mode just forgets.
        if (this.durable) this.evicted.push(pool.config.name);
        if (this.touched === pool) this.touched = null;
      } else this.reschedule(pool);
    }
  }

  /**
   * nextDeadlineUs — the earliest instant `tick` has work (a pool's own
   * deadline, or an idle pool to forget), or Infinity; read off the
   * schedule, whatever the number of pools.
   */
  nextDeadlineUs(): number {
    this.settle();
    return this.schedule.nextUs();
  }

  /** touchedDeadlineUs — when the pool the last `receive` reached next has work (Infinity if none). */
  touchedDeadlineUs(): number {
    this.settle();
    return this.touched === null ? Infinity : this.instantOf(this.touched);
  }

  /**
   * wake — `name`'s state changed from outside a request or a tick (a
   * relay's credit topped up by its upstream grant): the next tick visits it.
   */
  wake(name: string): void {
    this.settle();
    const pool = this.pools.existing(name);
    if (pool !== undefined) this.schedule.set(pool, 0);
  }

  /** instantOf — when `pool` next has work: its own deadline, or when the registry may forget it. */
  private instantOf(pool: Pool<R>): number {
    return Math.min(this.deadlineOf(pool), this.pools.forgetAtUs(pool));
  }

  /** reschedule — sets `pool`'s instant anew after a change to it. */
  private reschedule(pool: Pool<R>): void {
    this.schedule.set(pool, this.instantOf(pool));
  }

  /** settle — sets anew the instants of the pools requests changed, or of every pool after a wholesale change. */
  private settle(): void {
    if (this.scheduleStale) {
      this.scheduleStale = false;
      this.changedFirst = null;
      if (this.changedMore.size > 0) this.changedMore.clear();
      this.schedule.clear();
      for (const pool of this.pools.all()) this.reschedule(pool);
      return;
    }
    const first = this.changedFirst;
    if (first !== null) {
      this.changedFirst = null;
      if (this.pools.holds(first)) this.reschedule(first);
    }
    if (this.changedMore.size === 0) return;
    for (const pool of this.changedMore) if (this.pools.holds(pool)) this.reschedule(pool);
    this.changedMore.clear();
  }

  /** noteChanged — `pool` is to be rescheduled at the next settle. */
  private noteChanged(pool: Pool<R>): void {
    if (this.changedFirst === null) this.changedFirst = pool;
    else if (this.changedFirst !== pool) this.changedMore.add(pool);
  }

  /** deadlineOf — a pool's next deadline; a pool that cannot say is suspect and due at once. */
  private deadlineOf(pool: Pool<R>): number {
    try {
      return pool.nextDeadlineUs();
    } catch {
      this.suspects.add(pool);
      return 0;
    }
  }

  /** flush — answers every held request now (for shutdown). */
  flush(nowUs: number): Delivery<R>[] {
    assertTimeUs(nowUs);
    const out: Delivery<R>[] = [];
    this.flushEach(nowUs, (_pool, replies) => out.push(...replies));
    return out;
  }

  /** flushEach — `flush`, handing each pool's replies to `visit` with its name. */
  flushEach(nowUs: number, visit: (pool: string, out: Delivery<R>[]) => void): void {
    assertTimeUs(nowUs);
    for (const pool of this.pools.all()) {
      const out: Delivery<R>[] = [];
      try {
        pool.flush(nowUs, out);
      } catch (error) {
        this.contain(pool, error, nowUs, out, 0);
      }
      if (out.length > 0) visit(pool.config.name, out);
    }
  }

  /** pool — the named pool if it is held now, for inspection; never makes one. */
  pool(name: string): Pool<R> | undefined {
    return this.pools.existing(name);
  }

  /** poolCount — pools held now, configured and made from templates. */
  get poolCount(): number {
    return this.pools.size;
  }

  /** dispatch — `req`, sent under the identity token `identity`, to `pool`. */
  private dispatch(pool: Pool<R>, req: Request, identity: string, replyTo: R, nowUs: number, out: Delivery<R>[]): void {
    switch (req.op) {
      case 'acquire':
        pool.acquire(req, replyTo, nowUs, out, identity);
        return;
      case 'return':
        pool.giveBack(req, replyTo, nowUs, out);
        return;
      case 'report':
        pool.report(req, nowUs, out);
        return;
      case 'status':
        out.push({ to: replyTo, reply: pool.status(nowUs, out, req.agentId) });
        return;
      case 'pools':
      case 'reload':
        throw new Error(`operator op ${req.op} reached a pool`);
    }
  }
}

/** notOwner — the reply to a request that reached a coordinator not (or no longer) owning its pool. */
export function notOwner<R>(to: R, seq: number | null, message: string, retryAfterMs = 50): Delivery<R> {
  return { to, reply: { v: 2, kind: 'error', seq, code: 'not-owner', fault: 'coordinator', message, retryAfterMs } };
}

/** listingDeferred — the reply to a `pools` request beyond the listing budget: ask again in `waitMs`. */
function listingDeferred<R>(to: R, waitMs: number): Delivery<R> {
  const message = `listings are over their work budget on this coordinator; ask again in ${waitMs} ms`;
  return { to, reply: { v: 2, kind: 'error', seq: null, code: 'unavailable', fault: 'peer', message, retryAfterMs: waitMs } };
}

/** internalError — the refusal of a request that a pool fault cut short; the pool restarts, so ask again later. */
function internalError<R>(to: R, seq: number | null, pool: string): Delivery<R> {
  const message = `pool ${JSON.stringify(pool)} failed while handling this request and restarts; ask again`;
  return { to, reply: { v: 2, kind: 'error', seq, code: 'internal', fault: 'coordinator', message, retryAfterMs: FAULT_RETRY_AFTER_MS } };
}

/** agentOfIdentity — whether `agentId` belongs to `identity`: the identity itself, or `<identity>.` followed by anything. */
export function agentOfIdentity(agentId: string, identity: string): boolean {
  return agentId === identity || (agentId.length > identity.length + 1 && agentId.startsWith(`${identity}.`));
}

function hasCounts(c: PoolTallyCounts): boolean {
  return (
    c.leasesExpired + c.holdsUs.length + c.holdsDropped + c.leasesOpened + c.leasesReturned + c.classClaimsRefused + c.clockDrifts > 0 ||
    c.calls !== NO_CALLS
  );
}

/**
 * refusal — a peer's request refused with `code`. Its message quotes what
 * the peer sent (a subject, a version, an agent id), and escaping can make
 * that quote several times longer than the input, so the message is cut to
 * MESSAGE_TEXT_LENGTH_MAX characters: a longer one would not decode.
 */
function refusal<R>(to: R, code: ErrorCode, seq: number | null, message: string): Delivery<R> {
  const reply: Reply = { v: 2, kind: 'error', seq, code, fault: 'peer', message: clipped(message), retryAfterMs: 0 };
  return { to, reply };
}

/** clipped — `message`, or its first MESSAGE_TEXT_LENGTH_MAX − 1 characters and '…' (never half a surrogate pair). */
function clipped(message: string): string {
  if (message.length <= MESSAGE_TEXT_LENGTH_MAX) return message;
  const cut = message.slice(0, MESSAGE_TEXT_LENGTH_MAX - 1);
  return `${/[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}
