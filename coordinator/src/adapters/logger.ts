/**
 * The coordinator's logger: pino JSON lines, with every field that could
 * hold a credential replaced by `***` (pino's `redact`), whatever logs it.
 *
 * Values are redacted by where they stand, not by what they hold: a
 * password, token, secret or seed field, at the top or one or two levels
 * down, and the arguments of a Redis command carried by a Redis error
 * (an AUTH that failed would carry its password). URLs are redacted where
 * they are made into text (redactUrl), never logged whole.
 */
import { REDACTED } from '@tokenlease/shared';
import { pino, type DestinationStream, type Logger } from 'pino';

const SECRET_KEYS = ['password', 'pass', 'token', 'secret', 'seed', 'nkey', 'creds', 'authorization'];

/** REDACT_PATHS — the log fields pino replaces with REDACTED. */
export const REDACT_PATHS: readonly string[] = [
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((key) => `*.${key}`),
  ...SECRET_KEYS.map((key) => `*.*.${key}`),
  '*.command.args',
  '*.*.command.args',
];

/** createLogger — the logger of the process named `name` (the coordinator's by default) at `level` (one of LOG_LEVELS, core/command-lines.ts), to `destination` (default stdout). */
export function createLogger(level: string, destination?: DestinationStream, name = 'tokenlease-coordinator'): Logger {
  const options = { name, level, redact: { paths: [...REDACT_PATHS], censor: REDACTED } };
  return destination === undefined ? pino(options) : pino(options, destination);
}
