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
import type { CoordinatorCore } from '../core/coordinator-core.js';
import type { ReconfigureSummary } from '../core/pool-registry.js';
import type { RelayConfig } from '../core/relay-config.js';
import type { RelayCore, UplinkIdentitySource } from '../core/relay-core.js';
import { RelayDriver, type RelayCommand, type UpstreamOutcome } from '../core/relay-driver.js';
import type { ServiceObserver } from './metrics.js';
import { intakeLoop, type IntakeLoop } from './intake-loop.js';
import { REFUSAL_LOG_INTERVAL_MS, ReplyLog } from './reply-log.js';
import { announceWhenSubscribed, type Served } from './service.js';
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
  return new NatsRelayService(options);
}

/** NatsRelayService — the relay driver's commands carried out on the bus, its timer and its logger; the state here is only what carrying needs. */
class NatsRelayService implements RelayService {
  readonly core: CoordinatorCore<ReplyPort>;
  readonly relay: RelayCore<ReplyPort>;
  readonly epoch: number;
  readonly replies: ReplyLog;
  private readonly nowUs: () => number;
  private readonly driver: RelayDriver<ReplyPort>;
  private readonly timer: TickTimer;
  private readonly intake: IntakeLoop;
  private readonly subscription: { stop(): Promise<void> };
  private upstreamObserver: (pool: string, outcome: UpstreamOutcome) => void = () => undefined;
  private stopping = false;
  /** The last wake the driver asked for, which the timer's tick returns. */
  private wakeAtUs = Infinity;

  constructor(private readonly options: RelayServiceOptions) {
    const { config, bus, logger, relayId } = options;
    const nowUs = (this.nowUs = options.nowUs ?? hostMonoNowUs);
    this.epoch = options.epoch ?? randomInt(1, 2 ** 31);
    const prefix = config.downstream.subjectPrefix;
    this.driver = new RelayDriver<ReplyPort>({
      config,
      epoch: this.epoch,
      startUs: nowUs(),
      identityOf: uplinkIdentities(config, relayId),
    });
    this.relay = this.driver.relay;
    this.core = this.relay.core;
    this.replies = new ReplyLog(logger, prefix, () => nowUs() / 1000, REFUSAL_LOG_INTERVAL_MS);
    const onTickError = (error: unknown): void => logger.error({ event: 'tick-failed', err: error }, 'tick failed');
    this.timer = new TickTimer(nowUs, () => this.tick(), onTickError);
    // Screened first: a request whose reply would go to another identity's inbox is dropped (core/reply-inbox.ts).
    // Then taken in and handled in turns per identity, so one agent's flood delays itself (intake-loop.ts).
    const readAhead = (payloads: readonly Uint8Array[]): void => this.core.readAhead(payloads);
    this.intake = intakeLoop(this.replies, () => this.relay.core.config, nowUs, logger, { readAhead });
    const take = this.intake.through((subject, payload, port) => this.request(subject, payload, port));
    this.subscription = bus.serve(serviceSubject(prefix), COORDINATOR_QUEUE_GROUP, take);
    announceWhenSubscribed(bus, logger, () => announceServing(logger, config, this.epoch));
    this.carry(this.driver.start(nowUs()));
  }

  reconfigure(next: CoordinatorConfig): { summary: ReconfigureSummary; atUs: number } {
    // The load checked that the prefixes and uplink settings stay: only the pools change.
    const atUs = this.nowUs();
    const { summary, commands } = this.driver.reconfigure({ ...this.relay.config, downstream: next }, atUs);
    this.carry(commands);
    return { summary, atUs };
  }

  serving(): boolean {
    return !this.stopping;
  }

  observe(observer: ServiceObserver): void {
    this.replies.observer = observer;
  }

  observeUpstream(observer: (pool: string, outcome: UpstreamOutcome) => void): void {
    this.upstreamObserver = observer;
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.timer.stop();
    await this.subscription.stop();
    this.intake.drainNow();
    const returned = this.carryOut(this.driver.stop(this.nowUs()));
    this.replies.flush();
    await returned;
    this.options.logger.info({ event: 'stopped', epoch: this.epoch }, 'relay stopped');
  }

  /** request — a downstream request in its turn: to the driver, and its handling time to the observer. */
  private request(subject: string, payload: Uint8Array, port: ReplyPort): void {
    const startUs = this.nowUs();
    this.carry(this.driver.request(subject, payload, port, startUs));
    const op = parseSubject(this.options.config.downstream.subjectPrefix, subject)?.op;
    this.replies.observer?.handled(op ?? '(bad subject)', (this.nowUs() - startUs) / 1e6);
  }

  private tick(): number {
    this.carry(this.driver.tick(this.nowUs()));
    this.replies.flush();
    return this.wakeAtUs;
  }

  private carry(commands: readonly RelayCommand<ReplyPort>[]): void {
    void this.carryOut(commands);
  }

  /** carryOut — carries the driver's commands out, in order; settles once every upstream send has (none rejects). */
  private carryOut(commands: readonly RelayCommand<ReplyPort>[]): Promise<void> {
    const sent: Promise<void>[] = [];
    for (const c of commands) this.carryOne(c, sent);
    return Promise.all(sent).then(() => undefined);
  }

  /** carryOne — one command; an upstream send's promise goes to `sent`, settled once its answer (or failure) is fed back. */
  private carryOne(c: RelayCommand<ReplyPort>, sent: Promise<void>[]): void {
    switch (c.kind) {
      case 'reply':
        return this.replies.send(c.deliveries, this.nowUs(), c.where);
      case 'send-upstream':
        return void sent.push(this.ask(c.message, c.timeoutMs));
      case 'log':
        return this.options.logger[c.log.level](c.log.fields, c.log.message);
      case 'upstream-outcome':
        return this.upstreamObserver(c.pool, c.outcome);
      case 'faults':
        return this.replies.faults(c.faults);
      case 'wake':
        this.wakeAtUs = c.atUs;
        return this.timer.schedule(c.atUs);
    }
  }

  /** ask — `message` to the root on the upstream prefix, under the uplink's identity; its answer, or its absence, back to the driver. */
  private ask(message: LeaseRequest | LeaseReturn, timeoutMs: number): Promise<void> {
    const { config, bus } = this.options;
    const subject = subjectFor(config.upstreamPrefix, message.op, message.pool, config.uplink.identity ?? ANONYMOUS_IDENTITY);
    return bus.request(subject, encodeMessage(message), timeoutMs).then(
      (bytes) => this.carry(this.driver.upstreamAnswer(message, bytes, this.nowUs())),
      (error: unknown) => this.carry(this.driver.upstreamFailed(message, error)),
    );
  }
}

/** uplinkIdentities — a fresh random agent id (`<identity or relay>.<relayId>.<random>`) and lease secret for each new uplink. */
function uplinkIdentities(config: RelayConfig, relayId: string): UplinkIdentitySource {
  return () => ({
    agentId: `${config.uplink.identity ?? 'relay'}.${relayId}.${randomBytes(6).toString('hex')}`,
    leaseSecret: randomBytes(24).toString('base64url'),
  });
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
