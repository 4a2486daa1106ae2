/**
 * OwnershipDriver: every decision of a durable coordinator about which
 * pools it owns, as a state machine that reads no clock and does no I/O.
 * Events come in (a heartbeat due, a store's answer, a request on a
 * subscription, a reconfiguration, stop, a timer), commands go out (store
 * calls, subscribe/unsubscribe, replies to send, log lines, wake me at t;
 * ownership-commands.ts). The adapter (adapters/durable-service.ts) carries
 * the commands out against the bus and Redis; the simulator (test/sim)
 * carries them out against its modelled store and network, on its clock.
 *
 * Rules:
 * - The bus: every heartbeat also probes the bus server (a flush). A
 *   member whose bus has answered no probe for a whole ownership TTL (cut
 *   from NATS, or its replies or the server's answers lost, while the
 *   store still answers it) steps out: it hands every unit over without
 *   waiting on the bus (subscriptions dropped at once, held requests
 *   answered, writes settled, records released), drops its member record,
 *   and neither heartbeats nor claims until a probe is answered again; its
 *   peers then own what it held. Otherwise it would keep renewing pools
 *   nobody could reach through it.
 * - Ownership (ownership.ts): every heartbeat (a third of the ownership
 *   TTL; beat-plan.ts) marks this member alive, renews what it owns (an
 *   ownership the store no longer renews is stepped down, and so is one
 *   whose renewals the store has not answered for a whole ownership TTL
 *   since the last answered one was sent: it may have lapsed, and a member
 *   cut off from the store must not keep taking its requests), and claims or
 *   hands over units as `planOwnership` says. A configured pool's subject
 *   is subscribed only while the pool is owned, in a queue group of that
 *   ownership's own (ownerQueueGroup): should two members be subscribed at
 *   once (one deposed or cut off that has not yet left, whose subscription
 *   NATS may keep for as long as it keeps writing to it), each request
 *   reaches both, rather than half of them reaching only the one that
 *   cannot answer; the one that no longer owns the pool answers
 *   `not-owner`, and a retry of the same seq gets the owner's answer
 *   again. The owner of the catch-all
 *   unit subscribes to every subject (another queue group) and routes each
 *   request as `routeCatchAll` says, claiming a template pool on its first
 *   request (every request that comes meanwhile waits for that one claim).
 * - A configured pool's request that reaches the catch-all is answered
 *   `not-owner` when the store says the pool has no owner (the gap before
 *   its claim); that it has one is trusted for OWNER_SEEN_US.
 * - Write before reply (write-lane.ts): every reply leaves through the
 *   write lane of the ownership that made it; a fenced write steps that
 *   ownership down. A lane whose ownership ended acts on nothing, so a late
 *   outcome cannot touch a later ownership of the same pool.
 * - Claims, step-downs, hand-overs and deletions of a pool run one after
 *   another (pool-tasks.ts). A hand-over stops the pool's subscription,
 *   answers its held requests, and waits for its writes to settle before it
 *   ends the ownership and releases the record; so does a deletion.
 * - Stop: no heartbeat after the running one; every unit handed over; the
 *   member's record dropped.
 */
import {
  CATCH_ALL_QUEUE_GROUP,
  isOperatorSubject,
  legacySubject,
  ownerQueueGroup,
  parseSubject,
  poolSubject,
  serviceSubject,
} from '@tokenlease/shared';
import { BeatPlan } from './beat-plan.js';
import type { Delivery } from './chunk-grant.js';
import type { CoordinatorConfig } from './config.js';
import { CoordinatorCore, notOwner } from './coordinator-core.js';
import type { LogLine, OwnershipCommand, ReplyLabel } from './ownership-commands.js';
import type { StoreCall, StoreOp, StoreResult } from './ownership-store.js';
import { CATCH_ALL_UNIT, ownershipUnits, planOwnership, routeCatchAll, type CatchAllRoute } from './ownership.js';
import type { ReconfigureSummary } from './pool-registry.js';
import { US_PER_MS } from './pool-parts.js';
import type { StoredPool } from './pool-state.js';
import { PoolTasks } from './pool-tasks.js';
import { WriteLane, type ChangeSource, type LaneStep, type LaneWrite, type WriteOutcome } from './write-lane.js';

/** DEFAULT_OWNERSHIP_TTL_MS — how long a pool's ownership lasts without renewal unless told otherwise, ms. */
export const DEFAULT_OWNERSHIP_TTL_MS = 3000;
/** OWNER_SEEN_US — how long the catch-all trusts that the store named an owner of a configured pool, µs. */
export const OWNER_SEEN_US = 250_000;
/** LEGACY_KEY — the subscription of protocol v1's subjects (never a unit: no pool name holds `*`). */
export const LEGACY_KEY = '*v1';
/** CLAIMLESS_RETRY_MS — how soon a request for a template pool another coordinator holds is asked again, ms. */
const CLAIMLESS_RETRY_MS = 250;

