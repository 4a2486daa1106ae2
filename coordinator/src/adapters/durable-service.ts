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
import { type Bus, type BusHandler, type ReplyPort, type Serving } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import type { CoordinatorCore } from '../core/coordinator-core.js';
import type { OwnershipCommand } from '../core/ownership-commands.js';
import { DEFAULT_OWNERSHIP_TTL_MS, LEGACY_KEY, OwnershipDriver } from '../core/ownership-driver.js';
import type { StoreCall, StoreResult } from '../core/ownership-store.js';
import type { ReconfigureSummary } from '../core/pool-registry.js';
import type { OwnershipView, ServiceObserver } from './metrics.js';
import type { StateStore } from './redis-store.js';
import { intakeLoop, type IntakeLoop } from './intake-loop.js';
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
  return new NatsDurableService(options);
}

/** NatsDurableService — the ownership driver's commands carried out against the bus, the store and a timer; each result fed back with the time it came. */
class NatsDurableService implements DurableService {
  readonly core: CoordinatorCore<ReplyPort>;
  readonly member: string;
  readonly replies: ReplyLog;
  private readonly nowUs: () => number;
  private readonly driver: OwnershipDriver<ReplyPort>;
  private observer: ServiceObserver | null;
  private readonly subscriptions = new Map<string, Serving>();
  private readonly timer: TickTimer;
  private readonly intake: IntakeLoop;
  private stopping: Promise<void> | null = null;
  private stopped = (): void => undefined;

  constructor(private readonly options: DurableServiceOptions) {
    const { config, logger, member } = options;
    const nowUs = (this.nowUs = options.nowUs ?? hostMonoNowUs);
    const ownershipTtlMs = options.ownershipTtlMs ?? DEFAULT_OWNERSHIP_TTL_MS;
    this.member = member;
    this.driver = new OwnershipDriver<ReplyPort>({ config, member, ownershipTtlMs, startUs: nowUs() });
    this.core = this.driver.core;
    this.observer = options.observer ?? null;
    this.replies = new ReplyLog(logger, config.subjectPrefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS, this.observer);
    const onTickError = (error: unknown): void => logger.error({ event: 'tick-failed', err: error }, 'tick failed');
    this.timer = new TickTimer(nowUs, () => this.tick(), onTickError);
    // One intake for every subscription: requests screened, then handled in turns per identity (intake-loop.ts), each batch read ahead.
    const readAhead = (payloads: readonly Uint8Array[]): void => this.core.readAhead(payloads);
    this.intake = intakeLoop(this.replies, () => this.core.config, nowUs, logger, { readAhead });
    this.perform(this.driver.start(nowUs()));
  }

  reconfigure(next: CoordinatorConfig): { summary: ReconfigureSummary; atUs: number } {
    const atUs = this.nowUs();
    const { summary, commands } = this.driver.reconfigure(next, atUs);
    this.perform(commands, atUs);
    return { summary, atUs };
  }

  serving(): boolean {
    return this.driver.serving();
  }

  observe(next: ServiceObserver): void {
    this.observer = next;
    this.replies.observer = next;
  }

  storeUp(): boolean {
    return this.driver.storeUp();
  }

  members(): readonly string[] {
    return this.driver.members();
  }

  owned(): ReadonlyMap<string, number> {
    return this.driver.ownedEpochs();
  }

  stop(): Promise<void> {
    if (this.stopping !== null) return Promise.resolve();
    this.stopping = new Promise<void>((resolve) => {
      this.stopped = resolve;
    }).then(() => this.timer.stop());
    this.perform(this.driver.stop(this.nowUs()));
    return this.stopping;
  }

  private tick(): number {
    this.perform(this.driver.tick(this.nowUs()));
    this.replies.flush();
    return Infinity; // the driver's `wake` commands arm the timer
  }

  /** perform — carries `commands` out in order; `startUs`: when the event behind them came (for handling times). */
  private perform(commands: readonly Command[], startUs = this.nowUs()): void {
    for (const command of commands) this.carry(command, startUs);
  }

  private carry(c: Command, startUs: number): void {
    switch (c.kind) {
      case 'store':
        return void this.call(c.call).then((result) => this.perform(this.driver.stored(c.ticket, result, this.nowUs())), this.failed);
      case 'subscribe':
        return void this.subscriptions.set(c.key, this.options.bus.serve(c.subject, c.queueGroup, this.handlerOf(c.key)));
      case 'unsubscribe':
        return void this.unsubscribe(c.key, c.drain).then(() => this.perform(this.driver.done(c.ticket, this.nowUs())), this.failed);
      case 'flush-bus':
        return void this.options.bus
          .flush()
          .catch(() => undefined)
          .then(() => this.perform(this.driver.done(c.ticket, this.nowUs())))
          .catch(this.failed);
      case 'probe-bus':
        return void this.options.bus
          .flush()
          .then(
            () => true,
            () => false,
          )
          .then((ok) => this.perform(this.driver.done(c.ticket, this.nowUs(), ok)))
          .catch(this.failed);
      case 'send':
        return this.replies.send(c.deliveries, this.nowUs(), c.label);
      case 'internal-error':
        this.options.logger.error({ event: 'request-failed', err: c.error, subject: c.subject }, 'internal error while handling a request');
        return void c.to.respond(INTERNAL_ERROR);
      case 'faults':
        return this.replies.faults(c.faults);
      case 'handled':
        return this.observer?.handled(c.op, (this.nowUs() - startUs) / 1e6);
      case 'wrote':
        return this.observer?.wrote((this.nowUs() - c.startedUs) / 1e6, c.outcome);
      case 'log':
        return this.options.logger[c.line.level](c.line.fields, c.line.message);
      case 'wake':
        return this.timer.schedule(c.atUs);
      case 'stopped':
        return this.stopped();
    }
  }

  private readonly failed = (error: unknown): void =>
    this.options.logger.error({ event: 'store-task-failed', err: error }, 'store task failed');

  /** call — performs a store call of this member; its answer, or its failure, as a result. */
  private call(c: StoreCall): Promise<StoreResult> {
    return storeAnswer(this.options.store, this.member, c).then(
      (value): StoreResult => ({ ok: true, value }) as StoreResult,
      (error: unknown): StoreResult => ({ ok: false, error }),
    );
  }

  /**
   * handlerOf — the bus handler of subscription `key`: every request taken
   * in, then screened (one whose reply would go to another identity's inbox
   * is dropped, core/reply-inbox.ts) and handled in its turn
   * (intake-loop.ts); operator requests are operations.ts's, so a pool's
   * subscription leaves them alone.
   */
  private handlerOf(key: string): BusHandler {
    return this.intake.through((subject, payload, port) => {
      const startUs = this.nowUs();
      this.perform(this.driver.message(key, subject, payload, port, startUs), startUs);
    }, key === LEGACY_KEY);
  }

  private async unsubscribe(key: string, drain: boolean): Promise<void> {
    const subscription = this.subscriptions.get(key);
    this.subscriptions.delete(key);
    await subscription?.stop(drain);
    // What it took in is handled before the driver hears the subscription is gone.
    this.intake.drainNow();
  }
}

/** storeAnswer — `c` performed against `store` as `member`: what the store answers. */
function storeAnswer(store: StateStore, member: string, c: StoreCall): Promise<unknown> {
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
