/**
 * The coordinator's NATS service: subscribes to every v2 subject under the
 * prefix in a queue group, hands each message to the core, sends the
 * replies the core returns, and calls `tick` when the core's next deadline
 * comes. Requests are handled in turns per identity (intake-loop.ts).
 * Logs every refusal (who sent what, and why) with pino, and tells an
 * observer (the metrics) what it sent and how long handling took.
 * Operator ops (`pools`, `reload`) are left to operations.ts, which every
 * coordinator subscribes for on its own.
 */
import { randomInt } from 'node:crypto';
import { COORDINATOR_QUEUE_GROUP, formatRate, legacySubject, parseSubject, serviceSubject } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { type Bus, type ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import { CoordinatorCore } from '../core/coordinator-core.js';
import type { CoordinatorConfig } from '../core/config.js';
import type { ReconfigureSummary } from '../core/pool-registry.js';
import type { ServiceObserver } from './metrics.js';
import { intakeLoop, type IntakeLoop } from './intake-loop.js';
import { INTERNAL_ERROR, REFUSAL_LOG_INTERVAL_MS, ReplyLog } from './reply-log.js';
import { TickTimer } from './tick-timer.js';

/** Served — what every coordinator service offers operations.ts, in memory or durable mode. */
export interface Served {
  readonly core: CoordinatorCore<ReplyPort>;
  /** replies — where replies leave (and are logged and counted). */
  readonly replies: ReplyLog;
  /** reconfigure — serves `config` from now on (the caller checked `core.reconfigureProblem`); `atUs`: the instant it applied. */
  reconfigure(config: CoordinatorConfig): { readonly summary: ReconfigureSummary; readonly atUs: number };
  /** serving — whether it takes requests now (memory mode: until stopped; durable mode: its heartbeats reach Redis). */
  serving(): boolean;
  /** observe — tells `observer` (the metrics) of every reply, handling time and write from now on. */
  observe(observer: ServiceObserver): void;
}

/** announceWhenSubscribed — `announce` once the server has the subscriptions made so far (a request sent after the line finds a responder), or at once with a warning when it does not confirm them. */
export function announceWhenSubscribed(bus: Bus, logger: Logger, announce: () => void): void {
  bus.flush().then(announce, (error: unknown) => {
    logger.warn({ event: 'subscription-unconfirmed', err: error }, 'NATS did not confirm the subscription yet');
    announce();
  });
}

/** CoordinatorService — a running coordinator in memory mode (startCoordinatorService). */
export interface CoordinatorService extends Served {
  readonly epoch: number;
  /** stop — stops taking requests, answers held ones with what there is, and drains the subscription. */
  stop(): Promise<void>;
}

/** ServiceOptions — what startCoordinatorService serves (`config`), over which bus, and where it logs. */
export interface ServiceOptions {
  readonly config: CoordinatorConfig;
  readonly bus: Bus;
  readonly logger: Logger;
  /** The monotonic clock, µs; default the host's (hostMonoNowUs). */
  readonly nowUs?: () => number;
  /** Names this incarnation; default a random 31-bit number. */
  readonly epoch?: number;
  /** How this coordinator names itself to operators. */
  readonly name?: string;
  /** Told every reply sent and every request's handling time (the metrics). */
  readonly observer?: ServiceObserver;
}

/** startCoordinatorService — a coordinator in memory mode: serves `config`'s pools on the bus, its state in this process only. */
export function startCoordinatorService(options: ServiceOptions): CoordinatorService {
  return new NatsCoordinatorService(options);
}

/** NatsCoordinatorService — the core fed from the bus and its timer, its replies sent, its faults logged. */
class NatsCoordinatorService implements CoordinatorService {
  readonly core: CoordinatorCore<ReplyPort>;
  readonly epoch: number;
  readonly replies: ReplyLog;
  private readonly nowUs: () => number;
  private observer: ServiceObserver | null;
  private readonly timer: TickTimer;
  private readonly intake: IntakeLoop;
  private readonly subscriptions: readonly { stop(): Promise<void> }[];
  private stopped = false;

  constructor(private readonly options: ServiceOptions) {
    const { config, bus, logger } = options;
    const nowUs = (this.nowUs = options.nowUs ?? hostMonoNowUs);
    this.epoch = options.epoch ?? randomInt(1, 2 ** 31);
    this.observer = options.observer ?? null;
    this.core = new CoordinatorCore<ReplyPort>(config, this.epoch, nowUs(), false, options.name);
    this.replies = new ReplyLog(logger, config.subjectPrefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS, this.observer);
    const onTickError = (error: unknown): void => logger.error({ event: 'tick-failed', err: error }, 'tick failed');
    this.timer = new TickTimer(nowUs, () => this.tick(), onTickError);
    // Requests of protocol v1 are answered unsupported-version rather than left to time out; screened first, as every request
    // is: one whose reply would go to another identity's inbox is dropped (core/reply-inbox.ts).
    const legacy = bus.serve(
      legacySubject(config.subjectPrefix),
      COORDINATOR_QUEUE_GROUP,
      this.replies.screened(
        () => this.core.config,
        (subject, payload, port) => this.answerLegacy(subject, payload, port),
      ),
    );
    // Requests are taken in, then screened and handled in turns per identity, so a client that floods delays itself (intake-loop.ts).
    // The timer is re-armed once a slice, for every pool the slice's requests changed (the core settles them together).
    const rearm = (): void => this.timer.schedule(this.core.nextDeadlineUs());
    // Each batch of requests is decoded, and the leases it names read, before its first is handled (read-ahead.ts).
    const readAhead = (payloads: readonly Uint8Array[]): void => this.core.readAhead(payloads);
    this.intake = intakeLoop(this.replies, () => this.core.config, nowUs, logger, { afterSlice: rearm, readAhead });
    const take = this.intake.through((subject, payload, port) => this.request(subject, payload, port));
    const subscription = bus.serve(serviceSubject(config.subjectPrefix), COORDINATOR_QUEUE_GROUP, take);
    this.subscriptions = [subscription, legacy];
    announceWhenSubscribed(bus, logger, () => announceServing(logger, config, this.epoch));
    this.timer.schedule(this.core.nextDeadlineUs());
  }

  reconfigure(next: CoordinatorConfig): { summary: ReconfigureSummary; atUs: number } {
    const atUs = this.nowUs();
    const summary = this.core.reconfigure(next, atUs, this.sendByPool);
    this.timer.schedule(this.core.nextDeadlineUs());
    return { summary, atUs };
  }

  serving(): boolean {
    return !this.stopped;
  }

  observe(next: ServiceObserver): void {
    this.observer = next;
    this.replies.observer = next;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.timer.stop();
    await Promise.all(this.subscriptions.map((s) => s.stop()));
    this.intake.drainNow();
    this.core.flushEach(this.nowUs(), this.sendByPool);
    this.replies.flush();
    this.options.logger.info({ event: 'stopped', epoch: this.epoch }, 'coordinator stopped');
  }

  /** request — one request in its turn: the core's replies sent, its handling time observed, its faults logged (the timer is re-armed after its slice). */
  private request(subject: string, payload: Uint8Array, port: ReplyPort): void {
    const op = parseSubject(this.options.config.subjectPrefix, subject)?.op;
    const startUs = this.nowUs();
    try {
      this.replies.send(this.core.receive(subject, payload, port, startUs), this.nowUs(), { subject });
      this.observer?.handled(op ?? '(bad subject)', (this.nowUs() - startUs) / 1e6);
    } catch (error) {
      // A broken invariant: refuse loudly, keep serving the other pools.
      this.options.logger.error({ event: 'request-failed', err: error, subject }, 'internal error while handling a request');
      port.respond(INTERNAL_ERROR);
    }
    this.replies.faults(this.core.takeFaults());
  }

  private answerLegacy(subject: string, payload: Uint8Array, port: ReplyPort): void {
    this.replies.send(this.core.receive(subject, payload, port, this.nowUs()), this.nowUs(), { subject });
  }

  private tick(): number {
    this.core.tickEach(this.nowUs(), this.sendByPool);
    this.replies.faults(this.core.takeFaults());
    this.replies.flush();
    return this.core.nextDeadlineUs();
  }

  private readonly sendByPool = (pool: string, out: Parameters<ReplyLog['send']>[0]): void =>
    this.replies.send(out, this.nowUs(), { pool });
}

/** announceServing — the `serving` line: epoch, subject, quiet period and the pools served. */
function announceServing(logger: Logger, config: CoordinatorConfig, epoch: number): void {
  const pools = config.pools.map((p) => ({
    name: p.name,
    capacity: p.capacity,
    refill: formatRate(p.refill),
    leaseTtlMs: p.leaseTtlMs,
    maxLeaseTokens: p.maxLeaseTokens,
  }));
  const fields = { event: 'serving', epoch, subject: serviceSubject(config.subjectPrefix), quietPeriodMs: config.quietPeriodMs, pools };
  logger.info(fields, 'coordinator serving');
}