export interface OwnershipDriverOptions {
  readonly config: CoordinatorConfig;
  /** This coordinator's name among its peers; unique per process. */
  readonly member: string;
  /** How long an ownership record lives without renewal, ms (a positive integer). */
  readonly ownershipTtlMs: number;
  /** The instant the driver starts at, µs (the core's clock). */
  readonly startUs: number;
}

/** Held — one ownership: its epoch, whether it has a subscription, its write lane, and who waits for its writes to settle. */
export interface Held<R> {
  readonly epoch: number;
  /**
   * When the last call that set this ownership's expiry in the store and
   * was answered (the claim, or a renewal) was sent, µs: the record lives
   * at most one ownership TTL past it.
   */
  renewedUs: number;
  subscribed: boolean;
  readonly lane: WriteLane<R>;
  readonly settling: Array<() => void>;
}

/** Message — a request as a subscription got it. */
interface Message<R> {
  readonly subject: string;
  readonly payload: Uint8Array;
  readonly to: R;
}

type Continuation = (result: StoreResult) => void;

export class OwnershipDriver<R> {
  readonly core: CoordinatorCore<R>;
  readonly member: string;
  readonly ttlMs: number;
  private readonly prefix: string;
  private units: string[];
  private readonly owned = new Map<string, Held<R>>();
  /** Template pools being claimed for a request: the identity of the first, which makes the pool (pool-registry.ts). */
  private readonly makers = new Map<string, string>();
  private readonly tasks: PoolTasks;
  private readonly beats: BeatPlan;
  /** The lane of every pool not owned: it refuses grants and receipts and writes nothing. */
  private readonly unowned = WriteLane.unowned<R>();
  /** Configured pools the catch-all asked the store about: whether they had an owner, and when it asked. */
  private readonly ownerSeen = new Map<string, { owned: boolean; atUs: number }>();
  /** What the last heartbeat found: whether the store answered, and the live members. */
  private lastBeat: { ok: boolean; members: readonly string[] } = { ok: false, members: [] };
  private failedBeats = 0;
  private stopping = false;
  /** Set once `stop` has waited for the running heartbeat: the core is not ticked any more. */
  private ticksOver = false;
  /** Set once `stop` has drained the subscription of protocol v1's subjects. */
  private legacyStopped = false;
  private nowUs: number;
  private out: OwnershipCommand<R>[] = [];
  private tickets = 0;
  private readonly pending = new Map<number, Continuation>();
  private readonly bus = new Map<number, (ok: boolean) => void>();
  /** When the bus last answered a probe, µs (it starts on a bus that connected). */
  private busAnsweredUs: number;
  /** Heartbeats begun since the bus last answered a probe. */
  private beatsSinceBusAnswer = 0;
  /** Whether a bus probe waits for its answer (one at a time: a server that does not answer holds it). */
  private probing = false;
  /** Whether this member stepped out because its bus fell silent, until a probe is answered. */
  private busLost = false;

  constructor(options: OwnershipDriverOptions) {
    const { config, member, ownershipTtlMs, startUs } = options;
    if (!Number.isSafeInteger(ownershipTtlMs) || ownershipTtlMs < 3)
      throw new RangeError(`an ownership TTL must be an integer of at least 3 ms, not ${ownershipTtlMs}`);
    this.member = member;
    this.ttlMs = ownershipTtlMs;
    this.prefix = config.subjectPrefix;
    this.nowUs = startUs;
    this.busAnsweredUs = startUs;
    this.core = new CoordinatorCore<R>(config, 0, startUs, true, member);
    this.units = ownershipUnits(config.pools.map((p) => p.name));
    this.tasks = new PoolTasks(
      (pool) => this.owned.has(pool),
      (pool, error) => this.log('error', { event: 'store-task-failed', err: error, pool }, 'store task failed'),
    );
    this.beats = new BeatPlan(Math.max(1, Math.floor(ownershipTtlMs / 3)));
  }

  // ---- Views -------------------------------------------------------------------------------------------------

  /** owned — units and template pools owned now, with their epochs. */
  ownedEpochs(): ReadonlyMap<string, number> {
    return new Map([...this.owned].map(([unit, held]) => [unit, held.epoch]));
  }

  /** laneOf — the write lane of the ownership of `unit` held now, if any. */
  laneOf(unit: string): WriteLane<R> | undefined {
    return this.owned.get(unit)?.lane;
  }

  /** serving — whether the last heartbeat reached the store, the bus answers, and stop was not asked. */
  serving(): boolean {
    return this.lastBeat.ok && !this.busLost && !this.stopping;
  }

  /** lastEventUs — the instant of the last event the driver was given, µs. */
  get lastEventUs(): number {
    return this.nowUs;
  }

