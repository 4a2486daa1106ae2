#!/usr/bin/env node
/**
 * tokenlease-coordinator — serves the pools of a configuration file over NATS.
 *
 *   tokenlease-coordinator --config pools.yaml [options]
 *
 * Its flags and environment variables are described once, in
 * core/command-lines.ts: parseArgs's options, `--help`, the check of every
 * value and docs/reference/command-line.md come from there.
 *
 * State lives in memory unless a Redis URL is given (`--redis`, or the
 * `REDIS_URL` environment variable unless `--memory` is given): then pools
 * are shared with the other coordinators on that Redis, each owned by one.
 * Every NATS and Redis flag has an environment variable twin (NATS_USER,
 * REDIS_CA, …); the flag wins. Secrets are never printed: URLs are shown
 * redacted and the logger redacts credential fields.
 *
 * `--http host:port` serves /metrics, /healthz, /readyz and a status page
 * (operations.ts); SIGHUP re-reads the configuration file and applies it
 * to the live pools.
 *
 * Exits 2 on a usage or configuration error (one line saying why, followed
 * by the usage for a usage error), 1 with one line when NATS or Redis cannot
 * be reached or refuses the login or the TLS handshake (within the connect
 * timeout), 0 after a clean SIGTERM/SIGINT shutdown.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { type Bus } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import { CoordinatorError } from '../errors.js';
import { COORDINATOR_COMMAND, COORDINATOR_SETTINGS } from '../core/command-lines.js';
import { DEFAULT_OWNERSHIP_TTL_MS } from '../core/ownership-driver.js';
import { resolveRedisOptions } from '../core/redis-options.js';
import { REDIS_PREFIX } from '../core/redis-settings.js';
import { loadConfigFile } from './config-file.js';
import {
  answeredInfo,
  commandOptions,
  failer,
  helpText,
  logLevelOf,
  openBus,
  settingOf,
  settingOr,
  stopOnSignals,
  usageText,
  type Fail,
  type Flags,
} from './cli-common.js';
import { grantSignerFrom } from './grant-signer.js';
import { setCoordinatorHeapFlags } from './heap-flags.js';
import { createLogger } from './logger.js';
import { connectRedisStore, type StateStore } from './redis-store.js';
import { startDurableService } from './durable-service.js';
import { startOperations } from './operations.js';
import { startCoordinatorService } from './service.js';

const USAGE = usageText(COORDINATOR_COMMAND);

const help = (): string =>
  helpText(
    COORDINATOR_COMMAND,
    [
      'Serves the pools of the configuration over NATS: grants, renews and takes back leases of tokens, in memory\n' +
        '(--memory, one coordinator) or durably in Redis (--redis, several coordinators sharing the pools). SIGHUP reloads\n' +
        'the configuration; SIGTERM stops cleanly. --http serves /metrics, /healthz, /readyz and the status page.',
    ],
    'examples:\n' +
      '  tokenlease-coordinator --config pools.yaml --memory\n' +
      '  tokenlease-coordinator --config pools.yaml --redis redis://127.0.0.1:6379 --member c1 --http 127.0.0.1:9464\n' +
      '  NATS_URL=nats://nats:4222 tokenlease-coordinator --config pools.yaml --memory --log-level debug',
  );

const BIN = 'tokenlease-coordinator';
const fail: Fail = failer(BIN);

function parse(): Flags {
  try {
    return parseArgs({ options: commandOptions(COORDINATOR_COMMAND), strict: true }).values;
  } catch (error) {
    fail(2, `${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
}

/** openStore — the Redis store the flags and environment name (none with --memory); fails the process with one line. */
async function openStore(values: Flags, keyPrefix: string, logger: Logger): Promise<StateStore | null> {
  if (values['memory'] === true && values['redis'] !== undefined) fail(2, `--memory and --redis exclude each other\n${USAGE}`);
  if (values['memory'] === true) return null;
  let store: StateStore;
  try {
    const redis = resolveRedisOptions(values, process.env);
    if (redis === null) return null;
    store = await connectRedisStore(redis, { keyPrefix });
    const warning = await store.durabilityWarning();
    if (warning !== null) logger.warn({ event: 'durability-warning', redis: redis.shown }, warning);
    const replicas = await store.replicaWarning();
    if (replicas !== null) logger.warn({ event: 'replica-warning', redis: redis.shown, replicas: redis.replicas }, replicas);
  } catch (error) {
    if (error instanceof CoordinatorError) fail(error.code === 'config-invalid' ? 2 : 1, error.message);
    throw error;
  }
  return store;
}

async function main(): Promise<void> {
  const values = parse();
  if (answeredInfo(BIN, values, help)) return;
  setCoordinatorHeapFlags();
  const configPath = values['config'];
  if (typeof configPath !== 'string') fail(2, `--config is required\n${USAGE}`);
  const logger = createLogger(logLevelOf(values, fail));

  let config;
  try {
    config = await loadConfigFile(configPath);
  } catch (error) {
    if (error instanceof CoordinatorError) fail(2, error.message);
    throw error;
  }
  const ownershipTtlMs = settingOf(COORDINATOR_SETTINGS.ownershipTtlMs, values, fail) ?? DEFAULT_OWNERSHIP_TTL_MS;
  const member = settingOr(COORDINATOR_SETTINGS.member, values, fail, `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`);
  const signGrant = grantSignerFrom(values, process.env, fail);
  const redisPrefix = settingOf(REDIS_PREFIX, values, fail) ?? config.subjectPrefix;
  const store = await openStore(values, redisPrefix, logger);
  let bus: Bus;
  try {
    bus = await openBus(BIN, values, fail);
  } catch (error) {
    await store?.close();
    throw error;
  }
  bus.onEvent((event) => logger.warn({ event: 'nats-connection', connection: event }, 'nats connection event'));
  // Handlers go in before the service announces itself, so a signal sent
  // as soon as "coordinator serving" appears is always handled.
  stopOnSignals(logger, () =>
    service
      .stop()
      .then(() => bus.drain())
      .then(() => store?.close()),
  );
  const service =
    store === null
      ? startCoordinatorService({ config, bus, logger })
      : startDurableService({ config, bus, logger, store, member, ownershipTtlMs });
  // Set in the tick the service started in: no request is handled before it, so no grant leaves unsigned.
  service.replies.signGrant = signGrant;

  // Operations: metrics, the --http endpoint, reloads on SIGHUP and operator requests (operations.ts).
  const durable = 'storeUp' in service ? service : null;
  const http = values['http'];
  await startOperations({
    served: service,
    ownership: durable,
    bus,
    logger,
    configPath,
    http: typeof http === 'string' ? http : undefined,
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
