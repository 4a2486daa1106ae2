/**
 * The durable coordinator service: the NATS service of `service.ts` with
 * the state kept in a store (Redis) and pools shared among coordinators.
 *
 * Every decision is the ownership driver's (core/ownership-driver.ts):
 * which units to claim, renew, hand over or step down, in which order, what
 * the catch-all does with a request, what to write under which epoch before
 * which reply leaves, when to wake. This file carries its commands out
 * against the bus and the store, feeds every result back, and tells the
 * logger and the metrics what the driver says happened.
 */
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { type Bus, type BusHandler, type ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import type { OwnershipCommand } from '../core/ownership-commands.js';
import { DEFAULT_OWNERSHIP_TTL_MS, LEGACY_KEY, OwnershipDriver } from '../core/ownership-driver.js';
import type { StoreCall, StoreResult } from '../core/ownership-store.js';
import type { OwnershipView, ServiceObserver } from './metrics.js';
import type { StateStore } from './redis-store.js';
import { intakeLoop } from './intake-loop.js';
import { INTERNAL_ERROR, REFUSAL_LOG_INTERVAL_MS, ReplyLog } from './reply-log.js';
import type { Served } from './service.js';
import { TickTimer } from './tick-timer.js';

/** DurableServiceOptions — what startDurableService serves, over which bus and store, as which member, and where it logs. */
export interface DurableServiceOptions {
  readonly config: CoordinatorConfig;
  readonly bus: Bus;
  readonly store: StateStore;
  readonly logger: Logger;
  /** This coordinator's name among its peers; unique per process. */
  readonly member: string;
  /** How long an ownership record lives without renewal, ms. */
  readonly ownershipTtlMs?: number;
  /** The monotonic clock, µs; default the host's (hostMonoNowUs). */
  readonly nowUs?: () => number;
  /** Told every reply sent, every request's handling time and every write (the metrics). */
  readonly observer?: ServiceObserver;
}

/** DurableService — a running coordinator in durable mode (startDurableService): what it owns, and whether its store answers. */
export interface DurableService extends Served, OwnershipView {
  readonly member: string;
  /** owned — units and template pools owned now, with their epochs. */
  owned(): ReadonlyMap<string, number>;
  /** stop — answers held requests, writes what is unwritten, hands every pool over and leaves. */
  stop(): Promise<void>;
}

type Command = OwnershipCommand<ReplyPort>;

/**
 * startDurableService — a coordinator in durable mode: its pools' state in
 * the store, the pools shared among the coordinators (members) that use
 * the same store, each pool owned by one of them at a time.
 */
export function startDurableService(options: DurableServiceOptions): DurableService {
  const { config, bus, store, logger, member } = options;
  const nowUs = options.nowUs ?? hostMonoNowUs;
  const ownershipTtlMs = options.ownershipTtlMs ?? DEFAULT_OWNERSHIP_TTL_MS;
  const driver = new OwnershipDriver<ReplyPort>({ config, member, ownershipTtlMs, startUs: nowUs() });
  const core = driver.core;
  let observer = options.observer ?? null;
  const replies = new ReplyLog(logger, config.subjectPrefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS, observer);
  const subscriptions = new Map<string, { stop(): Promise<void> }>();
  let stopping: Promise<void> | null = null;
  let stopped = (): void => undefined;
  const failed = (error: unknown): void => logger.error({ event: 'store-task-failed', err: error }, 'store task failed');
  const timer = new TickTimer(
    nowUs,
    () => {
      perform(driver.tick(nowUs()));
      replies.flush();
      return Infinity; // the driver's `wake` commands arm the timer
    },
    (error) => logger.error({ event: 'tick-failed', err: error }, 'tick failed'),
  );

  /** perform — carries `commands` out in order; `startUs`: when the event behind them came (for handling times). */
  function perform(commands: readonly Command[], startUs = nowUs()): void {
    for (const command of commands) carry(command, startUs);
  }

  function carry(c: Command, startUs: number): void {
    switch (c.kind) {
      case 'store':
        return void call(c.call).then((result) => perform(driver.stored(c.ticket, result, nowUs())), failed);
      case 'subscribe':
        return void subscriptions.set(c.key, bus.serve(c.subject, c.queueGroup, handlerOf(c.key)));
      case 'unsubscribe':
        return void unsubscribe(c.key).then(() => perform(driver.done(c.ticket, nowUs())), failed);
      case 'flush-bus':
        return void bus
          .flush()
          .catch(() => undefined)
          .then(() => perform(driver.done(c.ticket, nowUs())))
          .catch(failed);
      case 'send':
        return replies.send(c.deliveries, nowUs(), c.label);
      case 'internal-error':
        logger.error({ event: 'request-failed', err: c.error, subject: c.subject }, 'internal error while handling a request');
        return void c.to.respond(INTERNAL_ERROR);
      case 'faults':
        return replies.faults(c.faults);
      case 'handled':
        return observer?.handled(c.op, (nowUs() - startUs) / 1e6);
      case 'wrote':
        return observer?.wrote((nowUs() - c.startedUs) / 1e6, c.outcome);
      case 'log':
        return logger[c.line.level](c.line.fields, c.line.message);
      case 'wake':
        return timer.schedule(c.atUs);
      case 'stopped':
        return stopped();
    }
  }

  /** call — performs a store call of this member; its answer, or its failure, as a result. */
  function call(c: StoreCall): Promise<StoreResult> {
    return answer(c).then(
      (value): StoreResult => ({ ok: true, value }) as StoreResult,
      (error: unknown): StoreResult => ({ ok: false, error }),
    );
  }

  function answer(c: StoreCall): Promise<unknown> {
    switch (c.op) {
      case 'heartbeat':
        return store.heartbeat(member, c.ttlMs);
      case 'owner-of':
        return store.ownerOf(c.unit);
      case 'claim':
        return store.claim(c.unit, member, c.ttlMs);
      case 'renew':
        return store.renew(c.unit, member, c.epoch, c.ttlMs);
      case 'write':
        return store.write(c.unit, member, c.epoch, c.changes);
      case 'release':
        return store.release(c.unit, member, c.epoch);
      case 'forget':
        return store.forget(c.unit, member, c.epoch);
    }
  }

  /**
   * handlerOf — the bus handler of subscription `key`: every request taken
   * in, then screened (one whose reply would go to another identity's inbox
   * is dropped, core/reply-inbox.ts) and handled in its turn
   * (intake-loop.ts); operator requests are operations.ts's, so a pool's
   * subscription leaves them alone.
   */
  function handlerOf(key: string): BusHandler {
    return intake.through((subject, payload, port) => {
      const startUs = nowUs();
      perform(driver.message(key, subject, payload, port, startUs), startUs);
    }, key === LEGACY_KEY);
  }

  async function unsubscribe(key: string): Promise<void> {
    const subscription = subscriptions.get(key);
    subscriptions.delete(key);
    await subscription?.stop();
    // What it took in is handled before the driver hears the subscription is gone.
    intake.drainNow();
  }

  // One intake for every subscription: requests screened, then handled in turns per identity (intake-loop.ts).
  const intake = intakeLoop(replies, () => core.config, nowUs, logger);
  perform(driver.start(nowUs()));

  return {
    core,
    member,
    replies,
    reconfigure(next: CoordinatorConfig) {
      const atUs = nowUs();
      const { summary, commands } = driver.reconfigure(next, atUs);
      perform(commands, atUs);
      return { summary, atUs };
    },
    serving: () => driver.serving(),
    observe(next: ServiceObserver): void {
      observer = next;
      replies.observer = next;
    },
    storeUp: () => driver.storeUp(),
    members: () => driver.members(),
    owned: () => driver.ownedEpochs(),
    stop(): Promise<void> {
      if (stopping !== null) return Promise.resolve();
      stopping = new Promise<void>((resolve) => {
        stopped = resolve;
      }).then(() => timer.stop());
      perform(driver.stop(nowUs()));
      return stopping;
    },
  };
}