  storeUp(): boolean {
    return this.lastBeat.ok;
  }

  members(): readonly string[] {
    return this.lastBeat.members;
  }

  // ---- Events ------------------------------------------------------------------------------------------------

  /** start — subscribes protocol v1's subjects (answered unsupported-version), and the first heartbeat. */
  start(nowUs: number): OwnershipCommand<R>[] {
    return this.event(nowUs, () => {
      this.emit({ kind: 'subscribe', key: LEGACY_KEY, subject: legacySubject(this.prefix), queueGroup: CATCH_ALL_QUEUE_GROUP });
      this.beats.start(nowUs);
      this.beatIfDue();
      const fields = { event: 'durable-started', member: this.member, ownershipTtlMs: this.ttlMs, units: this.units };
      this.log('info', fields, 'durable coordinator started');
    });
  }

  /** message — a request reached the subscription `key` (a unit, the catch-all or LEGACY_KEY). */
  message(key: string, subject: string, payload: Uint8Array, to: R, nowUs: number): OwnershipCommand<R>[] {
    return this.event(nowUs, () => {
      const message = { subject, payload, to };
      if (key === LEGACY_KEY) this.send(this.core.receive(subject, payload, to, nowUs), { subject });
      else if (isOperatorSubject(this.prefix, subject)) return;
      else if (key === CATCH_ALL_UNIT) this.onCatchAll(message);
      else this.onPoolMessage(key, message);
    });
  }

  /** tick — the timer: the core ticks, evicted pools are deleted, a heartbeat due runs. */
  tick(nowUs: number): OwnershipCommand<R>[] {
    return this.event(nowUs, () => {
      if (!this.ticksOver) {
        this.core.tickEach(nowUs, (pool, out) => this.submit(pool, out));
        this.stepDownFaulted();
        for (const name of this.core.takeEvicted()) this.tasks.enqueue(name, (done) => this.forget(name, done));
        this.wake(this.core.nextDeadlineUs());
      }
      this.beatIfDue();
    });
  }

  /** stored — the store answered the call of `ticket` (or failed to). */
  stored(ticket: number, result: StoreResult, nowUs: number): OwnershipCommand<R>[] {
    return this.event(nowUs, () => {
      const then = this.pending.get(ticket);
      this.pending.delete(ticket);
      then?.(result);
    });
  }

  /** done — the unsubscribe, bus flush or bus probe of `ticket` is over; `ok` false: the probe failed. */
  done(ticket: number, nowUs: number, ok = true): OwnershipCommand<R>[] {
    return this.event(nowUs, () => {
      const then = this.bus.get(ticket);
      this.bus.delete(ticket);
      then?.(ok);
    });
  }

  /**
   * reconfigure — the core serves `next`; the units follow its pools. A pool
   * whose kind changed (configured ↔ template's) is handed over, to be owned
   * anew as its kind says; a pool added is claimed at the next heartbeat,
   * which runs now; a pool removed stays owned until its leases lapse (the
   * core evicts it, then its records are deleted).
   */
  reconfigure(next: CoordinatorConfig, nowUs: number): { summary: ReconfigureSummary; commands: OwnershipCommand<R>[] } {
    let summary: ReconfigureSummary | null = null;
    const commands = this.event(nowUs, () => {
      summary = this.core.reconfigure(next, nowUs, (pool, out) => this.submit(pool, out));
      this.units = ownershipUnits(next.pools.map((p) => p.name));
      for (const pool of summary.rekinded) if (this.owned.has(pool)) this.tasks.enqueue(pool, (done) => this.handOver(pool, done));
      this.wake(this.core.nextDeadlineUs());
      this.beats.request(nowUs);
      this.beatIfDue();
    });
    return { summary: summary as unknown as ReconfigureSummary, commands };
  }

  /** stop — no heartbeat after the running one; then every unit handed over (held requests answered, the rest written) and the member dropped; `stopped` at the end. */
  stop(nowUs: number): OwnershipCommand<R>[] {
    return this.event(nowUs, () => {
      if (this.stopping) return;
      this.stopping = true;
      this.beats.stop();
      const ticket = this.ticket();
      this.bus.set(ticket, () => {
        this.legacyStopped = true;
        this.leave();
      });
      this.emit({ kind: 'unsubscribe', key: LEGACY_KEY, ticket, drain: !this.busLost });
    });
  }

  // ---- Decision points a simulation may break on purpose (see test/sim) -----------------------------------------

  /** route — what the catch-all does with a request for `pool` (ownership.ts `routeCatchAll`). */
  protected route(pool: string | null, subject: string): CatchAllRoute {
    const kind = pool === null ? null : this.core.kindOf(pool);
    return routeCatchAll(
      pool,
      kind,
      pool !== null && this.core.pool(pool) !== undefined,
      parseSubject(this.prefix, subject)?.op === 'status',
    );
  }

