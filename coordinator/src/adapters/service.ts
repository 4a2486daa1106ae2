/**
 * The coordinator's NATS service: subscribes to every v1 subject under the
 * prefix in a queue group, hands each message to the core, sends the
 * replies the core returns, and calls `tick` when the core's next deadline
 * comes. Logs every refusal (who sent what, and why) with pino.
 */
import { randomInt } from 'node:crypto';
import {
  COORDINATOR_QUEUE_GROUP,
  encodeMessage,
  formatRate,
  serviceSubject,
  type Bus,
  hostMonoNowUs,
  type ReplyPort,
} from '@tokenlease/shared';
import type { Logger } from 'pino';
import { CoordinatorCore } from '../core/coordinator-core.js';
import type { CoordinatorConfig } from '../core/config.js';
import type { Delivery } from '../core/pool.js';


/** Longest sleep between ticks, ms, so refill and expiry are never far behind. */
const TICK_MS_MAX = 250;

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
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  const deliver = (deliveries: Delivery<ReplyPort>[], subject?: string): void => {
    for (const { to, reply } of deliveries) {
      if (reply.kind === 'error') {
        logger.warn({ subject, code: reply.code, fault: reply.fault, seq: reply.seq, reason: reply.message }, 'request refused');
      } else if (reply.kind === 'grant') {
        // tUs: the host monotonic clock, so grants can be lined up with agents' logs.
        logger.debug({ leaseId: reply.leaseId, seq: reply.seq, tokensGranted: reply.tokensGranted, tokensHeld: reply.tokensHeld, ttlMs: reply.ttlMs, tUs: nowUs() }, 'grant');
      }
      to.respond(encodeMessage(reply));
    }
  };

  let timerAtUs = Infinity;
  /** schedule — (re)arms the tick timer for `deadlineUs`, unless it already fires sooner. */
  const schedule = (deadlineUs: number): void => {
    if (stopped) return;
    const now = nowUs();
    const atUs = now + Math.min(TICK_MS_MAX, Math.max(1, Math.ceil((deadlineUs - now) / 1000))) * 1000;
    if (timer !== null && timerAtUs <= atUs) return;
    if (timer !== null) clearTimeout(timer);
    timerAtUs = atUs;
    timer = setTimeout(onTimer, (atUs - now) / 1000);
  };

  function onTimer(): void {
    timer = null;
    deliver(core.tick(nowUs()));
    schedule(core.nextDeadlineUs());
  }

  const subscription = bus.serve(serviceSubject(config.subjectPrefix), COORDINATOR_QUEUE_GROUP, (subject, payload, port) => {
    try {
      deliver(core.receive(subject, payload, port, nowUs()), subject);
    } catch (error) {
      // A broken invariant: refuse loudly, keep serving the other pools.
      logger.error({ err: error, subject }, 'internal error while handling a request');
      port.respond(encodeMessage({ v: 1, kind: 'error', seq: null, code: 'internal', fault: 'coordinator', message: 'internal error; see the coordinator log', retryAfterMs: 1000 }));
    }
    schedule(core.touchedDeadlineUs());
  });

  logger.info(
    {
      epoch,
      subject: serviceSubject(config.subjectPrefix),
      quietPeriodMs: config.quietPeriodMs,
      pools: config.pools.map((p) => ({ name: p.name, capacity: p.capacity, refill: formatRate(p.refill), leaseTtlMs: p.leaseTtlMs, maxLeaseTokens: p.maxLeaseTokens })),
    },
    'coordinator serving',
  );
  schedule(core.nextDeadlineUs());

  return {
    core,
    epoch,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await subscription.stop();
      deliver(core.flush(nowUs()));
      logger.info({ epoch }, 'coordinator stopped');
    },
  };
}
