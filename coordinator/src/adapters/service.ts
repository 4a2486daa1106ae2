/**
 * The coordinator's NATS service: subscribes to every v1 subject under the
 * prefix in a queue group, hands each message to the core, sends the
 * replies the core returns, and calls `tick` when the core's next deadline
 * comes. Logs every refusal (who sent what, and why) with pino.
 */
import { randomInt } from 'node:crypto';
import {
  COORDINATOR_QUEUE_GROUP,
  formatRate,
  legacySubject,
  serviceSubject,
  type Bus,
  hostMonoNowUs,
  type ReplyPort,
} from '@tokenlease/shared';
import type { Logger } from 'pino';
import { CoordinatorCore } from '../core/coordinator-core.js';
import type { CoordinatorConfig } from '../core/config.js';
import { INTERNAL_ERROR, ReplyLog } from './reply-log.js';
import { TickTimer } from './tick-timer.js';

export interface CoordinatorService {
  readonly core: CoordinatorCore<ReplyPort>;
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
}

export function startCoordinatorService(options: ServiceOptions): CoordinatorService {
  const { config, bus, logger } = options;
  const nowUs = options.nowUs ?? hostMonoNowUs;
  const epoch = options.epoch ?? randomInt(1, 2 ** 31);
  const core = new CoordinatorCore<ReplyPort>(config, epoch, nowUs());
  const replies = new ReplyLog(logger, config.subjectPrefix, () => nowUs() / 1000);
  let stopped = false;
  const timer = new TickTimer(
    nowUs,
    () => {
      replies.send(core.tick(nowUs()), nowUs());
      replies.faults(core.takeFaults());
      replies.flush();
      return core.nextDeadlineUs();
    },
    (error) => logger.error({ event: 'tick-failed', err: error }, 'tick failed'),
  );

  // Requests of protocol v1 are answered unsupported-version rather than left to time out.
  const legacy = bus.serve(legacySubject(config.subjectPrefix), COORDINATOR_QUEUE_GROUP, (subject, payload, port) => {
    replies.send(core.receive(subject, payload, port, nowUs()), nowUs(), { subject });
  });
  const subscription = bus.serve(serviceSubject(config.subjectPrefix), COORDINATOR_QUEUE_GROUP, (subject, payload, port) => {
    try {
      replies.send(core.receive(subject, payload, port, nowUs()), nowUs(), { subject });
    } catch (error) {
      // A broken invariant: refuse loudly, keep serving the other pools.
      logger.error({ event: 'request-failed', err: error, subject }, 'internal error while handling a request');
      port.respond(INTERNAL_ERROR);
    }
    replies.faults(core.takeFaults());
    timer.schedule(core.touchedDeadlineUs());
  });

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
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      timer.stop();
      await Promise.all([subscription.stop(), legacy.stop()]);
      replies.send(core.flush(nowUs()), nowUs());
      replies.flush();
      logger.info({ event: 'stopped', epoch }, 'coordinator stopped');
    },
  };
}
