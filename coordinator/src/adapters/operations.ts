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
 *   200, else 503 with the failing checks); `/` the live status page and
 *   `/api/status` its data.
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
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { encodeMessage, NAMES_LIST_MAX, MESSAGE_TEXT_LENGTH_MAX, operatorServiceSubject, type ReloadOutcome } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { type Bus, type BusHandler } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from '../core/config.js';
import { configDiff } from '../core/pool-reconfigure.js';
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
  const { served, ownership, bus, logger, configPath, name } = options;
  const listen = options.http === undefined ? null : parseListen(options.http);
  const core = served.core;
  core.name = name;
  const prefix = core.config.subjectPrefix;
  const metrics = new CoordinatorMetrics(core, ownership);
  served.observe(metrics);
  let natsUp = true;
  bus.onEvent((event) => {
    if (event.type === 'disconnect') natsUp = false;
    else if (event.type === 'reconnect') natsUp = true;
    metrics.natsConnected(natsUp);
  });

  let reloading: Promise<unknown> = Promise.resolve();
  const reload = (trigger: string): Promise<ReloadOutcome> => {
    const run = reloading.then(() => reloadOnce(trigger));
    reloading = run.catch(() => undefined);
    return run;
  };
  async function reloadOnce(trigger: string): Promise<ReloadOutcome> {
    let config: CoordinatorConfig;
    try {
      config = await (options.loadConfig ?? loadConfigFile)(configPath);
    } catch (error) {
      if (error instanceof CoordinatorError) return refused(trigger, error.message);
      throw error;
    }
    const problem = core.reconfigureProblem(config);
    if (problem !== null) return refused(trigger, `${configPath}: ${problem}`);
    const diff = configDiff(core.config, config);
    const { summary, atUs } = served.reconfigure(config);
    const any = diff.added.length + diff.removed.length + diff.changed.length > 0 || diff.otherChanged;
    const outcome = any ? 'applied' : 'unchanged';
    metrics.reloaded(outcome);
    const { added, removed, changed } = diff;
    logger.info(
      { event: 'reloaded', trigger, outcome, added, removed, changed, held: summary, tUs: Math.round(atUs) },
      'configuration reloaded',
    );
    const message = any ? `applied ${configPath}` : `${configPath} changes nothing`;
    return outcomeOf(outcome, message, diff);
  }
  function refused(trigger: string, reason: string): ReloadOutcome {
    metrics.reloaded('refused');
    logger.error({ event: 'reload-refused', trigger, reason }, 'configuration reload refused: nothing changed');
    return outcomeOf('refused', reason, { added: [], removed: [], changed: [] });
  }
  function outcomeOf(
    outcome: ReloadOutcome['outcome'],
    message: string,
    s: Pick<ReloadOutcome, 'added' | 'removed' | 'changed'>,
  ): ReloadOutcome {
    const cut = (names: readonly string[]): string[] => names.slice(0, NAMES_LIST_MAX);
    return {
      v: 2,
      kind: 'reload',
      coordinator: name.slice(0, 128),
      outcome,
      message: message.slice(0, MESSAGE_TEXT_LENGTH_MAX),
      added: cut(s.added),
      removed: cut(s.removed),
      changed: cut(s.changed),
    };
  }

  const onHangup = (): void =>
    void reload('SIGHUP').catch((error: unknown) => logger.error({ event: 'reload-failed', err: error }, 'reload failed'));
  process.on('SIGHUP', onHangup);

  // Every coordinator answers operator requests on a queue group of its own,
  // named so that NATS permissions can allow them all (`tokenlease-ops.*`).
  const queue = `${OPERATOR_QUEUE_PREFIX}.${randomBytes(6).toString('hex')}`;
  // Screened first, as the services' requests are: no reply to another identity's inbox (core/reply-inbox.ts).
  const screened = (handler: BusHandler): BusHandler => served.replies.screened(() => core.config, handler);
  const poolsSub = bus.serve(
    operatorServiceSubject(prefix, 'pools'),
    queue,
    screened((subject, payload, port) => {
      served.replies.send(core.receive(subject, payload, port, hostMonoNowUs()), hostMonoNowUs(), { subject });
    }),
  );
  const reloadSub = bus.serve(
    operatorServiceSubject(prefix, 'reload'),
    queue,
    screened((subject, payload, port) => {
      const verdict = core.receiveReload(subject, payload, port, hostMonoNowUs());
      if (verdict !== 'reload') {
        served.replies.send(verdict, hostMonoNowUs(), { subject });
        return;
      }
      reload('operator').then(
        (outcome) => port.respond(encodeMessage(outcome)),
        (error: unknown) => logger.error({ event: 'reload-failed', err: error }, 'reload failed'),
      );
    }),
  );

  const readiness = async (): Promise<HttpAnswer> => {
    const flushed = natsUp && (await within(bus.flush(), READY_FLUSH_MS));
    const checks = { nats: flushed, store: ownership === null ? null : ownership.storeUp(), serving: served.serving() };
    const ready = checks.nats && checks.store !== false && checks.serving;
    return json(ready ? 200 : 503, { ready, ...checks });
  };
  const assets = await loadAssets();
  const routes = new Map<string, Route>([
    ['/metrics', async () => ({ status: 200, contentType: metrics.contentType, body: await metrics.render() })],
    ['/healthz', () => text(200, 'ok\n')],
    ['/readyz', readiness],
    ['/', () => assets.html],
    ['/status.js', () => assets.js],
    ['/status.css', () => assets.css],
    ['/api/status', () => json(200, statusData())],
  ]);
  function statusData(): object {
    const nowUs = hostMonoNowUs();
    const view = statusView(core.held(), nowUs);
    const owned = ownership === null ? null : [...ownership.owned()].map(([unit, epoch]) => ({ unit, epoch }));
    return {
      coordinator: name,
      mode: options.mode ?? (ownership === null ? 'memory' : 'durable'),
      natsConnected: natsUp,
      ...view,
      history: metrics.history.series(),
      ownership: ownership === null ? null : { member: name, storeUp: ownership.storeUp(), members: [...ownership.members()], owned },
    };
  }
  let endpoint: HttpEndpoint | null = null;
  if (listen !== null) {
    try {
      endpoint = await startHttpEndpoint(listen.host, listen.port, routes);
    } catch (error) {
      await Promise.all([poolsSub.stop(), reloadSub.stop()]);
      process.off('SIGHUP', onHangup);
      metrics.stop();
      const reason = error instanceof Error ? error.message : String(error);
      throw new CoordinatorError('listen-failed', `cannot serve HTTP on ${options.http}: ${reason}`, { cause: error });
    }
    logger.info({ event: 'http-listening', url: endpoint.url }, 'HTTP endpoint listening');
  }
  return {
    metrics,
    httpUrl: endpoint?.url ?? null,
    reload,
    async stop(): Promise<void> {
      process.off('SIGHUP', onHangup);
      metrics.stop();
      await Promise.all([poolsSub.stop(), reloadSub.stop(), endpoint?.close()]);
    },
  };
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
