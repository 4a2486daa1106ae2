/**
 * What the coordinator's and the relay's command lines share: failing with
 * one line and a status, the log level, the NATS connection from flags and
 * environment, and a clean stop on SIGTERM/SIGINT.
 *
 * Rules:
 * - A usage or configuration error exits 2; NATS unreachable or refusing
 *   the login or the TLS handshake exits 1; a clean stop exits 0, an
 *   unclean one 1. Each failure is one line on stderr, never a secret.
 * - Signal handlers go in before a service announces itself, so a signal
 *   sent as soon as it says it serves is always handled.
 * - `--version` (`-V`) prints `<bin> <version>` and exits 0; `--help`
 *   (`-h`) prints the usage, what the command does, examples and where
 *   the docs are, on stdout, and exits 0.
 */
import { readFileSync } from 'node:fs';
import { TokenleaseError } from '@tokenlease/shared';
import { connectNats, natsEnvLayer, natsFlagLayer, resolveNatsOptions, type Bus } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import { LOG_LEVELS } from './logger.js';

/** Flags — parsed command-line values. */
export type Flags = Record<string, string | boolean | undefined>;

/** Fail — prints one line and exits with `status` (declare it with this type: a call then narrows like a throw). */
export type Fail = (status: number, message: string) => never;

/** failer — a `fail(status, message)` that prints `<bin>: <message>` and exits. */
export function failer(bin: string): Fail {
  return (status, message) => {
    process.stderr.write(`${bin}: ${message}\n`);
    process.exit(status);
  };
}

/** VERSION_FLAG — the parseArgs option every bin takes for `--version`. */
export const VERSION_FLAG = { version: { type: 'boolean', short: 'V' } } as const;

/** DOCS — where a user of an installed package finds the docs. */
export const DOCS = 'docs: the README of @tokenlease/coordinator (npm docs @tokenlease/coordinator) and its docs/ folder';

/** packageVersion — this package's version, from its package.json (two folders up from src/adapters or dist/adapters). */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

/** helpText — the `--help` page: the usage, then the sections given (what it does, examples), then the docs line. */
export function helpText(usage: string, ...sections: string[]): string {
  return [usage, ...sections, DOCS].join('\n\n');
}

/** answeredInfo — prints the version or the help page when the flags ask for one; true when it did (the bin then exits 0). */
export function answeredInfo(bin: string, values: Flags, help: string): boolean {
  if (values['version'] === true) process.stdout.write(`${bin} ${packageVersion()}\n`);
  else if (values['help'] === true) process.stdout.write(`${help}\n`);
  else return false;
  return true;
}

/** logLevelOf — `--log-level`, else LOG_LEVEL, else info; a level pino does not know fails with status 2. */
export function logLevelOf(values: Flags, fail: Fail): string {
  const level = values['log-level'] ?? process.env['LOG_LEVEL'] ?? 'info';
  if (typeof level !== 'string' || !LOG_LEVELS.includes(level)) fail(2, `unknown log level ${JSON.stringify(level)}`);
  return level;
}

/**
 * openBus — the NATS connection the flags and environment name, named
 * `<bin> <pid>` (`inboxPrefix`: the inbox prefix unless they name one);
 * fails the process with one line.
 */
export async function openBus(bin: string, values: Flags, fail: Fail, inboxPrefix?: string): Promise<Bus> {
  try {
    const defaults = inboxPrefix === undefined ? {} : { inboxPrefix };
    const options = resolveNatsOptions([natsFlagLayer(values), natsEnvLayer(process.env)], defaults);
    return await connectNats(options, { name: `${bin} ${process.pid}` });
  } catch (error) {
    if (error instanceof TokenleaseError) fail(error.code === 'invalid-nats-options' ? 2 : 1, error.message);
    throw error;
  }
}

/**
 * stopOnSignals — on the first SIGTERM or SIGINT, runs `stop` (the
 * service's stop, then whatever must close after it) and exits 0, or 1
 * with one logged line when it fails.
 */
export function stopOnSignals(logger: Logger, stop: () => Promise<unknown>): void {
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutting-down', signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ event: 'unclean-shutdown', err: error }, 'unclean shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
