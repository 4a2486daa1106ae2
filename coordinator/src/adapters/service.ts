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
import { type Bus, type BusHandler, type ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import { CoordinatorCore } from '../core/coordinator-core.js';
import type { CoordinatorConfig } from '../core/config.js';
import type { ReconfigureSummary } from '../core/pool-registry.js';
import type { ServiceObserver } from './metrics.js';
import { intakeLoop } from './intake-loop.js';
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

export interface CoordinatorService extends Served {
  readonly epoch: number;
  /** stop — stops taking requests, answers held ones with what there is, and drains the subscription. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  readonly config: CoordinatorConfig;
  readonly bus: Bus;
  readonly logger: Logger;
  readonly nowUs?: () => number;
  /** Names this incarnation; default a random 31-bit number. */
  readonly epoch?: number;
  /** How this coordinator names itself to operators. */
  readonly name?: string;
  /** Told every reply sent and every request's handling time (the metrics). */
  readonly observer?: ServiceObserver;
}

export function startCoordinatorService(options: ServiceOptions): CoordinatorService {
  const { config, bus, logger } = options;
  const nowUs = options.nowUs ?? hostMonoNowUs;
  const epoch = options.epoch ?? randomInt(1, 2 ** 31);
  let observer = options.observer ?? null;
  const core = new CoordinatorCore<ReplyPort>(config, epoch, nowUs(), false, options.name);
  const prefix = config.subjectPrefix;
  const replies = new ReplyLog(logger, prefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS, observer);
  let stopped = false;
  const sendByPool = (pool: string, out: Parameters<ReplyLog['send']>[0]): void => replies.send(out, nowUs(), { pool });
  const timer = new TickTimer(
    nowUs,
    () => {
      core.tickEach(nowUs(), sendByPool);
      replies.faults(core.takeFaults());
      replies.flush();
      return core.nextDeadlineUs();
    },
    (error) => logger.error({ event: 'tick-failed', err: error }, 'tick failed'),
  );

  // Every request is screened first: one whose reply would go to another identity's inbox is dropped (core/reply-inbox.ts).
  const screened = (handler: BusHandler): BusHandler => replies.screened(() => core.config, handler);
  // Requests of protocol v1 are answered unsupported-version rather than left to time out.
  const legacy = bus.serve(
    legacySubject(config.subjectPrefix),
    COORDINATOR_QUEUE_GROUP,
    screened((subject, payload, port) => {
      replies.send(core.receive(subject, payload, port, nowUs()), nowUs(), { subject });
    }),
  );
  const handle: BusHandler = (subject, payload, port) => {
    const op = parseSubject(prefix, subject)?.op;
    const startUs = nowUs();
    try {
      replies.send(core.receive(subject, payload, port, startUs), nowUs(), { subject });
      observer?.handled(op ?? '(bad subject)', (nowUs() - startUs) / 1e6);
    } catch (error) {
      // A broken invariant: refuse loudly, keep serving the other pools.
      logger.error({ event: 'request-failed', err: error, subject }, 'internal error while handling a request');
      port.respond(INTERNAL_ERROR);
    }
    replies.faults(core.takeFaults());
    timer.schedule(core.touchedDeadlineUs());
  };
  // Requests are taken in, then screened and handled in turns per identity, so a client that floods delays itself (intake-loop.ts).
  const intake = intakeLoop(replies, () => core.config, nowUs, logger);
  const subscription = bus.serve(serviceSubject(config.subjectPrefix), COORDINATOR_QUEUE_GROUP, intake.through(handle));

  // Announced once the server has the subscription: a request sent after the line finds a responder.
  const announce = (): void =>
    logger.info(
      {
        event: 'serving',
        epoch,
        subject: serviceSubject(config.subjectPrefix),
        quietPeriodMs: config.quietPeriodMs,
        pools: config.pools.map((p) => ({
          name: p.name,
          capacity: p.capacity,
          refill: formatRate(p.refill),
          leaseTtlMs: p.leaseTtlMs,
          maxLeaseTokens: p.maxLeaseTokens,
        })),
      },
      'coordinator serving',
    );
  bus.flush().then(announce, (error: unknown) => {
    logger.warn({ event: 'subscription-unconfirmed', err: error }, 'NATS did not confirm the subscription yet');
    announce();
  });
  timer.schedule(core.nextDeadlineUs());

  return {
    core,
    epoch,
    replies,
    reconfigure(next: CoordinatorConfig): { summary: ReconfigureSummary; atUs: number } {
      const atUs = nowUs();
      const summary = core.reconfigure(next, atUs, sendByPool);
      timer.schedule(core.nextDeadlineUs());
      return { summary, atUs };
    },
    serving: () => !stopped,
    observe(next: ServiceObserver): void {
      observer = next;
      replies.observer = next;
    },
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      timer.stop();
      await Promise.all([subscription.stop(), legacy.stop()]);
      intake.drainNow();
      core.flushEach(nowUs(), sendByPool);
      replies.flush();
      logger.info({ event: 'stopped', epoch }, 'coordinator stopped');
    },
  };
}
