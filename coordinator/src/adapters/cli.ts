#!/usr/bin/env node
/**
 * tokenlease-coordinator — serves the pools of a configuration file over NATS.
 *
 *   tokenlease-coordinator --config pools.yaml [--nats nats://127.0.0.1:4222] [--log-level info]
 *
 * Exits 2 with one line on a usage or configuration error, 1 when NATS
 * cannot be reached, 0 after a clean SIGTERM/SIGINT shutdown.
 */
import { parseArgs } from 'node:util';
import { connectBus, TokenleaseError } from '@tokenlease/shared';
import { pino } from 'pino';
import { CoordinatorError } from '../errors.js';
import { loadConfigFile } from './config-file.js';
import { startCoordinatorService } from './service.js';

const USAGE = 'usage: tokenlease-coordinator --config <pools.yaml|pools.json> [--nats <url>] [--log-level <level>]';

function fail(status: number, message: string): never {
  process.stderr.write(`tokenlease-coordinator: ${message}\n`);
  process.exit(status);
}

async function main(): Promise<void> {
  let values: { config?: string | undefined; nats?: string | undefined; 'log-level'?: string | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      options: {
        config: { type: 'string', short: 'c' },
        nats: { type: 'string' },
        'log-level': { type: 'string' },
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
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(level)) fail(2, `unknown log level ${JSON.stringify(level)}`);
  const logger = pino({ name: 'tokenlease-coordinator', level });

  let config;
  try {
    config = await loadConfigFile(values.config);
  } catch (error) {
    if (error instanceof CoordinatorError) fail(2, error.message);
    throw error;
  }
  const url = values.nats ?? process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
  let bus;
  try {
    bus = await connectBus(url, { name: `tokenlease-coordinator ${process.pid}` });
  } catch (error) {
    if (error instanceof TokenleaseError) fail(1, error.message);
    throw error;
  }
  bus.onEvent((event) => logger.warn({ event }, 'nats connection event'));
  // Handlers go in before the service announces itself, so a signal sent
  // as soon as "coordinator serving" appears is always handled.
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    service
      .stop()
      .then(() => bus.drain())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'unclean shutdown');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const service = startCoordinatorService({ config, bus, logger });
}

main().catch((error: unknown) => {
  process.stderr.write(`tokenlease-coordinator: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
