/**
 * Operations: what an operator reaches of a running coordinator, wired
 * around a service (memory or durable mode) without changing how it
 * serves agents.
 *
 * - Metrics (metrics.ts), always kept; exposed when `--http` is given.
 * - HTTP (`--http host:port`, off by default): `/metrics`; `/healthz`
 *   (the process runs and its event loop answers); `/readyz` (NATS
 *   connected and flushing within READY_FLUSH_MS, Redis answering the last
 *   heartbeat in durable mode, and the service serving or standing by:
 *   200, else 503 with the failing checks; core/readiness.ts); `/` the live
 *   status page and `/api/status` its data.
 * - Reloads: SIGHUP, or a `reload` operator request on
 *   `<prefix>.v2.reload._.<identity>` (every coordinator answers), re-read
 *   the configuration file and apply it whole (core/pool-reconfigure.ts);
 *   a file that does not load or validate changes nothing and is logged
 *   once with event `reload-refused`. Reloads run one at a time.
 * - `pools` operator requests on `<prefix>.v2.pools._.<identity>`, which
 *   every coordinator answers for the pools it holds.
 * - Who may list or reload, and how much listing work is done, is the
 *   core's to say (operator-access.ts, listing-budget.ts): a `reload` runs
 *   only when `receiveReload` says so, and every other request on these
 *   subscriptions gets the core's reply, a refusal included.
 *
 * Every decision is a core's: which reload is refused and why, what it
 * applies and what it reports (core/reload-plan.ts), whether NATS is up
 * (core/nats-link.ts), what makes the process ready (core/readiness.ts).
 * This file reads the file, the bus and the clock, carries the plans out
 * and serves the answers.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { encodeMessage, operatorServiceSubject, type ReloadOutcome } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { type Bus, type BusHandler } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import { NatsLink } from '../core/nats-link.js';
import { readiness } from '../core/readiness.js';
import { planReload, reloadApplied, reloadRefused, type ReloadLoad } from '../core/reload-plan.js';
import { statusView } from '../core/status-view.js';
import { CoordinatorError } from '../errors.js';
import { loadConfigFile } from './config-file.js';
import { json, parseListen, startHttpEndpoint, text, type HttpAnswer, type HttpEndpoint, type Route } from './http-server.js';
import { CoordinatorMetrics, type OwnershipView } from './metrics.js';
import type { Served } from './service.js';

/** OPERATOR_QUEUE_PREFIX — the first token of each coordinator's own queue group for operator requests. */
export const OPERATOR_QUEUE_PREFIX = 'tokenlease-ops';

/** READY_FLUSH_MS — how long `/readyz` waits for NATS to confirm a flush. */
export const READY_FLUSH_MS = 1000;

export interface OperationsOptions {
  readonly served: Served;
  /** The durable service's view of ownership; null in memory mode. */
  readonly ownership: OwnershipView | null;
  readonly bus: Bus;
  readonly logger: Logger;
  /** The configuration file a reload re-reads. */
  readonly configPath: string;
  /** Reads and checks that file (a relay's is a relay configuration); throws CoordinatorError('config-invalid'). Default: a coordinator's. */
  readonly loadConfig?: (path: string) => Promise<CoordinatorConfig>;
  /** What the status page calls the process: `memory` or `durable` (from `ownership`) unless said. */
  readonly mode?: 'relay';
  /** `--http`'s `host:port`, or undefined for no HTTP endpoint. */
  readonly http: string | undefined;
  /** How this coordinator names itself to operators (durable mode: its member name). */
  readonly name: string;
}

type Subscription = ReturnType<Bus['serve']>;

export interface Operations {
  readonly metrics: CoordinatorMetrics;
  /** The HTTP endpoint's URL, or null without `--http`. */
  readonly httpUrl: string | null;
  /** reload — re-reads the configuration file and applies it if it validates (one at a time). */
  reload(trigger: string): Promise<ReloadOutcome>;
  stop(): Promise<void>;
}

