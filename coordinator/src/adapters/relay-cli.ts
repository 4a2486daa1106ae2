#!/usr/bin/env node
/**
 * tokenlease-relay — serves pools of a root coordinator to its own agents on
 * its own subject prefix, holding one chunk lease per pool from the root
 * (docs/design.md, "Relays"; configuration: core/relay-config.ts).
 *
 *   tokenlease-relay --config relay.yaml [--relay-id <name>] [--log-level info] [--http 127.0.0.1:9465]
 *                    [--nats nats://127.0.0.1:4222] [NATS login and TLS flags, as tokenlease-coordinator's]
 *
 * Its flags and environment variables: core/command-lines.ts (RELAY_COMMAND).
 *
 * As a coordinator (operations.ts): `--http` serves /metrics (the served
 * pools' metrics and the relay's own, relay-metrics.ts), /healthz, /readyz
 * and the status page; SIGHUP, or a `reload` operator request on the
 * relay's prefix, re-reads the file and applies its pools (a changed pool
 * starts over under a new upstream lease; the prefixes and uplink settings
 * need a restart); `pools` operator requests list what it serves. With
 * `uplink.identity` its requests to the root go under that identity token
 * and its replies come to `_INBOX_<identity>` unless `--nats-inbox-prefix`
 * or NATS_INBOX_PREFIX says otherwise.
 *
 * Memory only: a relay that restarts starts over with a new upstream agent
 * id; the root counts its old lease until that expires. Exits 2 on a usage
 * or configuration error, 1 when NATS cannot be reached, 0 after a clean
 * SIGTERM/SIGINT shutdown (held requests answered, idle upstream leases
 * returned).
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import type { CoordinatorConfig } from '../core/config.js';
import { RELAY_COMMAND, RELAY_SETTINGS } from '../core/command-lines.js';
import { CoordinatorError } from '../errors.js';
import {
  answeredInfo,
  commandOptions,
  failer,
  helpText,
  logLevelOf,
  openBus,
  settingOr,
  stopOnSignals,
  usageText,
  type Fail,
  type Flags,
} from './cli-common.js';
import { loadRelayConfigFile } from './config-file.js';
import { grantSignerFrom } from './grant-signer.js';
import { setCoordinatorHeapFlags } from './heap-flags.js';
import { createLogger } from './logger.js';
import { startOperations } from './operations.js';
import { RelayMetrics } from './relay-metrics.js';
import { startRelayService } from './relay-service.js';

const USAGE = usageText(RELAY_COMMAND);

const help = (): string =>
  helpText(
    RELAY_COMMAND,
    [
      "Leases tokens of the root coordinator's pools under its own identity and leases them on to the agents on its\n" +
        'own subject prefix, so a region or a cluster asks the root once rather than once per agent. SIGTERM stops cleanly.',
    ],
    'examples:\n' +
      '  tokenlease-relay --config relay.yaml\n' +
      '  tokenlease-relay --config relay.yaml --relay-id edge-eu1 --http 127.0.0.1:9470',
  );

const BIN = 'tokenlease-relay';
const fail: Fail = failer(BIN);

function parse(): Flags {
  try {
    return parseArgs({ options: commandOptions(RELAY_COMMAND), strict: true }).values;
  } catch (error) {
    fail(2, `${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
}

async function main(): Promise<void> {
  const values = parse();
  if (answeredInfo(BIN, values, help)) return;
  setCoordinatorHeapFlags();
  const configPath = values['config'];
  if (typeof configPath !== 'string') fail(2, `--config is required\n${USAGE}`);
  const level = logLevelOf(values, fail);
  const relayId = settingOr(RELAY_SETTINGS.relayId, values, fail, `${hostname()}-${process.pid}`);
  const logger = createLogger(level, undefined, BIN);
  let config;
  try {
    config = await loadRelayConfigFile(configPath);
  } catch (error) {
    if (error instanceof CoordinatorError) fail(2, error.message);
    throw error;
  }
  // Under an upstream identity its replies come to the inbox that identity's NATS user may read.
  const identity = config.uplink.identity;
  const signGrant = grantSignerFrom(values, process.env, fail);
  const bus = await openBus(BIN, values, fail, identity === null ? undefined : `_INBOX_${identity}`);
  bus.onEvent((event) => logger.warn({ event: 'nats-connection', connection: event }, 'nats connection event'));
  stopOnSignals(logger, () => service.stop().then(() => bus.drain()));
  const service = startRelayService({ config, bus, logger, relayId });
  // Set in the tick the service started in: no request is handled before it, so no grant leaves unsigned.
  service.replies.signGrant = signGrant;

  const loadConfig = async (path: string): Promise<CoordinatorConfig> => {
    const next = await loadRelayConfigFile(path);
    const problem = service.relay.reconfigureProblem(next);
    if (problem !== null) throw new CoordinatorError('config-invalid', `${path}: ${problem}`);
    return next.downstream;
  };
  const http = values['http'];
  const operations = await startOperations({
    served: service,
    ownership: null,
    bus,
    logger,
    configPath,
    loadConfig,
    mode: 'relay',
    http: typeof http === 'string' ? http : undefined,
    name: relayId,
  }).catch((error: unknown) => {
    if (error instanceof CoordinatorError) fail(error.code === 'config-invalid' ? 2 : 1, error.message);
    throw error;
  });
  const metrics = operations.metrics;
  const relayMetrics = new RelayMetrics(metrics.registry, service.relay, hostMonoNowUs, (pool) => metrics.poolLabel(pool));
  service.observeUpstream((pool, outcome) => relayMetrics.upstream(pool, outcome));
}

main().catch((error: unknown) => {
  process.stderr.write(`tokenlease-relay: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