  /** lapsed — the store no longer renews the ownership `held` of `unit` (`reason`): it steps down in the pool's turn; `then` once it has. */
  protected lapsed(unit: string, held: Held<R>, reason: string, then: () => void): void {
    this.tasks.enqueue(unit, (done) => this.stepDown(unit, reason, held, done), then);
  }

  /** landsOn — the ownership whose lane a write of `held` tells its outcome: `held`'s own, whatever holds `pool` now. */
  protected landsOn(_pool: string, held: Held<R>): Held<R> {
    return held;
  }

  /** heldOf — the ownership of `unit` held now, if any. */
  protected heldOf(unit: string): Held<R> | undefined {
    return this.owned.get(unit);
  }

  /** settled — calls `then` once no write of the ownership `held` is in flight. */
  protected settled(held: Held<R>, then: () => void): void {
    if (held.lane.writing) held.settling.push(then);
    else then();
  }

  // ---- Requests ----------------------------------------------------------------------------------------------

  private onPoolMessage(pool: string, message: Message<R>): void {
    if (this.core.pool(pool) !== undefined) return this.handle(pool, message);
    this.send([notOwner(message.to, null, `pool ${JSON.stringify(pool)} is changing owner; ask again`)], { pool });
  }

  private onCatchAll(message: Message<R>): void {
    const pool = parseSubject(this.prefix, message.subject)?.pool ?? null;
    const route = this.route(pool, message.subject);
    if (pool === null || route === 'refuse') {
      this.send(this.core.receive(message.subject, message.payload, message.to, this.nowUs), { subject: message.subject });
      return;
    }
    if (route === 'ignore') return this.answerIfUnowned(pool, message); // its owner, if any, gets it on the pool's own subject
    if (route === 'serve') return this.handle(pool, message);
    const identity = parseSubject(this.prefix, message.subject)?.identity ?? null;
    const refusal = identity === null ? null : this.core.makerRefusal(pool, identity, message.to);
    if (refusal !== null) return this.send([refusal], { subject: message.subject });
    const run = (): void => (this.core.pool(pool) === undefined ? this.refuseClaimless(message) : this.handle(pool, message));
    if (this.tasks.awaitClaim(pool, run)) {
      // The first request's identity makes the pool: counted against its maxPoolsPerIdentity once adopted.
      if (identity !== null) this.makers.set(pool, identity);
      this.tasks.enqueue(pool, (done) => this.claimTemplatePool(pool, done));
    }
  }

  /** handle — the core handles a request for `pool`; its replies leave through the pool's write lane. */
  private handle(pool: string, { subject, payload, to }: Message<R>): void {
    try {
      this.submit(pool, this.core.receive(subject, payload, to, this.nowUs));
      this.emit({ kind: 'handled', op: parseSubject(this.prefix, subject)?.op ?? '(bad subject)' });
    } catch (error) {
      this.emit({ kind: 'internal-error', to, subject, error });
    }
    this.stepDownFaulted();
    this.wake(this.core.touchedDeadlineUs());
  }

  /**
   * answerIfUnowned — a configured pool's request reaches the catch-all too:
   * when the store says nobody owns the pool (the gap before its claim), it
   * is answered `not-owner` at once instead of timing out. Only "it has an
   * owner" is remembered (for OWNER_SEEN_US): a remembered "none" could
   * answer not-owner beside an owner just claimed.
   */
  private answerIfUnowned(pool: string, message: Message<R>): void {
    const seen = this.ownerSeen.get(pool);
    if (seen !== undefined && seen.owned && this.nowUs - seen.atUs < OWNER_SEEN_US) return;
    this.call({ op: 'owner-of', unit: pool }, (result) => {
      if (!result.ok) return; // the store does not answer: the request waits for an owner as before
      this.ownerSeen.set(pool, { owned: result.value !== null, atUs: this.nowUs });
      if (result.value === null) {
        const retryMs = Math.max(1, Math.floor(this.ttlMs / 3));
        const refusal = notOwner(message.to, null, `pool ${JSON.stringify(pool)} has no owner yet; ask again`, retryMs);
        this.send([refusal], { subject: message.subject });
      }
    });
  }

  private refuseClaimless(message: Message<R>): void {
    const refusal = notOwner(message.to, null, 'this pool is held by another coordinator for now; ask again', CLAIMLESS_RETRY_MS);
    this.send([refusal], { subject: message.subject });
  }

  // ---- Write before reply ------------------------------------------------------------------------------------

  /** submit — replies of `pool` leave through the write lane of its ownership: after the changes behind them are written. */
  protected submit(pool: string, deliveries: Delivery<R>[]): void {
    if (deliveries.length === 0) return;
    const batch = { deliveries, producedUs: this.nowUs };
    const held = this.owned.get(pool);
    if (held === undefined)
      for (const refused of this.unowned.submit(batch).send) this.send(refused.deliveries, { pool }, batch.producedUs);
    else this.perform(pool, held, held.lane.submit(batch));
  }

