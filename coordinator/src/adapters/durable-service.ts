/**
 * The durable coordinator service: the NATS service of `service.ts` with
 * the state kept in a store (Redis) and pools shared among coordinators.
 *
 * - Ownership: every heartbeat (a third of the ownership TTL) it marks
 *   itself alive, renews what it owns, and claims or hands over units as
 *   `planOwnership` says. It subscribes to a configured pool's subject
 *   only while it owns that pool, so agents reach the owner through the
 *   subject alone; the owner of the catch-all unit subscribes to every
 *   subject (another queue group) and serves template pools, claiming each
 *   on its first request, and refuses unknown names.
 * - Write before reply: replies leave only after the changes behind them
 *   are written by a fenced script. Writes of one pool go in order, one at
 *   a time; what changes meanwhile goes into the next write (group commit).
 *   A fenced write means another coordinator owns the pool: it steps down
 *   and answers `not-owner`, never the grant. A store that does not answer
 *   turns grants into `unavailable` errors; the core's state is kept, so
 *   the agent's retry gets the original grant once a write succeeds.
 */
import {
  CATCH_ALL_QUEUE_GROUP,
  COORDINATOR_QUEUE_GROUP,
  hostMonoNowUs,
  parseSubject,
  poolSubject,
  serviceSubject,
  type Bus,
  type Reply,
  type ReplyPort,
} from '@tokenlease/shared';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import { CoordinatorCore, notOwner } from '../core/coordinator-core.js';
import { CATCH_ALL_UNIT, ownershipUnits, planOwnership } from '../core/ownership.js';
import type { Delivery } from '../core/pool.js';
import type { StateStore } from './redis-store.js';
import { INTERNAL_ERROR, sendReplies } from './reply-log.js';
import { TickTimer } from './tick-timer.js';

export const DEFAULT_OWNERSHIP_TTL_MS = 3000;

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
}

export interface DurableService {
  readonly core: CoordinatorCore<ReplyPort>;
  readonly member: string;
  /** owned — units and template pools owned now, with their epochs. */
  owned(): ReadonlyMap<string, number>;
  /** stop — answers held requests, writes what is unwritten, hands every pool over and leaves. */
  stop(): Promise<void>;
}

interface Held {
  readonly epoch: number;
  sub: { stop(): Promise<void> } | null;
}

interface Lane {
  tail: Promise<void>;
  deliveries: Delivery<ReplyPort>[];
  flushQueued: boolean;
  /** Requests that wait for this template pool's claim; null when no claim is under way. */
  awaitingClaim: Array<() => void> | null;
}

type Message = [subject: string, payload: Uint8Array, port: ReplyPort];

