/**
 * The relay's NATS service (docs/design.md, "Relays"): serves its pools on
 * its own subject prefix exactly as a coordinator does (service.ts), and
 * keeps one chunk lease per pool from the root by request/reply on the
 * upstream prefix. Every decision is the relay driver's (core/
 * relay-driver.ts): this adapter feeds it requests, the root's replies and
 * its timer, and carries its commands out (replies, upstream requests,
 * logs, metrics, wakes). Its own: the uplinks' random ids and secrets, the
 * clock, and `relay-serving` once subscribed.
 */
import { randomBytes, randomInt } from 'node:crypto';
import {
  ANONYMOUS_IDENTITY,
  COORDINATOR_QUEUE_GROUP,
  decodeReply,
  encodeMessage,
  formatRate,
  parseSubject,
  serviceSubject,
  subjectFor,
  type LeaseRequest,
  type LeaseReturn,
} from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import type { Bus, ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import type { ReconfigureSummary } from '../core/pool-registry.js';
import type { RelayConfig } from '../core/relay-config.js';
import type { RelayCore, UplinkIdentity } from '../core/relay-core.js';
import { RelayDriver, type RelayCommand, type UpstreamOutcome } from '../core/relay-driver.js';
import type { ServiceObserver } from './metrics.js';
import { intakeLoop } from './intake-loop.js';
import { REFUSAL_LOG_INTERVAL_MS, ReplyLog } from './reply-log.js';
import type { Served } from './service.js';
import { TickTimer } from './tick-timer.js';

export interface RelayServiceOptions {
  readonly config: RelayConfig;
  readonly bus: Bus;
  readonly logger: Logger;
  /** Names this relay in its upstream agent ids (`relay.<relayId>.<random>`). */
  readonly relayId: string;
  readonly nowUs?: () => number;
  readonly epoch?: number;
}

export interface RelayService extends Served {
  readonly relay: RelayCore<ReplyPort>;
  readonly epoch: number;
  /** observeUpstream — tells `observer` how every request to the root ends from now on (the relay metrics). */
  observeUpstream(observer: (pool: string, outcome: UpstreamOutcome) => void): void;
  /** stop — stops serving, answers held requests, and returns every upstream lease no downstream lease draws on. */
  stop(): Promise<void>;
}

export function startRelayService(options: RelayServiceOptions): RelayService {
  const { config, bus, logger, relayId } = options;
  const nowUs = options.nowUs ?? hostMonoNowUs;
  const epoch = options.epoch ?? randomInt(1, 2 ** 31);
  const prefix = config.downstream.subjectPrefix;
  const upstreamIdentity = config.uplink.identity ?? ANONYMOUS_IDENTITY;
  const identityOf = (): UplinkIdentity => ({
    agentId: `${config.uplink.identity ?? 'relay'}.${relayId}.${randomBytes(6).toString('hex')}`,
    leaseSecret: randomBytes(24).toString('base64url'),
  });
  const driver = new RelayDriver<ReplyPort>({ config, epoch, startUs: nowUs(), identityOf });
  const replies = new ReplyLog(logger, prefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS);
  let upstreamObserver: (pool: string, outcome: UpstreamOutcome) => void = () => undefined;
  let stopping = false;
  let wakeAtUs = Infinity;

  /** carryOut — carries the driver's commands out, in order; settles once every upstream send has (none rejects). */
  const carryOut = (commands: readonly RelayCommand<ReplyPort>[]): Promise<void> => {
    const sent: Promise<void>[] = [];
    for (const c of commands) {
      if (c.kind === 'reply') replies.send(c.deliveries, nowUs(), c.where);
      else if (c.kind === 'send-upstream') sent.push(ask(c.message, c.timeoutMs));
      else if (c.kind === 'log') logger[c.log.level](c.log.fields, c.log.message);
      else if (c.kind === 'upstream-outcome') upstreamObserver(c.pool, c.outcome);
      else if (c.kind === 'faults') replies.faults(c.faults);
      else {
        wakeAtUs = c.atUs;
        timer.schedule(c.atUs);
      }
    }
    return Promise.all(sent).then(() => undefined);
  };
  const carry = (commands: readonly RelayCommand<ReplyPort>[]): void => void carryOut(commands);
  const ask = (message: LeaseRequest | LeaseReturn, timeoutMs: number): Promise<void> =>
    bus.request(subjectFor(config.upstreamPrefix, message.op, message.pool, upstreamIdentity), encodeMessage(message), timeoutMs).then(
      (bytes) => {
        const decoded = decodeReply(bytes);
        if (decoded.ok) carry(driver.upstreamReply(message, decoded.value, nowUs()));
      },
      (error: unknown) => carry(driver.upstreamFailed(message, error)),
    );
  const timer = new TickTimer(
    nowUs,
    () => {
      carry(driver.tick(nowUs()));
      replies.flush();
      return wakeAtUs;
    },
    (error) => logger.error({ event: 'tick-failed', err: error }, 'tick failed'),
  );
  // Screened first: a request whose reply would go to another identity's inbox is dropped (core/reply-inbox.ts).
  // Then taken in and handled in turns per identity, so one agent's flood delays itself (intake-loop.ts).
  const intake = intakeLoop(replies, () => driver.relay.core.config, nowUs, logger);
  const take = intake.through((subject, payload, port) => {
    const startUs = nowUs();
    carry(driver.request(subject, payload, port, startUs));
    replies.observer?.handled(parseSubject(prefix, subject)?.op ?? '(bad subject)', (nowUs() - startUs) / 1e6);
  });
  const subscription = bus.serve(serviceSubject(prefix), COORDINATOR_QUEUE_GROUP, take);

  const announce = (): void => announceServing(logger, config, epoch);
  bus.flush().then(announce, (error: unknown) => {
    logger.warn({ event: 'subscription-unconfirmed', err: error }, 'NATS did not confirm the subscription yet');
    announce();
  });
  carry(driver.start(nowUs()));

  return {
    core: driver.relay.core,
    relay: driver.relay,
    epoch,
    replies,
    reconfigure(next: CoordinatorConfig): { summary: ReconfigureSummary; atUs: number } {
      // The load checked that the prefixes and uplink settings stay: only the pools change.
      const atUs = nowUs();
      const { summary, commands } = driver.reconfigure({ ...driver.relay.config, downstream: next }, atUs);
      carry(commands);
      return { summary, atUs };
    },
    serving: () => !stopping,
    observe(observer: ServiceObserver): void {
      replies.observer = observer;
    },
    observeUpstream(observer: (pool: string, outcome: UpstreamOutcome) => void): void {
      upstreamObserver = observer;
    },
    async stop(): Promise<void> {
      if (stopping) return;
      stopping = true;
      timer.stop();
      await subscription.stop();
      intake.drainNow();
      const returned = carryOut(driver.stop(nowUs()));
      replies.flush();
      await returned;
      logger.info({ event: 'stopped', epoch }, 'relay stopped');
    },
  };
}

/** announceServing — the `relay-serving` line: epoch, subjects and the pools served. */
function announceServing(logger: Logger, config: RelayConfig, epoch: number): void {
  const pools = config.downstream.pools.map((p) => ({
    name: p.name,
    capacity: p.capacity,
    refill: formatRate(p.refill),
    leaseTtlMs: p.leaseTtlMs,
    maxLeaseTokens: p.maxLeaseTokens,
  }));
  const subject = serviceSubject(config.downstream.subjectPrefix);
  logger.info({ event: 'relay-serving', epoch, subject, upstream: config.upstreamPrefix, pools }, 'relay serving');
}