  /** perform — does what `held`'s lane says: sends, steps that ownership down, starts its write. */
  private perform(pool: string, held: Held<R>, step: LaneStep<R>): void {
    for (const batch of step.send) this.send(batch.deliveries, { pool }, batch.producedUs, held.epoch);
    if (step.stepDown) {
      const reason = 'a write was fenced: the ownership lapsed or was claimed anew';
      this.tasks.enqueue(pool, (done) => this.stepDown(pool, reason, held, done));
    }
    if (step.write !== null) this.write(pool, held, step.write);
  }

  /** write — a write of `held`'s lane under the epoch the lane gave; its outcome goes to that lane. */
  private write(pool: string, held: Held<R>, { epoch, changes }: LaneWrite): void {
    const startedUs = this.nowUs;
    this.call({ op: 'write', unit: pool, epoch, changes }, (result) => {
      const outcome: WriteOutcome = result.ok ? (result.value ? 'written' : 'fenced') : 'unavailable';
      if (!result.ok) {
        const text = 'state store unavailable: nothing is granted until a write succeeds';
        this.log('warn', { event: 'store-unavailable', pool, err: result.error }, text);
      }
      this.emit({ kind: 'wrote', startedUs, outcome });
      const lane = this.landsOn(pool, held);
      this.perform(pool, lane, lane.lane.landed(outcome));
      if (!held.lane.writing) for (const then of held.settling.splice(0)) then();
    });
  }

  /** poolSource — the changes of the pool object `name` is now, while the core still holds that object (a failed pool's are never written). */
  private poolSource(name: string): ChangeSource {
    const pool = this.core.pool(name);
    const current = (): boolean => pool !== undefined && this.core.pool(name) === pool;
    return {
      takeChanges: () => (current() ? (pool?.takeChanges() ?? null) : null),
      requeueChanges: (changes) => (current() ? pool?.requeueChanges(changes) : undefined),
    };
  }

  /** stepDownFaulted — a pool that failed was dropped by the core: give it up, so it is taken over again from the store. */
  private stepDownFaulted(): void {
    const faults = this.core.takeFaults();
    if (faults.length > 0) this.emit({ kind: 'faults', faults });
    for (const { pool } of faults) {
      const held = this.owned.get(pool);
      const reason = 'the pool failed; it is taken over again from the store';
      if (held !== undefined) this.tasks.enqueue(pool, (done) => this.stepDown(pool, reason, held, done));
    }
  }

  // ---- Ownership tasks (each runs in its pool's turn) --------------------------------------------------------

  private claimTemplatePool(pool: string, done: () => void): void {
    const finish = (): void => {
      this.makers.delete(pool);
      for (const run of this.tasks.claimEnded(pool)) run();
      done();
    };
    if (!this.owned.has(CATCH_ALL_UNIT) || this.stopping) return finish();
    this.claim(pool, finish, (error) => {
      this.log('warn', { event: 'claim-failed', pool, err: error }, 'could not claim a template pool');
      finish();
    });
  }

  /** claimIfPlanned — a claim the heartbeat planned, unless stop came or the unit is owned by now. */
  private claimIfPlanned(unit: string, done: () => void): void {
    if (this.stopping || this.owned.has(unit)) return done();
    this.claim(unit, done, (error) => {
      this.log('error', { event: 'store-task-failed', err: error, pool: unit }, 'store task failed');
      done();
    });
  }

  /** claim — takes `unit` over from the store; `then` once it is ours and subscribed, or not taken; `failed` if the store failed. */
  protected claim(unit: string, then: () => void, failed: (error: unknown) => void): void {
    const sentUs = this.nowUs;
    this.call({ op: 'claim', unit, ttlMs: this.ttlMs }, (result) => {
      if (!result.ok) return failed(result.error);
      const claim = result.value;
      if (!claim.taken) return then();
      if (claim.clearedOwner)
        this.log('error', { event: 'owner-record-cleared', pool: unit }, 'an ownership record that would never expire was deleted');
      if (unit !== CATCH_ALL_UNIT && !this.adopt(unit, claim.epoch, claim.state)) {
        this.call({ op: 'release', unit, epoch: claim.epoch }, (released) => (released.ok ? then() : failed(released.error)));
        return;
      }
      this.own(unit, claim.epoch, sentUs, then);
    });
  }

  /** adopt — the core takes `unit` over now (the instant of the takeover) with `state`; false when it would not. */
  private adopt(unit: string, epoch: number, state: StoredPool): boolean {
    const adopted = this.core.adopt(unit, epoch, this.nowUs, state, this.makers.get(unit) ?? null);
    if (adopted === 'damaged') {
      const fields = { event: 'state-invalid', pool: unit, reason: this.core.pool(unit)?.damage };
      this.log('error', fields, 'stored state not adopted: the pool starts empty and quiet for one TTL');
    }
    return adopted === 'adopted' || adopted === 'damaged';
  }