export function startDurableService(options: DurableServiceOptions): DurableService {
  const { config, bus, store, logger, member } = options;
  const nowUs = options.nowUs ?? hostMonoNowUs;
  const ttlMs = options.ownershipTtlMs ?? DEFAULT_OWNERSHIP_TTL_MS;
  const prefix = config.subjectPrefix;
  const core = new CoordinatorCore<ReplyPort>(config, 0, nowUs(), true);
  const units = ownershipUnits(config.pools.map((p) => p.name));
  const owned = new Map<string, Held>();
  const lanes = new Map<string, Lane>();
  let stopped = false;

  const timer = new TickTimer(nowUs, () => {
    core.tickEach(nowUs(), submit);
    for (const name of core.takeEvicted()) void enqueue(name, () => forget(name));
    return core.nextDeadlineUs();
  });

  function lane(pool: string): Lane {
    let l = lanes.get(pool);
    if (l === undefined) {
      l = { tail: Promise.resolve(), deliveries: [], flushQueued: false, awaitingClaim: null };
      lanes.set(pool, l);
    }
    return l;
  }

  /** enqueue — runs `task` after every earlier task of `pool`, so its store operations stay in order. */
  function enqueue(pool: string, task: () => Promise<void>): Promise<void> {
    const l = lane(pool);
    const run = l.tail.then(task).catch((error: unknown) => logger.error({ err: error, pool }, 'store task failed'));
    l.tail = run;
    void run.then(() => {
      if (l.tail === run && l.deliveries.length === 0 && !owned.has(pool)) lanes.delete(pool);
    });
    return run;
  }

  function submit(pool: string, deliveries: Delivery<ReplyPort>[]): void {
    if (deliveries.length === 0) return;
    const l = lane(pool);
    l.deliveries.push(...deliveries);
    if (l.flushQueued) return;
    l.flushQueued = true;
    void enqueue(pool, () => flush(pool));
  }

  async function flush(pool: string): Promise<void> {
    const l = lane(pool);
    l.flushQueued = false;
    const batch = l.deliveries.splice(0);
    const held = owned.get(pool);
    const changes = core.pool(pool)?.takeChanges() ?? null;
    if (held === undefined) return send(batch, 'not-owner');
    if (changes !== null) {
      let written: boolean;
      try {
        written = await store.write(pool, member, held.epoch, changes);
      } catch (error) {
        core.pool(pool)?.requeueChanges(changes);
        logger.warn({ pool, err: error }, 'state store unavailable: nothing is granted until a write succeeds');
        return send(batch, 'unavailable');
      }
      if (!written) {
        send(batch, 'not-owner');
        return stepDown(pool, 'a write was fenced: another coordinator owns the pool');
      }
    }
    send(batch, null);
  }

  /** send — sends a batch; with a refusal code, every grant or receipt in it becomes that refusal instead. */
  function send(batch: Delivery<ReplyPort>[], refusal: 'not-owner' | 'unavailable' | null): void {
    const out = refusal === null ? batch : batch.map((d) => (d.reply.kind === 'grant' || d.reply.kind === 'receipt' ? refuse(d.to, d.reply.seq, refusal) : d));
    sendReplies(logger, out, nowUs());
  }

  function refuse(to: ReplyPort, seq: number, code: 'not-owner' | 'unavailable'): Delivery<ReplyPort> {
    if (code === 'not-owner') return notOwner(to, seq, 'this coordinator no longer owns the pool; ask again');
    const reply: Reply = { v: 1, kind: 'error', seq, code, fault: 'coordinator', message: 'the state store does not answer: nothing can be granted until it does', retryAfterMs: 250 };
    return { to, reply };
  }

  function handle(pool: string, [subject, payload, port]: Message): void {
    try {
      submit(pool, core.receive(subject, payload, port, nowUs()));
    } catch (error) {
      logger.error({ err: error, subject }, 'internal error while handling a request');
      port.respond(INTERNAL_ERROR);
    }
    timer.schedule(core.touchedDeadlineUs());
  }

  function onPoolMessage(pool: string) {
    return (...message: Message): void => {
      if (core.pool(pool) === undefined) sendReplies(logger, [notOwner(message[2], null, `pool ${JSON.stringify(pool)} is changing owner; ask again`)], nowUs());
      else handle(pool, message);
    };
  }

  function onCatchAll(...message: Message): void {
    const parts = parseSubject(prefix, message[0]);
    const kind = parts === null ? null : core.kindOf(parts.pool);
    if (kind === 'fixed') return; // its owner gets it on the pool's own subject
    if (parts === null || kind === null || core.pool(parts.pool) !== undefined || parts.op === 'status') {
      // Unknown names and bad subjects are refused by the core; held template pools are served.
      if (parts === null || kind === null) sendReplies(logger, core.receive(message[0], message[1], message[2], nowUs()), nowUs(), message[0]);
      else handle(parts.pool, message);
      return;
    }
    const l = lane(parts.pool);
    const pool = parts.pool;
    if (l.awaitingClaim !== null) {
      l.awaitingClaim.push(() => (core.pool(pool) === undefined ? refuseClaimless(message) : handle(pool, message)));
      return;
    }
    l.awaitingClaim = [() => (core.pool(pool) === undefined ? refuseClaimless(message) : handle(pool, message))];
    void enqueue(pool, () => claimTemplatePool(pool));
  }

  function refuseClaimless([subject, , port]: Message): void {
    sendReplies(logger, [notOwner(port, null, 'this pool is held by another coordinator for now; ask again', 250)], nowUs(), subject);
  }

  async function claimTemplatePool(pool: string): Promise<void> {
    const l = lane(pool);
    try {
      if (owned.has(CATCH_ALL_UNIT) && !stopped) await claim(pool);
    } catch (error) {
      logger.warn({ pool, err: error }, 'could not claim a template pool');
    }
    const waiting = l.awaitingClaim ?? [];
    l.awaitingClaim = null;
    for (const run of waiting) run();
  }

  /** claim — takes `unit` over from the store; true when it is ours now. */
  async function claim(unit: string): Promise<boolean> {
    const result = await store.claim(unit, member, ttlMs);
    if (!result.taken) return false;
    if (unit !== CATCH_ALL_UNIT) {
      const adopted = core.adopt(unit, result.epoch, nowUs(), result.state);
      if (adopted !== 'adopted') {
        await store.release(unit, member, result.epoch);
        return false;
      }
    }
    const held: Held = { epoch: result.epoch, sub: null };
    owned.set(unit, held);
    if (unit === CATCH_ALL_UNIT) held.sub = bus.serve(serviceSubject(prefix), CATCH_ALL_QUEUE_GROUP, onCatchAll);
    else if (core.kindOf(unit) === 'fixed') held.sub = bus.serve(poolSubject(prefix, unit), COORDINATOR_QUEUE_GROUP, onPoolMessage(unit));
    // Read before requests can arrive (a status read ticks the pool, and nothing would send what that answered).
    const status = unit === CATCH_ALL_UNIT ? undefined : core.pool(unit)?.status(nowUs(), []);
    // Logged once the server has the subscription, so a request sent after the line finds a responder.
    await bus.flush().catch(() => undefined);
    logger.info({ pool: unit, epoch: result.epoch, leases: status?.leases, levelTokens: status?.levelTokens, leasedTokens: status?.leasedTokens }, 'pool owned');
    timer.schedule(core.nextDeadlineUs());
    return true;
  }

  /** stepDown — forgets `unit` at once, without writing (the store says it is no longer ours). */
  async function stepDown(unit: string, reason: string): Promise<void> {
    const held = owned.get(unit);
    if (held === undefined) return;
    owned.delete(unit);
    logger.warn({ pool: unit, epoch: held.epoch, reason }, 'stepped down');
    sendReplies(logger, core.release(unit), nowUs());
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
      core.pool(unit)?.flush(nowUs(), lane(unit).deliveries);
      await flush(unit);
    }
    if (!owned.has(unit)) return; // the final write was fenced: already stepped down
    owned.delete(unit);
    sendReplies(logger, core.release(unit), nowUs());
    try {
      await store.release(unit, member, held.epoch);
    } catch (error) {
      logger.warn({ pool: unit, err: error }, 'could not release ownership; it lapses after its TTL');
    }
    logger.info({ pool: unit, epoch: held.epoch }, 'pool handed over');
  }

  /** forget — an evicted template pool: its records go, so Redis does not grow with every name ever seen. */
  async function forget(pool: string): Promise<void> {
    const held = owned.get(pool);
    owned.delete(pool);
    if (held === undefined) return;
    try {
      await store.forget(pool, member, held.epoch);
    } catch (error) {
      logger.warn({ pool, err: error }, 'could not delete an evicted pool; its record stays until the next owner evicts it');
    }
  }

  function templatePools(): string[] {
    return [...owned.keys()].filter((name) => name !== CATCH_ALL_UNIT && core.kindOf(name) === 'template');
  }

  async function heartbeat(): Promise<void> {
    let members: string[] | null = null;
    try {
      members = await store.heartbeat(member, ttlMs);
    } catch (error) {
      logger.warn({ err: error }, 'heartbeat failed: the state store does not answer');
    }
    await Promise.all(
      [...owned].map(async ([unit, held]) => {
        try {
          if (!(await store.renew(unit, member, held.epoch, ttlMs)) && owned.get(unit) === held) await enqueue(unit, () => stepDown(unit, 'ownership lapsed'));
        } catch {
          // Unknown whether it is still ours: keep it; every write is fenced anyway.
        }
      }),
    );
    if (members === null || stopped) return;
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
  }

  let beating: Promise<void> = Promise.resolve();
  let beatBusy = false;
  const runBeat = (): void => {
    // A heartbeat slower than the interval (a store timing out) is not stacked up behind.
    if (beatBusy) return;
    beatBusy = true;
    beating = heartbeat()
      .catch((error: unknown) => logger.error({ err: error }, 'heartbeat task failed'))
      .finally(() => {
        beatBusy = false;
      });
  };
  const beat = setInterval(runBeat, Math.max(1, Math.floor(ttlMs / 3)));
  runBeat();
  logger.info({ member, ownershipTtlMs: ttlMs, units }, 'durable coordinator started');

  return {
    core,
    member,
    owned: () => new Map([...owned].map(([unit, held]) => [unit, held.epoch])),
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      clearInterval(beat);
      await beating;
      timer.stop();
      await Promise.all([...owned.keys()].filter((u) => !templatePools().includes(u)).map((unit) => enqueue(unit, () => handOver(unit))));
      try {
        await store.heartbeat(member, 0);
      } catch {
        // It lapses by itself.
      }
      logger.info({ member }, 'durable coordinator stopped');
    },
  };
}
