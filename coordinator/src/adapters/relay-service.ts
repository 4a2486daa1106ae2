/**
 * The relay's NATS service (docs/design.md, "Relays"): serves its pools on
 * its own subject prefix exactly as a coordinator does (service.ts), and
 * keeps one chunk lease per pool from the root by request/reply on the
 * upstream prefix (RelayCore, Uplink).
 *
 * Logs pino JSON: `relay-serving` once subscribed; `upstream-lease` when a
 * pool's lease from the root is new (later renewals at debug);
 * `upstream-refused` for an error or an implausible grant; `upstream-lost`
 * when a pool's lease ends unrenewed (its agents then get `unavailable`
 * until a new one comes); `upstream-unanswered` (debug) for a timeout.
 * Lease secrets are never logged.
 */
import { randomBytes, randomInt } from 'node:crypto';
import {
  ANONYMOUS_IDENTITY,
  COORDINATOR_QUEUE_GROUP,
  decodeReply,
  encodeMessage,
  formatRate,
  hostMonoNowUs,
  isOperatorSubject,
  parseSubject,
  serviceSubject,
  subjectFor,
  type LeaseRequest,
  type LeaseReturn,
} from '@tokenlease/shared';
import type { Bus, ReplyPort } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import { MAX_TTL_MS, type CoordinatorConfig, type PoolConfig } from '../core/config.js';
import type { ReconfigureSummary } from '../core/pool-registry.js';
import type { RelayConfig } from '../core/relay-config.js';
import { RelayCore } from '../core/relay-core.js';
import type { RelayCredit } from '../core/relay-credit.js';
import { Uplink, type UplinkOutcome } from '../core/uplink.js';
import type { ServiceObserver } from './metrics.js';
import type { UpstreamOutcome } from './relay-metrics.js';
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
  const uplinkOf = (pool: PoolConfig, credit: RelayCredit): Uplink => {
    const agentId = `${config.uplink.identity ?? 'relay'}.${relayId}.${randomBytes(6).toString('hex')}`;
    logger.info({ event: 'uplink-started', pool: pool.name, agentId }, 'new upstream agent id for a pool');
    const leaseSecret = randomBytes(24).toString('base64url');
    const settings = { ...config.uplink, leaseTtlMsMax: MAX_TTL_MS, initialTokens: pool.maxLeaseTokens };
    return new Uplink(pool, credit, { ...settings, agentId, leaseSecret });
  };
  const core = new RelayCore<ReplyPort>(config, epoch, nowUs(), uplinkOf);
  const replies = new ReplyLog(logger, prefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS);
  let upstreamObserver: (pool: string, outcome: UpstreamOutcome) => void = () => undefined;
  const leaseOf = new Map<string, string>();
  const serving = new Set<string>();
  let stopped = false;

  // Every pool served (configured or a template's) whose upstream lease ended unrenewed is logged once; pools forgotten are dropped.
  const noteLapses = (): void => {
    const t = nowUs();
    const held = new Set<string>();
    for (const { name, kind, pool } of core.core.held()) {
      if (kind === 'removed') continue;
      held.add(name);
      if (pool.parts.credit.leaseEndUs > t) serving.add(name);
      else if (serving.delete(name)) logger.warn({ event: 'upstream-lost', pool: name }, 'upstream lease ended unrenewed');
    }
    for (const name of serving) if (!held.has(name)) serving.delete(name);
    for (const name of leaseOf.keys()) if (!held.has(name)) leaseOf.delete(name);
  };
  const logOutcome = (pool: string, outcome: UplinkOutcome): void => {
    if (outcome.kind !== 'ignored') upstreamObserver(pool, outcome.kind);
    if (outcome.kind === 'granted') {
      const { leaseId, tokensGranted, tokensHeld, ttlMs } = outcome;
      const fresh = leaseOf.get(pool) !== leaseId;
      leaseOf.set(pool, leaseId);
      logger[fresh ? 'info' : 'debug']({ event: 'upstream-lease', pool, leaseId, tokensGranted, tokensHeld, ttlMs }, 'upstream grant');
    } else if (outcome.kind === 'refused') {
      logger.warn({ event: 'upstream-refused', pool, problem: outcome.problem }, 'refused an implausible upstream grant');
    } else if (outcome.kind === 'error') {
      const { code, message, retryAfterMs } = outcome;
      logger.warn({ event: 'upstream-refused', pool, code, reason: message, retryAfterMs }, 'the root refused a request');
    }
  };
  const ask = (request: LeaseRequest | LeaseReturn, timeoutMs: number): Promise<void> =>
    bus.request(subjectFor(config.upstreamPrefix, request.op, request.pool, upstreamIdentity), encodeMessage(request), timeoutMs).then(
      (bytes) => {
        const decoded = decodeReply(bytes);
        if (!decoded.ok || stopped || request.op !== 'acquire') return;
        const { outcome, out } = core.upstreamReply(request, decoded.value, nowUs());
        logOutcome(request.pool, outcome);
        replies.send(out, nowUs());
        noteLapses();
        timer.schedule(core.nextDeadlineUs());
      },
      (error: unknown) => {
        if (request.op === 'acquire') upstreamObserver(request.pool, 'unanswered');
        logger.debug({ event: 'upstream-unanswered', pool: request.pool, err: error }, 'no upstream reply');
      },
    );
  const send = (requests: readonly (LeaseRequest | LeaseReturn)[]): void => {
    for (const request of requests) {
      void ask(request, request.op === 'acquire' ? config.uplink.holdMs + config.uplink.replyTimeoutMs : config.uplink.replyTimeoutMs);
    }
  };
  const pump = (): void => send(core.upstream(nowUs()));
  const timer = new TickTimer(
    nowUs,
    () => {
      replies.send(core.tick(nowUs()), nowUs());
      noteLapses();
      pump();
      replies.faults(core.core.takeFaults());
      replies.flush();
      return core.nextDeadlineUs();
    },
    (error) => logger.error({ event: 'tick-failed', err: error }, 'tick failed'),
  );
  // Screened first: a request whose reply would go to another identity's inbox is dropped (core/reply-inbox.ts).
  const handle = replies.screened(
    () => core.core.config,
    (subject, payload, port) => {
      const startUs = nowUs();
      replies.send(core.receive(subject, payload, port, startUs), nowUs(), { subject });
      replies.observer?.handled(parseSubject(prefix, subject)?.op ?? '(bad subject)', (nowUs() - startUs) / 1e6);
      replies.faults(core.core.takeFaults());
      // Only the pool this request reached: the work of a request does not grow with the pools held.
      send(core.upstreamTouched(nowUs()));
      timer.schedule(core.touchedDeadlineUs());
    },
  );
  // Operator requests are operations.ts's, which screens them on its own subscriptions.
  const subscription = bus.serve(serviceSubject(prefix), COORDINATOR_QUEUE_GROUP, (subject, payload, port) => {
    if (!isOperatorSubject(prefix, subject)) handle(subject, payload, port);
  });

  const announce = (): void =>
    logger.info(
      {
        event: 'relay-serving',
        epoch,
        subject: serviceSubject(prefix),
        upstream: config.upstreamPrefix,
        pools: config.downstream.pools.map((p) => ({
          name: p.name,
          capacity: p.capacity,
          refill: formatRate(p.refill),
          leaseTtlMs: p.leaseTtlMs,
          maxLeaseTokens: p.maxLeaseTokens,
        })),
      },
      'relay serving',
    );
  bus.flush().then(announce, (error: unknown) => {
    logger.warn({ event: 'subscription-unconfirmed', err: error }, 'NATS did not confirm the subscription yet');
    announce();
  });
  pump();
  timer.schedule(core.nextDeadlineUs());

  const sendByPool = (pool: string, out: Parameters<ReplyLog['send']>[0]): void => replies.send(out, nowUs(), { pool });
  return {
    core: core.core,
    relay: core,
    epoch,
    replies,
    reconfigure(next: CoordinatorConfig): { summary: ReconfigureSummary; atUs: number } {
      // The load checked that the prefixes and uplink settings stay: only the pools change.
      const atUs = nowUs();
      const summary = core.reconfigure({ ...core.config, downstream: next }, atUs, sendByPool);
      noteLapses();
      pump();
      timer.schedule(core.nextDeadlineUs());
      return { summary, atUs };
    },
    serving: () => !stopped,
    observe(observer: ServiceObserver): void {
      replies.observer = observer;
    },
    observeUpstream(observer: (pool: string, outcome: UpstreamOutcome) => void): void {
      upstreamObserver = observer;
    },
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      timer.stop();
      await subscription.stop();
      replies.send(core.core.flush(nowUs()), nowUs());
      replies.flush();
      await Promise.all(core.returns(nowUs()).map((ret) => ask(ret, config.uplink.replyTimeoutMs)));
      logger.info({ event: 'stopped', epoch }, 'relay stopped');
    },
  };
}