  /**
   * own — `unit` is ours under `epoch` (claimed by a call sent at
   * `claimedUs`): a write lane of its own, its subscription, and once the
   * bus has that, the line that says so.
   */
  private own(unit: string, epoch: number, claimedUs: number, then: () => void): void {
    // A new ownership writes through a lane of its own, bound to its epoch and to the pool just adopted.
    const lane = unit === CATCH_ALL_UNIT ? WriteLane.unowned<R>() : new WriteLane<R>(epoch, this.poolSource(unit));
    const held: Held<R> = { epoch, renewedUs: claimedUs, subscribed: false, lane, settling: [] };
    this.owned.set(unit, held);
    if (unit === CATCH_ALL_UNIT) this.subscribe(held, unit, serviceSubject(this.prefix), CATCH_ALL_QUEUE_GROUP);
    else if (this.core.kindOf(unit) === 'fixed') this.subscribe(held, unit, poolSubject(this.prefix, unit), ownerQueueGroup(epoch));
    // Read before requests can arrive (a status read ticks the pool, and nothing would send what that answered),
    // at the takeover's instant: what was adopted, without the refill since.
    const status = unit === CATCH_ALL_UNIT ? undefined : this.core.pool(unit)?.status(this.nowUs, []);
    const ticket = this.ticket();
    this.emit({ kind: 'flush-bus', ticket });
    this.bus.set(ticket, () => {
      // Logged once the server has the subscription, so a request sent after the line finds a responder.
      const { leases, levelTokens, leasedTokens } = status ?? {};
      this.log('info', { event: 'pool-owned', pool: unit, epoch, leases, levelTokens, leasedTokens }, 'pool owned');
      this.wake(this.core.nextDeadlineUs());
      then();
    });
  }

  /** stepDown — forgets the ownership `held` of `unit` at once, without writing (the store says it is no longer ours); nothing if it already ended. */
  private stepDown(unit: string, reason: string, held: Held<R>, done: () => void): void {
    if (this.owned.get(unit) !== held) return done();
    this.owned.delete(unit);
    this.log('warn', { event: 'stepped-down', pool: unit, epoch: held.epoch, reason }, 'stepped down');
    this.send(this.core.release(unit), { pool: unit });
    this.perform(unit, held, held.lane.end());
    this.unsubscribe(held, unit, () => (unit === CATCH_ALL_UNIT ? this.handOverTemplatePools(done) : done()));
  }

  /**
   * handOver — gives `unit` up in order: no new requests, held ones
   * answered, the rest written, then the record released; `drain` false:
   * the subscription is dropped at once, not drained (the bus does not answer).
   */
  private handOver(unit: string, done: () => void, drain = true): void {
    const held = this.owned.get(unit);
    if (held === undefined) return done();
    const release = (): void => {
      if (this.owned.get(unit) !== held) return done(); // the final write was fenced: already stepped down
      this.owned.delete(unit);
      this.send(this.core.release(unit), { pool: unit });
      this.perform(unit, held, held.lane.end());
      this.call({ op: 'release', unit, epoch: held.epoch }, (result) => {
        if (!result.ok) {
          const text = 'could not release ownership; it lapses after its TTL';
          this.log('warn', { event: 'release-failed', pool: unit, err: result.error }, text);
        }
        this.log('info', { event: 'pool-handed-over', pool: unit, epoch: held.epoch }, 'pool handed over');
        done();
      });
    };
    this.unsubscribe(
      held,
      unit,
      () => {
        if (unit === CATCH_ALL_UNIT) return this.handOverTemplatePools(release);
        const flushed: Delivery<R>[] = [];
        this.core.pool(unit)?.flush(this.nowUs, flushed);
        this.submit(unit, flushed);
        this.settled(held, release);
      },
      drain,
    );
  }

  /** forget — an evicted template pool: its records go, so the store does not grow with every name ever seen. */
  private forget(pool: string, done: () => void): void {
    const held = this.owned.get(pool);
    if (held === undefined) return done();
    this.settled(held, () => {
      if (this.owned.get(pool) !== held) return done();
      this.owned.delete(pool);
      this.perform(pool, held, held.lane.end());
      // A configured pool removed from the configuration had its own subscription.
      this.unsubscribe(held, pool, () =>
        this.call({ op: 'forget', unit: pool, epoch: held.epoch }, (result) => {
          if (!result.ok) {
            const text = 'could not delete an evicted pool; its record stays until the next owner evicts it';
            this.log('warn', { event: 'forget-failed', pool, err: result.error }, text);
          }
          done();
        }),
      );
    });
  }