/** startOperations — see the module comment. Rejects with CoordinatorError('config-invalid') for a bad `--http`, or when it cannot listen. */
export async function startOperations(options: OperationsOptions): Promise<Operations> {
  const { served, ownership, logger, name } = options;
  const listen = options.http === undefined ? null : parseListen(options.http);
  served.core.name = name;
  const metrics = new CoordinatorMetrics(served.core, ownership);
  served.observe(metrics);
  const link = watchNats(options.bus, metrics);
  const reloads = new Reloads(options, metrics);
  const onHangup = (): void => void reloads.reload('SIGHUP').catch(reloadFailed(logger));
  process.on('SIGHUP', onHangup);
  const subscriptions = serveOperatorRequests(options, reloads);
  const routes = await routesOf(options, metrics, link);
  const undo = async (): Promise<void> => {
    await Promise.all(subscriptions.map((s) => s.stop()));
    process.off('SIGHUP', onHangup);
    metrics.stop();
  };
  const endpoint = listen === null ? null : await listenOn(options, listen, routes, undo);
  return {
    metrics,
    httpUrl: endpoint?.url ?? null,
    reload: (trigger) => reloads.reload(trigger),
    async stop(): Promise<void> {
      process.off('SIGHUP', onHangup);
      metrics.stop();
      await Promise.all([...subscriptions.map((s) => s.stop()), endpoint?.close()]);
    },
  };
}

/** watchNats — the NATS link as the bus's events say (core/nats-link.ts), told to the metrics after each. */
function watchNats(bus: Bus, metrics: CoordinatorMetrics): NatsLink {
  const link = new NatsLink();
  bus.onEvent((event) => metrics.natsConnected(link.event(event.type)));
  return link;
}

/**
 * Reloads — runs reloads one at a time: each re-reads the file, has
 * core/reload-plan.ts say what to do, applies it, and counts, logs and
 * answers what the plan's report says.
 */
class Reloads {
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly options: OperationsOptions,
    private readonly metrics: CoordinatorMetrics,
  ) {}

  /** reload — queued behind the reload before it; rejects only on a fault (a refusal is an outcome). */
  reload(trigger: string): Promise<ReloadOutcome> {
    const run = this.last.then(() => this.once(trigger));
    this.last = run.catch(() => undefined);
    return run;
  }

  private async once(trigger: string): Promise<ReloadOutcome> {
    const { served, configPath, logger } = this.options;
    const plan = planReload(served.core, await this.load(), configPath);
    if (plan.kind === 'fail') throw plan.error;
    const who = { trigger, coordinator: this.options.name };
    const report = plan.kind === 'refuse' ? reloadRefused(plan.reason, who) : reloadApplied(plan, served.reconfigure(plan.config), who);
    this.metrics.reloaded(report.outcome);
    logger[report.log.level](report.log.fields, report.log.message);
    return report.reply;
  }

  private async load(): Promise<ReloadLoad> {
    try {
      return { ok: true, config: await (this.options.loadConfig ?? loadConfigFile)(this.options.configPath) };
    } catch (error) {
      return { ok: false, error };
    }
  }
}

/** reloadFailed — logs a reload's fault (not a refusal: a refusal is its outcome). */
function reloadFailed(logger: Logger): (error: unknown) => void {
  return (error) => logger.error({ event: 'reload-failed', err: error }, 'reload failed');
}

/**
 * serveOperatorRequests — the `pools` and `reload` subscriptions, on a
 * queue group of this coordinator's own (named so that NATS permissions
 * can allow them all: `tokenlease-ops.*`), screened first as the services'
 * requests are (no reply to another identity's inbox, core/reply-inbox.ts);
 * the core answers each, or says to reload.
 */
