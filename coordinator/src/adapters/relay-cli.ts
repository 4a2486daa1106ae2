#!/usr/bin/env node
/**
 * tokenlease-relay — serves pools of a root coordinator to its own agents on
 * its own subject prefix, holding one chunk lease per pool from the root
 * (docs/design.md, "Relays"; configuration: core/relay-config.ts).
 *
 *   tokenlease-relay --config relay.yaml [--relay-id <name>] [--log-level info]
 *                    [--nats nats://127.0.0.1:4222] [NATS login and TLS flags, as tokenlease-coordinator's]
 *
 * Memory only: a relay that restarts starts over with a new upstream agent
 * id; the root counts its old lease until that expires. Exits 2 on a usage
 * or configuration error, 1 when NATS cannot be reached, 0 after a clean
 * SIGTERM/SIGINT shutdown (held requests answered, idle upstream leases
 * returned).
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { TokenleaseError } from '@tokenlease/shared';
import {
  connectNats,
  natsEnvLayer,
  natsFlagLayer,
  resolveNatsOptions,
  NATS_ENV_USAGE,
  NATS_FLAG_OPTIONS,
  NATS_FLAGS_USAGE,
  type Bus,
} from '@tokenlease/shared/nats';
import { CoordinatorError } from '../errors.js';
import { loadRelayConfigFile } from './config-file.js';
import { createLogger, LOG_LEVELS } from './logger.js';
import { startRelayService } from './relay-service.js';

const USAGE =
  'usage: tokenlease-relay --config <relay.yaml|relay.json> [--relay-id <name>] [--log-level <level>]\n' +
  `         ${NATS_FLAGS_USAGE}\n` +
  `       ${NATS_ENV_USAGE}`;

function fail(status: number, message: string): never {
  process.stderr.write(`tokenlease-relay: ${message}\n`);
  process.exit(status);
}

function parse(): Record<string, string | boolean | undefined> {
  try {
    return parseArgs({
      options: {
        config: { type: 'string', short: 'c' },
        'relay-id': { type: 'string' },
        'log-level': { type: 'string' },
        ...NATS_FLAG_OPTIONS,
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (error) {
    fail(2, `${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
}

async function main(): Promise<void> {
  const values = parse();
  if (values['help'] === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const configPath = values['config'];
  if (typeof configPath !== 'string') fail(2, `--config is required\n${USAGE}`);
  const level = values['log-level'] ?? process.env['LOG_LEVEL'] ?? 'info';
  if (typeof level !== 'string' || !LOG_LEVELS.includes(level)) fail(2, `unknown log level ${JSON.stringify(level)}`);
  const idFlag = values['relay-id'];
  const relayId = typeof idFlag === 'string' ? idFlag : `${hostname()}-${process.pid}`;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(relayId)) fail(2, '--relay-id must be 1 to 64 characters of [A-Za-z0-9_-]');
  const logger = createLogger(level);
  let config;
  try {
    config = await loadRelayConfigFile(configPath);
  } catch (error) {
    if (error instanceof CoordinatorError) fail(2, error.message);
    throw error;
  }
  let bus: Bus;
  try {
    const options = resolveNatsOptions([natsFlagLayer(values), natsEnvLayer(process.env)]);
    bus = await connectNats(options, { name: `tokenlease-relay ${process.pid}` });
  } catch (error) {
    if (error instanceof TokenleaseError) fail(error.code === 'invalid-nats-options' ? 2 : 1, error.message);
    throw error;
  }
  bus.onEvent((event) => logger.warn({ event: 'nats-connection', connection: event }, 'nats connection event'));
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutting-down', signal }, 'shutting down');
    service
      .stop()
      .then(() => bus.drain())
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
  const service = startRelayService({ config, bus, logger, relayId });
}

main().catch((error: unknown) => {
  process.stderr.write(`tokenlease-relay: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