  /** handOverTemplatePools — every template pool owned is handed over (the catch-all's ownership ended); `then` once all are. */
  private handOverTemplatePools(then: () => void): void {
    const pools = [...this.owned.keys()].filter((name) => name !== CATCH_ALL_UNIT && this.core.kindOf(name) === 'template');
    const arrive = join(pools.length, then);
    for (const pool of pools) this.tasks.enqueue(pool, (done) => this.handOver(pool, done), arrive);
  }

  // ---- Heartbeat ---------------------------------------------------------------------------------------------

  private beatIfDue(): void {
    if (!this.beats.begin(this.nowUs)) return this.wake(this.beats.dueUs());
    this.probeBus();
    if (this.busSilent()) return this.stepOut(() => this.beatEnded(true));
    this.call({ op: 'heartbeat', ttlMs: this.ttlMs }, (result) => {
      const members = this.beaten(result);
      this.renewAll(() => this.plan(members, (answered) => this.beatEnded(answered)));
    });
  }

  /** beaten — what the heartbeat's answer says: the live members, or null when the store did not answer. */
  private beaten(result: StoreResult<'heartbeat'>): string[] | null {
    if (result.ok) {
      this.lastBeat = { ok: true, members: result.value.members };
      this.failedBeats = 0;
      const dropped = result.value.droppedImpossible;
      if (dropped > 0) this.log('error', { event: 'members-cleared', count: dropped }, 'members with impossible heartbeats were removed');
      return result.value.members;
    }
    this.lastBeat = { ok: false, members: this.lastBeat.members };
    this.failedBeats += 1;
    // Failed heartbeats are retried often (BeatPlan); one line per interval says the store is still down.
    if (this.beats.reportsFailure(this.failedBeats)) {
      const fields = { event: 'heartbeat-failed', err: result.error, failedBeats: this.failedBeats };
      this.log('warn', fields, 'heartbeat failed: the state store does not answer');
    }
    return null;
  }

  /**
   * renewAll — every ownership renewed; one the store no longer names is
   * stepped down, and so is one the store has not renewed for a whole
   * ownership TTL (unanswered: it may have lapsed, and another member may
   * own it now; staying subscribed would take half its requests into a
   * store this member cannot reach). `then` once all are through.
   */
  private renewAll(then: () => void): void {
    const arrive = join(this.owned.size, then);
    const sentUs = this.nowUs;
    for (const [unit, held] of [...this.owned]) {
      this.call({ op: 'renew', unit, epoch: held.epoch, ttlMs: this.ttlMs }, (result) => {
        if (this.owned.get(unit) !== held) return arrive();
        if (result.ok && result.value) {
          held.renewedUs = Math.max(held.renewedUs, sentUs);
          return arrive();
        }
        if (result.ok) return this.lapsed(unit, held, 'ownership lapsed', arrive);
        // Unknown whether it is still ours: keep it while its record must still live; every write is fenced anyway.
        if (this.nowUs - held.renewedUs < this.ttlMs * US_PER_MS) return arrive();
        this.lapsed(unit, held, 'the store has not renewed the ownership for one ownership TTL: it may have lapsed', arrive);
      });
    }
  }

  /**
   * busSilent — whether the bus has answered no probe for an ownership TTL,
   * over at least two heartbeats: the answer to a probe sent before this
   * process stood still (paused, or its event loop held) has had a turn
   * to be read, so its own stall is not taken for the bus's silence.
   */
  private busSilent(): boolean {
    this.beatsSinceBusAnswer += 1;
    return this.beatsSinceBusAnswer >= 2 && this.nowUs - this.busAnsweredUs >= this.ttlMs * US_PER_MS;
  }

  /** probeBus — asks the bus for an answer, unless a probe still waits for one; an answer brings a member that stepped out back. */
  private probeBus(): void {
    if (this.probing || this.stopping) return;
    this.probing = true;
    const ticket = this.ticket();
    this.emit({ kind: 'probe-bus', ticket });
    this.bus.set(ticket, (ok) => {
      this.probing = false;
      if (!ok) return;
      this.busAnsweredUs = this.nowUs;
      this.beatsSinceBusAnswer = 0;
      if (!this.busLost) return;
      this.busLost = false;
      this.log('info', { event: 'bus-back', member: this.member }, 'the bus answers again: taking part again');
      this.beats.request(this.nowUs);
      this.beatIfDue();
    });
  }

