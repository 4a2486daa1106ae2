/**
 * The durable coordinator service: the NATS service of `service.ts` with
 * the state kept in a store (Redis) and pools shared among coordinators.
 * It moves bytes; the decisions are the cores':
 *
 * - Ownership (core/ownership.ts): every heartbeat (a third of the
 *   ownership TTL) it marks itself alive, renews what it owns, and claims
 *   or hands over units as `planOwnership` says. It subscribes to a
 *   configured pool's subject only while it owns that pool; the owner of
 *   the catch-all unit subscribes to every subject (another queue group)
 *   and routes each request as `routeCatchAll` says.
 * - Write before reply (core/write-lane.ts): every reply goes through the
 *   write lane of the ownership that made it (a claim's epoch and the pool
 *   adopted under it), which says what to write under which epoch, what to
 *   send, and when a fenced write means stepping that ownership down; this
 *   file performs the writes with fenced scripts and reports how each
 *   ended to the lane that asked. A lane whose ownership ended (a step-down,
 *   a hand-over) acts on nothing any more, so an outcome that comes back
 *   late, after the pool was claimed again, cannot touch the new ownership.
 * - Claims, hand-overs and deletions of a pool run one after another; a
 *   hand-over waits for the pool's writes to settle before it releases.
 */
import {
  CATCH_ALL_QUEUE_GROUP,
  COORDINATOR_QUEUE_GROUP,
  hostMonoNowUs,
  isOperatorSubject,
  legacySubject,
  parseSubject,
  poolSubject,
  serviceSubject,
} from '@tokenlease/shared';
import { type Bus, type BusHandler, type ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import { CoordinatorCore, notOwner } from '../core/coordinator-core.js';
import { CATCH_ALL_UNIT, ownershipUnits, planOwnership, routeCatchAll } from '../core/ownership.js';
import type { Delivery } from '../core/pool.js';
import type { ReconfigureSummary } from '../core/pool-registry.js';
import { WriteLane, type ChangeSource, type LaneStep, type LaneWrite, type WriteOutcome } from '../core/write-lane.js';
import type { OwnershipView, ServiceObserver } from './metrics.js';
import { Lanes, type Lane } from './durable-lanes.js';
import type { StateStore } from './redis-store.js';
import { INTERNAL_ERROR, REFUSAL_LOG_INTERVAL_MS, ReplyLog } from './reply-log.js';
import { BeatSchedule } from './beat-schedule.js';
import type { Served } from './service.js';
import { TickTimer } from './tick-timer.js';

export const DEFAULT_OWNERSHIP_TTL_MS = 3000;
/** How long the catch-all trusts what the store said about a configured pool's owner, µs. */
const OWNER_SEEN_US = 250_000;

export interface DurableServiceOptions {
  readonly config: CoordinatorConfig;
  readonly bus: Bus;
  readonly store: StateStore;
  readonly logger: Logger;
  /** This coordinator's name among its peers; unique per process. */
  readonly member: string;
  /** How long an ownership record lives without renewal, ms. */
  readonly ownershipTtlMs?: number;
  readonly nowUs?: () => number;
  /** Told every reply sent, every request's handling time and every write (the metrics). */
  readonly observer?: ServiceObserver;
}

export interface DurableService extends Served, OwnershipView {
  readonly member: string;
  /** owned — units and template pools owned now, with their epochs. */
  owned(): ReadonlyMap<string, number>;
  /** stop — answers held requests, writes what is unwritten, hands every pool over and leaves. */
  stop(): Promise<void>;
}

/** Held — one ownership: its epoch, its subscription, its write lane and the write in flight. */
interface Held {
  readonly epoch: number;
  sub: { stop(): Promise<void> } | null;
  readonly lane: WriteLane<ReplyPort>;
  /** The write loop while a write of this ownership is in flight. */
  running: Promise<void> | null;
}

type Message = [subject: string, payload: Uint8Array, port: ReplyPort];

export function startDurableService(options: DurableServiceOptions): DurableService {
  const { config, bus, store, logger, member } = options;
  const nowUs = options.nowUs ?? hostMonoNowUs;
  const ttlMs = options.ownershipTtlMs ?? DEFAULT_OWNERSHIP_TTL_MS;
  const prefix = config.subjectPrefix;
  let observer = options.observer ?? null;
  const core = new CoordinatorCore<ReplyPort>(config, 0, nowUs(), true, member);
  const replies = new ReplyLog(logger, prefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS, observer);
  /** Every request is screened first: one whose reply would go to another identity's inbox is dropped (core/reply-inbox.ts). */
  const screened = (handler: BusHandler): BusHandler => replies.screened(() => core.config, handler);
  /** serviceHandler — `handler` screened, for the requests of pools: operator requests are operations.ts's (which screens them). */
  const serviceHandler = (handler: BusHandler): BusHandler => {
    const handle = screened(handler);
    return (subject, payload, port) => {
      if (!isOperatorSubject(prefix, subject)) handle(subject, payload, port);
    };
  };
  let units = ownershipUnits(config.pools.map((p) => p.name));
  /** What the last heartbeat found: whether Redis answered, and the live members. */
  let lastBeat: { ok: boolean; members: readonly string[] } = { ok: false, members: [] };
  /** Heartbeats failed in a row. */
  let failedBeats = 0;
  const owned = new Map<string, Held>();
  const lanes = new Lanes(
    (pool) => owned.has(pool),
    (pool, error) => logger.error({ event: 'store-task-failed', err: error, pool }, 'store task failed'),
  );
  const lane = (pool: string): Lane => lanes.lane(pool);
  const enqueue = (pool: string, task: () => Promise<void>): Promise<void> => lanes.enqueue(pool, task);
  /** The lane of every pool not owned: it refuses grants and receipts and writes nothing. */
  const unowned = WriteLane.unowned<ReplyPort>();
  /** Configured pools the catch-all asked the store about: whether they had an owner, and when it asked. */
  const ownerSeen = new Map<string, { owned: boolean; atUs: number }>();
  let stopped = false;

  const timer = new TickTimer(
    nowUs,
    () => {
      core.tickEach(nowUs(), submit);
      stepDownFaulted();
      replies.flush();
      for (const name of core.takeEvicted()) void enqueue(name, () => forget(name));
      return core.nextDeadlineUs();
    },
    (error) => logger.error({ event: 'tick-failed', err: error }, 'tick failed'),
  );

  /** stepDownFaulted — a pool that failed was dropped by the core: give it up, so it is taken over again from the store. */
  function stepDownFaulted(): void {
    const faults = core.takeFaults();
    replies.faults(faults);
    for (const { pool } of faults) {
      const held = owned.get(pool);
      if (held !== undefined) void enqueue(pool, () => stepDown(pool, 'the pool failed; it is taken over again from the store', held));
    }
  }

  /** poolSource — the changes of the pool object `name` is now, while the core still holds that object (a failed pool's are never written). */
  function poolSource(name: string): ChangeSource {
    const pool = core.pool(name);
    return {
      takeChanges: () => (pool !== undefined && core.pool(name) === pool ? pool.takeChanges() : null),
      requeueChanges: (changes) => (pool !== undefined && core.pool(name) === pool ? pool.requeueChanges(changes) : undefined),
    };
  }

  /** submit — replies of `pool` leave through the write lane of its ownership: after the changes behind them are written. */
  function submit(pool: string, deliveries: Delivery<ReplyPort>[]): void {
    if (deliveries.length === 0) return;
    const batch = { deliveries, producedUs: nowUs() };
    const held = owned.get(pool);
    if (held === undefined) for (const refused of unowned.submit(batch).send) replies.send(refused.deliveries, nowUs(), { pool });
    else perform(pool, held, held.lane.submit(batch));
  }

  /** perform — does what `held`'s lane says: sends, steps that ownership down, starts its write. */
  function perform(pool: string, held: Held, step: LaneStep<ReplyPort>): void {
    for (const batch of step.send) replies.send(batch.deliveries, nowUs(), { pool });
    if (step.stepDown) void enqueue(pool, () => stepDown(pool, 'a write was fenced: the ownership lapsed or was claimed anew', held));
    if (step.write !== null) held.running = write(pool, held, step.write);
  }

  /** write — performs a write of `held`'s lane, under the epoch the lane gave, and tells that lane how it ended. */
  async function write(pool: string, held: Held, { epoch, changes }: LaneWrite): Promise<void> {
    const startUs = nowUs();
    const outcome = await store.write(pool, member, epoch, changes).then(
      (written): WriteOutcome => (written ? 'written' : 'fenced'),
      (error: unknown): WriteOutcome => {
        logger.warn({ event: 'store-unavailable', pool, err: error }, 'state store unavailable: nothing is granted until a write succeeds');
        return 'unavailable';
      },
    );
    observer?.wrote((nowUs() - startUs) / 1e6, outcome);
    held.running = null;
    perform(pool, held, held.lane.landed(outcome));
  }

  /** settled — resolves once no write of the ownership `held` is in flight. */
  async function settled(held: Held): Promise<void> {
    while (held.running !== null) await held.running;
  }

  function handle(pool: string, [subject, payload, port]: Message): void {
    const startUs = nowUs();
    try {
      submit(pool, core.receive(subject, payload, port, startUs));
      observer?.handled(parseSubject(prefix, subject)?.op ?? '(bad subject)', (nowUs() - startUs) / 1e6);
    } catch (error) {
      logger.error({ event: 'request-failed', err: error, subject }, 'internal error while handling a request');
      port.respond(INTERNAL_ERROR);
    }
    stepDownFaulted();
    timer.schedule(core.touchedDeadlineUs());
  }

  function onPoolMessage(pool: string) {
    return (...message: Message): void => {
      if (isOperatorSubject(prefix, message[0])) return;
      if (core.pool(pool) === undefined)
        replies.send([notOwner(message[2], null, `pool ${JSON.stringify(pool)} is changing owner; ask again`)], nowUs(), { pool });
      else handle(pool, message);
    };
  }

  function onCatchAll(...message: Message): void {
    if (isOperatorSubject(prefix, message[0])) return;
    const parts = parseSubject(prefix, message[0]);
    const pool = parts?.pool ?? null;
    const kind = pool === null ? null : core.kindOf(pool);
    const route = routeCatchAll(pool, kind, pool !== null && core.pool(pool) !== undefined, parts?.op === 'status');
    if (route === 'ignore') return answerIfUnowned(pool as string, message); // its owner, if any, gets it on the pool's own subject
    if (route === 'refuse' || pool === null) {
      replies.send(core.receive(message[0], message[1], message[2], nowUs()), nowUs(), { subject: message[0] });
      return;
    }
    if (route === 'serve') return handle(pool, message);
    const l = lane(pool);
    const run = (): void => (core.pool(pool) === undefined ? refuseClaimless(message) : handle(pool, message));
    if (l.awaitingClaim !== null) {
      l.awaitingClaim.push(run);
      return;
    }
    l.awaitingClaim = [run];
    void enqueue(pool, () => claimTemplatePool(pool));
  }

  /**
   * answerIfUnowned — a configured pool's request reaches the catch-all too:
   * when the store says nobody owns the pool (the gap before its claim), it
   * is answered `not-owner` at once instead of timing out. That the pool has
   * an owner is kept for OWNER_SEEN_US (configured pools only); that it has
   * none is asked again each time.
   */
  function answerIfUnowned(pool: string, message: Message): void {
    // Only "it has an owner" is remembered: a remembered "none" could answer not-owner beside an owner just claimed.
    const seen = ownerSeen.get(pool);
    if (seen !== undefined && seen.owned && nowUs() - seen.atUs < OWNER_SEEN_US) return;
    store.ownerOf(pool).then(
      (owner) => {
        ownerSeen.set(pool, { owned: owner !== null, atUs: nowUs() });
        if (owner === null) refuseUnowned(pool, message);
      },
      () => undefined, // the store does not answer: the request waits for an owner as before
    );
  }

  function refuseUnowned(pool: string, [subject, , port]: Message): void {
    const retryMs = Math.max(1, Math.floor(ttlMs / 3));
    replies.send([notOwner(port, null, `pool ${JSON.stringify(pool)} has no owner yet; ask again`, retryMs)], nowUs(), { subject });
  }

  function refuseClaimless([subject, , port]: Message): void {
    replies.send([notOwner(port, null, 'this pool is held by another coordinator for now; ask again', 250)], nowUs(), { subject });
  }

  async function claimTemplatePool(pool: string): Promise<void> {
    const l = lane(pool);
    try {
      if (owned.has(CATCH_ALL_UNIT) && !stopped) await claim(pool);
    } catch (error) {
      logger.warn({ event: 'claim-failed', pool, err: error }, 'could not claim a template pool');
    }
    const waiting = l.awaitingClaim ?? [];
    l.awaitingClaim = null;
    for (const run of waiting) run();
  }

  /** claim — takes `unit` over from the store; true when it is ours now. */
  async function claim(unit: string): Promise<boolean> {
    const result = await store.claim(unit, member, ttlMs);
    if (!result.taken) return false;
    if (result.clearedOwner)
      logger.error({ event: 'owner-record-cleared', pool: unit }, 'an ownership record that would never expire was deleted');
    // The instant of the takeover: the pool refills from it on, and the line below says what it held then.
    const claimedUs = nowUs();
    if (unit !== CATCH_ALL_UNIT) {
      const adopted = core.adopt(unit, result.epoch, claimedUs, result.state);
      if (adopted === 'damaged') {
        const reason = core.pool(unit)?.damage;
        logger.error(
          { event: 'state-invalid', pool: unit, reason },
          'stored state not adopted: the pool starts empty and quiet for one TTL',
        );
      } else if (adopted !== 'adopted') {
        await store.release(unit, member, result.epoch);
        return false;
      }
    }
    // A new ownership writes through a lane of its own, bound to its epoch and to the pool just adopted.
    const writes = unit === CATCH_ALL_UNIT ? WriteLane.unowned<ReplyPort>() : new WriteLane<ReplyPort>(result.epoch, poolSource(unit));
    const held: Held = { epoch: result.epoch, sub: null, lane: writes, running: null };
    owned.set(unit, held);
    if (unit === CATCH_ALL_UNIT) held.sub = bus.serve(serviceSubject(prefix), CATCH_ALL_QUEUE_GROUP, serviceHandler(onCatchAll));
    else if (core.kindOf(unit) === 'fixed')
      held.sub = bus.serve(poolSubject(prefix, unit), COORDINATOR_QUEUE_GROUP, serviceHandler(onPoolMessage(unit)));
    // Read before requests can arrive (a status read ticks the pool, and nothing would send what that answered),
    // at the takeover's instant: what was adopted, without the refill since.
    const status = unit === CATCH_ALL_UNIT ? undefined : core.pool(unit)?.status(claimedUs, []);
    // Logged once the server has the subscription, so a request sent after the line finds a responder.
    await bus.flush().catch(() => undefined);
    logger.info(
      {
        event: 'pool-owned',
        pool: unit,
        epoch: result.epoch,
        leases: status?.leases,
        levelTokens: status?.levelTokens,
        leasedTokens: status?.leasedTokens,
      },
      'pool owned',
    );
    timer.schedule(core.nextDeadlineUs());
    return true;
  }

  /** stepDown — forgets the ownership `held` of `unit` at once, without writing (the store says it is no longer ours); nothing if it already ended. */
  async function stepDown(unit: string, reason: string, held: Held): Promise<void> {
    if (owned.get(unit) !== held) return;
    owned.delete(unit);
    logger.warn({ event: 'stepped-down', pool: unit, epoch: held.epoch, reason }, 'stepped down');
    replies.send(core.release(unit), nowUs(), { pool: unit });
    perform(unit, held, held.lane.end());
    await held.sub?.stop();
    if (unit === CATCH_ALL_UNIT) await Promise.all(templatePools().map((pool) => enqueue(pool, () => handOver(pool))));
  }

  /** handOver — gives `unit` up in order: no new requests, held ones answered, the rest written, then the record released. */
  async function handOver(unit: string): Promise<void> {
    const held = owned.get(unit);
    if (held === undefined) return;
    await held.sub?.stop();
    held.sub = null;
    if (unit === CATCH_ALL_UNIT) await Promise.all(templatePools().map((pool) => enqueue(pool, () => handOver(pool))));
    else {
      const flushed: Delivery<ReplyPort>[] = [];
      core.pool(unit)?.flush(nowUs(), flushed);
      submit(unit, flushed);
      await settled(held);
    }
    if (owned.get(unit) !== held) return; // the final write was fenced: already stepped down
    owned.delete(unit);
    replies.send(core.release(unit), nowUs(), { pool: unit });
    perform(unit, held, held.lane.end());
    try {
      await store.release(unit, member, held.epoch);
    } catch (error) {
      logger.warn({ event: 'release-failed', pool: unit, err: error }, 'could not release ownership; it lapses after its TTL');
    }
    logger.info({ event: 'pool-handed-over', pool: unit, epoch: held.epoch }, 'pool handed over');
  }

  /** forget — an evicted template pool: its records go, so Redis does not grow with every name ever seen. */
  async function forget(pool: string): Promise<void> {
    const held = owned.get(pool);
    if (held === undefined) return;
    await settled(held);
    if (owned.get(pool) !== held) return;
    owned.delete(pool);
    perform(pool, held, held.lane.end());
    await held.sub?.stop(); // a configured pool removed from the configuration had its own subscription
    try {
      await store.forget(pool, member, held.epoch);
    } catch (error) {
      logger.warn(
        { event: 'forget-failed', pool, err: error },
        'could not delete an evicted pool; its record stays until the next owner evicts it',
      );
    }
  }

  function templatePools(): string[] {
    return [...owned.keys()].filter((name) => name !== CATCH_ALL_UNIT && core.kindOf(name) === 'template');
  }

  /** heartbeat — this member's heartbeat, its pools' ownership renewed, claims and hand-overs planned; true when the store answered. */
  async function heartbeat(): Promise<boolean> {
    let members: string[] | null = null;
    try {
      const beat = await store.heartbeat(member, ttlMs);
      members = beat.members;
      lastBeat = { ok: true, members };
      failedBeats = 0;
      if (beat.droppedImpossible > 0)
        logger.error({ event: 'members-cleared', count: beat.droppedImpossible }, 'members with impossible heartbeats were removed');
    } catch (error) {
      lastBeat = { ok: false, members: lastBeat.members };
      failedBeats += 1;
      // Failed heartbeats are retried often (BeatSchedule); one line per interval says the store is still down.
      if (beats.reportsFailure(failedBeats))
        logger.warn({ event: 'heartbeat-failed', err: error, failedBeats }, 'heartbeat failed: the state store does not answer');
    }
    await Promise.all(
      [...owned].map(async ([unit, held]) => {
        try {
          if (!(await store.renew(unit, member, held.epoch, ttlMs)) && owned.get(unit) === held)
            await enqueue(unit, () => stepDown(unit, 'ownership lapsed', held));
        } catch {
          // Unknown whether it is still ours: keep it; every write is fenced anyway.
        }
      }),
    );
    if (members === null || stopped) return members !== null;
    const ownedUnits = new Set(units.filter((u) => owned.has(u)));
    const plan = planOwnership(member, members, units, ownedUnits);
    await Promise.all([
      ...plan.release.map((unit) => enqueue(unit, () => handOver(unit))),
      ...plan.claim.map((unit) =>
        enqueue(unit, async () => {
          if (!stopped && !owned.has(unit)) await claim(unit);
        }),
      ),
    ]);
    return true;
  }

  // Requests of protocol v1 are answered unsupported-version by any member rather than left to time out.
  const legacy = bus.serve(
    legacySubject(prefix),
    CATCH_ALL_QUEUE_GROUP,
    screened((subject, payload, port) => {
      replies.send(core.receive(subject, payload, port, nowUs()), nowUs(), { subject });
    }),
  );
  const beats = new BeatSchedule(
    heartbeat,
    (error) => logger.error({ event: 'heartbeat-failed', err: error }, 'heartbeat task failed'),
    Math.max(1, Math.floor(ttlMs / 3)),
  );
  beats.start();
  logger.info({ event: 'durable-started', member, ownershipTtlMs: ttlMs, units }, 'durable coordinator started');

  /**
   * reconfigure — the core serves `next`; the units follow its pools. A pool
   * whose kind changed (configured ↔ template's) is handed over, to be owned
   * anew as its kind says; a pool added is claimed at the next heartbeat,
   * which starts now; a pool removed stays owned until its leases lapse
   * (the core evicts it, then its records are deleted).
   */
  function reconfigure(next: CoordinatorConfig): { summary: ReconfigureSummary; atUs: number } {
    const atUs = nowUs();
    const summary = core.reconfigure(next, atUs, submit);
    units = ownershipUnits(next.pools.map((p) => p.name));
    for (const pool of summary.rekinded) if (owned.has(pool)) void enqueue(pool, () => handOver(pool));
    timer.schedule(core.nextDeadlineUs());
    beats.run();
    return { summary, atUs };
  }

  return {
    core,
    member,
    replies,
    reconfigure,
    serving: () => lastBeat.ok && !stopped,
    observe(next: ServiceObserver): void {
      observer = next;
      replies.observer = next;
    },
    storeUp: () => lastBeat.ok,
    members: () => lastBeat.members,
    owned: () => new Map([...owned].map(([unit, held]) => [unit, held.epoch])),
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      await legacy.stop();
      await beats.stop();
      timer.stop();
      await Promise.all([...owned.keys()].filter((u) => !templatePools().includes(u)).map((unit) => enqueue(unit, () => handOver(unit))));
      try {
        await store.heartbeat(member, 0);
      } catch {
        // It lapses by itself.
      }
      logger.info({ event: 'durable-stopped', member }, 'durable coordinator stopped');
    },
  };
}
