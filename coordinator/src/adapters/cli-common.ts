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
 *   (`-h`) prints the usage, what the command does, every option (from
 *   the command's description, core/command-lines.ts), examples and where
 *   the docs are, on stdout, and exits 0. A usage error prints the usage
 *   line alone.
 * - Every value is checked by its setting's form before it is used; a
 *   refusal is its one line, status 2.
 */
import { readFileSync } from 'node:fs';
import { TokenleaseError } from '@tokenlease/shared';
import {
  checkSetting,
  commandSettings,
  optionsHelp,
  parseArgsOptions,
  readSetting,
  type CommandLine,
  type ParseArgsOption,
  type Setting,
} from '@tokenlease/shared/command-line';
import { connectNats, natsEnvLayer, natsFlagLayer, resolveNatsOptions, type Bus } from '@tokenlease/shared/nats';
import type { Logger } from 'pino';
import { LOG_LEVEL } from '../core/command-lines.js';

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

/** DOCS — where a user of an installed package finds the docs. */
export const DOCS = 'docs: the README of @tokenlease/coordinator (npm docs @tokenlease/coordinator) and its docs/ folder';

/** packageVersion — this package's version, from its package.json (two folders up from src/adapters or dist/adapters). */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

/** usageText — the usage line of `command`, as a usage error ends. */
export function usageText(command: CommandLine): string {
  return `usage: ${command.bin} ${command.synopsis}   (--help lists every option)`;
}

/** helpText — the `--help` page: the usage, the sections given (what it does), every option, the examples, then the docs line. */
export function helpText(command: CommandLine, sections: readonly string[], examples: string): string {
  return [`usage: ${command.bin} ${command.synopsis}`, ...sections, optionsHelp(command), examples, DOCS].join('\n\n');
}

/** commandOptions — the parseArgs options of `command`: one per flag of its settings. */
export function commandOptions(command: CommandLine): Record<string, ParseArgsOption> {
  return parseArgsOptions(commandSettings(command));
}

/** answeredInfo — prints the version or the help page (made by `help`) when the flags ask for one; true when it did (the bin then exits 0). */
export function answeredInfo(bin: string, values: Flags, help: () => string): boolean {
  if (values['version'] === true) process.stdout.write(`${bin} ${packageVersion()}\n`);
  else if (values['help'] === true) process.stdout.write(`${help()}\n`);
  else return false;
  return true;
}

/** settingOf — `setting` from its flag, else its variable, checked by its form; undefined when neither gives it; fails (status 2) with its one line. */
export function settingOf<T>(setting: Setting<T>, values: Flags, fail: Fail): T | undefined {
  const read = readSetting(setting, values, process.env);
  if (!read.ok) fail(2, read.message);
  return read.value;
}

/** settingOr — as settingOf, else `derived` (a default made here, such as a name from the host's), checked by the same form under the flag's name. */
export function settingOr<T>(setting: Setting<T> & { readonly flag: string }, values: Flags, fail: Fail, derived: string): T {
  const given = settingOf(setting, values, fail);
  if (given !== undefined) return given;
  const checked = checkSetting(setting, `--${setting.flag}`, derived);
  if (!checked.ok) fail(2, `${checked.message} (the default; give --${setting.flag})`);
  return checked.value;
}

/** logLevelOf — `--log-level`, else LOG_LEVEL, else info; a level the logger does not know fails with status 2. */
export function logLevelOf(values: Flags, fail: Fail): string {
  return settingOf(LOG_LEVEL, values, fail) ?? LOG_LEVEL.default;
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
