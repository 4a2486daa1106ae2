#!/usr/bin/env node
/**
 * tokenlease-coordinator — serves the pools of a configuration file over NATS.
 *
 *   tokenlease-coordinator --config pools.yaml [--nats nats://127.0.0.1:4222] [--log-level info]
 *                          [--redis redis://127.0.0.1:6379 | --memory] [--ownership-ttl-ms 3000]
 *                          [--member <name>] [--redis-prefix tokenlease] [--http 127.0.0.1:9464]
 *
 * State lives in memory unless a Redis URL is given (`--redis`, or the
 * `REDIS_URL` environment variable unless `--memory` is given): then pools
 * are shared with the other coordinators on that Redis, each owned by one.
 *
 * `--http host:port` serves /metrics, /healthz, /readyz and a status page
 * (operations.ts); SIGHUP re-reads the configuration file and applies it
 * to the live pools.
 *
 * Exits 2 on a usage or configuration error (one line saying why, followed
 * by the usage for a usage error), 1 with one line when NATS or Redis cannot
 * be reached, 0 after a clean SIGTERM/SIGINT shutdown.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { connectBus, TokenleaseError } from '@tokenlease/shared';
import { pino } from 'pino';
import { CoordinatorError } from '../errors.js';
import { loadConfigFile } from './config-file.js';
import { connectRedisStore, parseRedisUrl, type StateStore } from './redis-store.js';
import { DEFAULT_OWNERSHIP_TTL_MS, startDurableService } from './durable-service.js';
import { startOperations } from './operations.js';
import { startCoordinatorService } from './service.js';

const USAGE =
  'usage: tokenlease-coordinator --config <pools.yaml|pools.json> [--nats <url>] [--log-level <level>]\n' +
  '         [--redis <redis://host:port> | --memory] [--ownership-ttl-ms <ms>] [--member <name>] [--redis-prefix <prefix>]\n' +
  '         [--http <host:port>]';

interface Flags {
  config?: string | undefined;
  nats?: string | undefined;
  'log-level'?: string | undefined;
  redis?: string | undefined;
  memory?: boolean | undefined;
  'ownership-ttl-ms'?: string | undefined;
  member?: string | undefined;
  'redis-prefix'?: string | undefined;
  http?: string | undefined;
  help?: boolean | undefined;
}

function fail(status: number, message: string): never {
  process.stderr.write(`tokenlease-coordinator: ${message}\n`);
  process.exit(status);
}

async function main(): Promise<void> {
  let values: Flags;
  try {
    ({ values } = parseArgs({
      options: {
        config: { type: 'string', short: 'c' },
        nats: { type: 'string' },
        'log-level': { type: 'string' },
        redis: { type: 'string' },
        memory: { type: 'boolean' },
        'ownership-ttl-ms': { type: 'string' },
        member: { type: 'string' },
        'redis-prefix': { type: 'string' },
        http: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    fail(2, `${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.config === undefined) fail(2, `--config is required\n${USAGE}`);
  const level = values['log-level'] ?? process.env['LOG_LEVEL'] ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(level))
    fail(2, `unknown log level ${JSON.stringify(level)}`);
  const logger = pino({ name: 'tokenlease-coordinator', level });

  let config;
  try {
    config = await loadConfigFile(values.config);
  } catch (error) {
    if (error instanceof CoordinatorError) fail(2, error.message);
    throw error;
  }
  if (values.memory === true && values.redis !== undefined) fail(2, `--memory and --redis exclude each other\n${USAGE}`);
  const redisUrl = values.memory === true ? undefined : (values.redis ?? process.env['REDIS_URL']);
  const ownershipTtlMs = Number(values['ownership-ttl-ms'] ?? DEFAULT_OWNERSHIP_TTL_MS);
  if (!Number.isSafeInteger(ownershipTtlMs) || ownershipTtlMs < 30 || ownershipTtlMs > 600_000) {
    fail(2, `--ownership-ttl-ms must be an integer in [30, 600000], got ${JSON.stringify(values['ownership-ttl-ms'])}`);
  }
  const member = values.member ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  if (!/^[\x21-\x7e]{1,128}$/.test(member)) fail(2, `--member must be 1 to 128 printable ASCII characters without spaces`);
  let store: StateStore | null = null;
  if (redisUrl !== undefined) {
    try {
      parseRedisUrl(redisUrl);
      store = await connectRedisStore(redisUrl, { keyPrefix: values['redis-prefix'] ?? config.subjectPrefix });
    } catch (error) {
      if (error instanceof CoordinatorError) fail(error.code === 'config-invalid' ? 2 : 1, error.message);
      throw error;
    }
    const warning = await store.durabilityWarning();
    if (warning !== null) logger.warn({ event: 'durability-warning', redis: redisUrl }, warning);
  }
  const url = values.nats ?? process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
  let bus;
  try {
    bus = await connectBus(url, { name: `tokenlease-coordinator ${process.pid}` });
  } catch (error) {
    await store?.close();
    if (error instanceof TokenleaseError) fail(1, error.message);
    throw error;
  }
  bus.onEvent((event) => logger.warn({ event: 'nats-connection', connection: event }, 'nats connection event'));
  // Handlers go in before the service announces itself, so a signal sent
  // as soon as "coordinator serving" appears is always handled.
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutting-down', signal }, 'shutting down');
    service
      .stop()
      .then(() => bus.drain())
      .then(() => store?.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ event: 'unclean-shutdown', err: error }, 'unclean shutdown');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const service =
    store === null
      ? startCoordinatorService({ config, bus, logger })
      : startDurableService({ config, bus, logger, store, member, ownershipTtlMs });

  // ── Operations (issue #13): metrics, the --http endpoint, reloads on SIGHUP and operator requests. ──
  // Everything operational stays in this block and in operations.ts; the lines above serve agents.
  const durable = 'storeUp' in service ? service : null;
  await startOperations({
    served: service,
    ownership: durable,
    bus,
    logger,
    configPath: values.config,
    http: values.http,
    name: durable?.member ?? `${hostname()}-${process.pid}`,
  }).catch((error: unknown) => {
    if (error instanceof CoordinatorError) fail(error.code === 'config-invalid' ? 2 : 1, error.message);
    throw error;
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`tokenlease-coordinator: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