function serveOperatorRequests(options: OperationsOptions, reloads: Reloads): Subscription[] {
  const { served, bus, logger } = options;
  const core = served.core;
  const prefix = core.config.subjectPrefix;
  const queue = `${OPERATOR_QUEUE_PREFIX}.${randomBytes(6).toString('hex')}`;
  const screened = (handler: BusHandler): BusHandler => served.replies.screened(() => core.config, handler);
  const pools = bus.serve(
    operatorServiceSubject(prefix, 'pools'),
    queue,
    screened((subject, payload, port) => {
      served.replies.send(core.receive(subject, payload, port, hostMonoNowUs()), hostMonoNowUs(), { subject });
    }),
  );
  const reload = bus.serve(
    operatorServiceSubject(prefix, 'reload'),
    queue,
    screened((subject, payload, port) => {
      const verdict = core.receiveReload(subject, payload, port, hostMonoNowUs());
      if (verdict !== 'reload') return served.replies.send(verdict, hostMonoNowUs(), { subject });
      reloads.reload('operator').then((outcome) => port.respond(encodeMessage(outcome)), reloadFailed(logger));
    }),
  );
  return [pools, reload];
}

/** routesOf — the HTTP endpoint's pages: metrics, health, readiness (core/readiness.ts) and the status page. */
async function routesOf(options: OperationsOptions, metrics: CoordinatorMetrics, link: NatsLink): Promise<Map<string, Route>> {
  const { bus, ownership, served } = options;
  const ready = async (): Promise<HttpAnswer> => {
    // No flush is asked of a connection known to be down.
    const nats = link.up && (await within(bus.flush(), READY_FLUSH_MS));
    const { status, body } = readiness({ nats, store: ownership === null ? null : ownership.storeUp(), serving: served.serving() });
    return json(status, body);
  };
  const assets = await loadAssets();
  return new Map<string, Route>([
    ['/metrics', async () => ({ status: 200, contentType: metrics.contentType, body: await metrics.render() })],
    ['/healthz', () => text(200, 'ok\n')],
    ['/readyz', ready],
    ['/', () => assets.html],
    ['/status.js', () => assets.js],
    ['/status.css', () => assets.css],
    ['/api/status', () => json(200, statusData(options, metrics, link))],
  ]);
}

/** statusData — what `/api/status` answers: the pools held (core/status-view.ts), the connections, history and ownership. */
function statusData(options: OperationsOptions, metrics: CoordinatorMetrics, link: NatsLink): object {
  const { served, ownership, name } = options;
  const nowUs = hostMonoNowUs();
  const view = statusView(served.core.held(), nowUs);
  const owned = ownership === null ? null : [...ownership.owned()].map(([unit, epoch]) => ({ unit, epoch }));
  return {
    coordinator: name,
    mode: options.mode ?? (ownership === null ? 'memory' : 'durable'),
    natsConnected: link.up,
    ...view,
    history: metrics.history.series(),
    ownership: ownership === null ? null : { member: name, storeUp: ownership.storeUp(), members: [...ownership.members()], owned },
  };
}

/** listenOn — the HTTP endpoint on `listen`; when it cannot listen, `undo`es what was started and rejects with `listen-failed`. */
async function listenOn(
  options: OperationsOptions,
  listen: { host: string; port: number },
  routes: Map<string, Route>,
  undo: () => Promise<void>,
): Promise<HttpEndpoint> {
  let endpoint: HttpEndpoint;
  try {
    endpoint = await startHttpEndpoint(listen.host, listen.port, routes);
  } catch (error) {
    await undo();
    const reason = error instanceof Error ? error.message : String(error);
    throw new CoordinatorError('listen-failed', `cannot serve HTTP on ${options.http}: ${reason}`, { cause: error });
  }
  options.logger.info({ event: 'http-listening', url: endpoint.url }, 'HTTP endpoint listening');
  return endpoint;
}

/** within — whether `promise` settles successfully within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** loadAssets — the status page's files, shipped beside dist/ in assets/. */
async function loadAssets(): Promise<{ html: HttpAnswer; js: HttpAnswer; css: HttpAnswer }> {
  const read = async (file: string, contentType: string): Promise<HttpAnswer> => ({
    status: 200,
    contentType,
    body: await readFile(new URL(`../../assets/${file}`, import.meta.url), 'utf8'),
  });
  const [html, js, css] = await Promise.all([
    read('status.html', 'text/html; charset=utf-8'),
    read('status.js', 'text/javascript; charset=utf-8'),
    read('status.css', 'text/css; charset=utf-8'),
  ]);
  return { html, js, css };
}