  /**
   * stepOut — the bus has not answered for an ownership TTL: every unit
   * handed over without waiting on the bus, then the member record
   * dropped (once); `then` once through. Nothing more while it stays silent.
   */
  private stepOut(then: () => void): void {
    if (this.busLost || this.stopping) return then();
    this.busLost = true;
    const silentMs = Math.floor((this.nowUs - this.busAnsweredUs) / US_PER_MS);
    const units = [...this.owned.keys()].filter((u) => u === CATCH_ALL_UNIT || this.core.kindOf(u) !== 'template');
    this.log(
      'warn',
      { event: 'bus-lost', member: this.member, silentMs, units: units.length },
      'the bus does not answer: handing every pool over',
    );
    const arrive = join(units.length, () =>
      this.call({ op: 'heartbeat', ttlMs: 0 }, (result) => {
        this.lastBeat = result.ok ? { ok: true, members: result.value.members } : { ok: false, members: this.lastBeat.members };
        then();
      }),
    );
    for (const unit of units) this.tasks.enqueue(unit, (done) => this.handOver(unit, done, false), arrive);
  }

  /** plan — claims and hand-overs as `planOwnership` says for `members` (null: the store did not answer); `then` once all are through. */
  private plan(members: string[] | null, then: (answered: boolean) => void): void {
    if (members === null || this.stopping) return then(members !== null);
    const owned = new Set(this.units.filter((u) => this.owned.has(u)));
    const plan = planOwnership(this.member, members, this.units, owned);
    const arrive = join(plan.release.length + plan.claim.length, () => then(true));
    for (const unit of plan.release) this.tasks.enqueue(unit, (done) => this.handOver(unit, done), arrive);
    for (const unit of plan.claim) this.tasks.enqueue(unit, (done) => this.claimIfPlanned(unit, done), arrive);
  }

  private beatEnded(answered: boolean): void {
    this.beats.end(answered, this.nowUs);
    if (this.stopping) this.leave();
    else this.beatIfDue();
  }

  /** leave — the end of stop, once protocol v1's subscription is drained and no heartbeat runs: every unit handed over (the catch-all hands its template pools over), then the member dropped. */
  private leave(): void {
    if (this.ticksOver || !this.legacyStopped || this.beats.running) return;
    this.ticksOver = true;
    const units = [...this.owned.keys()].filter((u) => u === CATCH_ALL_UNIT || this.core.kindOf(u) !== 'template');
    const arrive = join(units.length, () =>
      this.call({ op: 'heartbeat', ttlMs: 0 }, () => {
        // Failed or not: a member record lapses by itself.
        this.log('info', { event: 'durable-stopped', member: this.member }, 'durable coordinator stopped');
        this.emit({ kind: 'stopped' });
      }),
    );
    for (const unit of units) this.tasks.enqueue(unit, (done) => this.handOver(unit, done), arrive);
  }

  // ---- Plumbing ----------------------------------------------------------------------------------------------

  private subscribe(held: Held<R>, key: string, subject: string, queueGroup: string): void {
    held.subscribed = true;
    this.emit({ kind: 'subscribe', key, subject, queueGroup });
  }

  /** unsubscribe — the subscription of `held` (if any) stopped, drained unless `drain` is false; `then` once it is. */
  private unsubscribe(held: Held<R>, key: string, then: () => void, drain = true): void {
    if (!held.subscribed) return then();
    held.subscribed = false;
    const ticket = this.ticket();
    this.bus.set(ticket, then);
    this.emit({ kind: 'unsubscribe', key, ticket, drain });
  }

  private call<K extends StoreOp>(call: Extract<StoreCall, { op: K }>, then: (result: StoreResult<K>) => void): void {
    const ticket = this.ticket();
    this.pending.set(ticket, then as Continuation);
    this.emit({ kind: 'store', ticket, call });
  }

  /** send — `deliveries` leave now; `producedUs`: when they were made (default now); `epoch`: the ownership whose lane released them. */
  protected send(deliveries: readonly Delivery<R>[], label: ReplyLabel, producedUs = this.nowUs, epoch: number | null = null): void {
    if (deliveries.length > 0) this.emit({ kind: 'send', deliveries, producedUs, epoch, label });
  }

  private wake(atUs: number): void {
    if (Number.isFinite(atUs)) this.emit({ kind: 'wake', atUs });
  }

  private log(level: LogLine['level'], fields: LogLine['fields'], message: string): void {
    this.emit({ kind: 'log', line: { level, fields, message } });
  }

  private emit(command: OwnershipCommand<R>): void {
    this.out.push(command);
  }

  private ticket(): number {
    return (this.tickets += 1);
  }

  /** event — runs `f` at `nowUs` and returns the commands it made. */
  private event(nowUs: number, f: () => void): OwnershipCommand<R>[] {
    this.nowUs = nowUs;
    try {
      f();
    } catch (error) {
      // A broken invariant: said loudly, and what was decided before it is still carried out.
      this.log('error', { event: 'driver-failed', err: error }, 'the ownership driver failed while handling an event');
    }
    const out = this.out;
    this.out = [];
    return out;
  }
}

/** join — a function to call `count` times; the last call calls `then` (at once when `count` is 0). */
function join(count: number, then: () => void): () => void {
  let left = count;
  if (left === 0) then();
  return () => {
    left -= 1;
    if (left === 0) then();
  };
}
