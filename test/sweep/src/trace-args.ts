/**
 * The sweep's trace flags: `--trace FILE ...`, `--trace-format`,
 * `--trace-field`, `--key-rule`, `--key-secret`, `--key`, `--key-pool` and
 * `--by-key [N]` (args.ts parses the command line; this reads these values).
 *
 * Guarantees: `readTraceArgs` returns validated TraceArgs or throws a
 * SweepArgsError naming the flag, and never puts a secret in it: the key
 * secret stays inside TraceKeyHash, and with an access log `--key` takes a
 * raw key that is hashed here, at once, so only its name is kept (and
 * printed, as `--key-pool`). `traceArgv` prints flags that read back to the
 * same TraceArgs, the secret apart: it is never printed, so a run whose
 * secret came from `--key-secret` replays with it in TOKENLEASE_KEY_SECRET.
 */
import { DIGEST_CHARS, KEY_SECRET_BYTES_MIN } from '@tokenlease/shared/key-hash';
import { poolNameProblem } from '@tokenlease/shared';
import { SweepArgsError } from './args-error.js';
import { BY_KEY_TOP_DEFAULT, BY_KEY_TOP_MAX } from './by-key.js';
import {
  formatTraceFields,
  parseTraceFields,
  parseTraceFormat,
  type AccessLogFormat,
  type TraceFields,
  type TraceFormat,
} from './trace-fields.js';
import { KEY_SECRET_ENV, randomKeySecret, TraceKeyHash, type KeySecretSource } from './trace-key-hash.js';
import { TOKENLEASE_SOURCE, type TraceSource } from './trace-source.js';
import { TRACE_ID_CHARS_MAX } from './trace.js';

/** TraceArgs — what the trace flags ask for; no trace: `tracePaths` empty and the rest at their defaults. */
export interface TraceArgs {
  /** `--trace`: the files to replay, in the order given (the caller reads them); empty: the workload. */
  readonly tracePaths: readonly string[];
  /** `--trace-format`: what the files are. */
  readonly traceFormat: TraceFormat;
  /** An access log's fields (`--trace-field` over the format's defaults); null for the tokenlease format. */
  readonly traceFields: TraceFields | null;
  /** An access log's key hash (`--key-rule`, the secret); null for the tokenlease format. */
  readonly keyHash: TraceKeyHash | null;
  /** `--key` / `--key-pool`: replay only this key's arrivals, by its name in reports (hashed); null: every arrival. */
  readonly traceKey: string | null;
  /** `--by-key [N]`: list the top N keys of a per-key report; null: no per-key report. */
  readonly byKeyTop: number | null;
}

/** TraceValues — the trace flags' values as the command line gave them, and the flags a trace replaces. */
export interface TraceValues {
  readonly 'trace-format'?: string | undefined;
  readonly 'trace-field'?: string[] | undefined;
  readonly 'key-rule'?: string | undefined;
  readonly 'key-secret'?: string | undefined;
  readonly key?: string | undefined;
  readonly 'key-pool'?: string | undefined;
  readonly 'by-key'?: string | undefined;
  readonly agents?: string | undefined;
  readonly workload?: string | undefined;
  readonly duration?: string | undefined;
  readonly window?: string | undefined;
}

/** TraceOutside — what the trace flags take from outside the command line: the environment's secret, and the random source of one. */
export interface TraceOutside {
  /** The value of TOKENLEASE_KEY_SECRET, if set. */
  readonly keySecretEnv?: string | undefined;
  /** Draws a secret for a run given none (default: 32 random bytes). */
  readonly drawKeySecret?: () => Uint8Array;
}

/** KEY_RULE_DEFAULT — the rule an access log's keys are named under when `--key-rule` is not given. */
export const KEY_RULE_DEFAULT = 'key';

/** NO_TRACE — the trace flags of a sweep of a workload. */
export const NO_TRACE: TraceArgs = {
  tracePaths: [],
  traceFormat: 'tokenlease',
  traceFields: null,
  keyHash: null,
  traceKey: null,
  byKeyTop: null,
};

/** ACCESS_LOG_FLAGS — the flags only an access log takes. */
const ACCESS_LOG_FLAGS = ['trace-field', 'key-rule', 'key-secret', 'key-pool'] as const;

/** readTraceArgs — the trace flags of `v`, with `paths` the files of every --trace (and those listed after one), in order. */
export function readTraceArgs(v: TraceValues, paths: readonly string[], outside: TraceOutside): TraceArgs {
  if (paths.length === 0) return noTrace(v);
  checkPaths(paths, v);
  const traceFormat = v['trace-format'] === undefined ? 'tokenlease' : parseTraceFormat(v['trace-format']);
  const byKeyTop = v['by-key'] === undefined ? null : readByKeyTop(v['by-key']);
  if (traceFormat === 'tokenlease') {
    for (const flag of ACCESS_LOG_FLAGS) {
      if (v[flag] !== undefined)
        throw new SweepArgsError(`--${flag}`, 'applies to access logs only: give --trace-format nginx-json or envoy-json');
    }
    return { ...NO_TRACE, tracePaths: paths, traceKey: readTokenleaseKey(v.key), byKeyTop };
  }
  const traceFields = parseTraceFields(traceFormat, v['trace-field'] ?? []);
  const keyHash = readKeyHash(v, outside);
  return { tracePaths: paths, traceFormat, traceFields, keyHash, traceKey: readAccessLogKey(v, keyHash), byKeyTop };
}

/** noTrace — NO_TRACE, refusing the flags that need a trace. */
function noTrace(v: TraceValues): TraceArgs {
  if (v.key !== undefined) throw new SweepArgsError('--key', 'picks one key of a --trace; give the trace too');
  for (const flag of ['trace-format', ...ACCESS_LOG_FLAGS, 'by-key'] as const) {
    if (v[flag] !== undefined) throw new SweepArgsError(`--${flag}`, 'applies to a replayed trace; give --trace FILE too');
  }
  return NO_TRACE;
}

function checkPaths(paths: readonly string[], v: TraceValues): void {
  if (paths.includes('')) throw new SweepArgsError('--trace', 'needs a file name, like --trace traffic.jsonl');
  const twice = paths.find((path, i) => paths.indexOf(path) !== i);
  if (twice !== undefined) throw new SweepArgsError('--trace', `names ${JSON.stringify(twice)} twice; give each file once`);
  for (const flag of ['agents', 'workload', 'duration'] as const) {
    if (v[flag] !== undefined)
      throw new SweepArgsError(
        `--${flag}`,
        'does not apply with --trace, whose instances, arrivals and span give the fleet, the demand and the duration',
      );
  }
  if (v.window !== undefined) throw new SweepArgsError('--window', 'does not take --trace yet: a trace replays against a bucket pool');
}

function readByKeyTop(text: string): number {
  const top = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(top) || top < 1 || top > BY_KEY_TOP_MAX)
    throw new SweepArgsError(
      '--by-key',
      `${JSON.stringify(text)} is not a number of keys to list; use a whole number in [1, ${BY_KEY_TOP_MAX}]`,
    );
  return top;
}

function readTokenleaseKey(key: string | undefined): string | null {
  if (key === undefined) return null;
  if (key === '' || key.length > TRACE_ID_CHARS_MAX)
    throw new SweepArgsError('--key', `must be a key of 1 to ${TRACE_ID_CHARS_MAX} characters, as the trace holds it`);
  return key;
}

/** readKeyHash — the rule and the secret an access log's keys are hashed with. */
function readKeyHash(v: TraceValues, outside: TraceOutside): TraceKeyHash {
  const rule = v['key-rule'] ?? KEY_RULE_DEFAULT;
  const problem = poolNameProblem(`${rule}:${'A'.repeat(DIGEST_CHARS)}`);
  if (rule === '' || problem !== null)
    throw new SweepArgsError(
      '--key-rule',
      `must be a rule name that with ":" and a ${DIGEST_CHARS}-character digest is a pool name, which ${problem ?? 'must not be empty'}`,
    );
  const [text, from, flag]: [string | undefined, KeySecretSource, string] =
    v['key-secret'] !== undefined
      ? [v['key-secret'], 'flag', '--key-secret']
      : outside.keySecretEnv !== undefined && outside.keySecretEnv !== ''
        ? [outside.keySecretEnv, 'environment', KEY_SECRET_ENV]
        : [undefined, 'random', ''];
  if (text === undefined) return new TraceKeyHash(rule, (outside.drawKeySecret ?? randomKeySecret)(), from);
  const secret = new TextEncoder().encode(text);
  if (secret.length < KEY_SECRET_BYTES_MIN)
    throw new SweepArgsError(
      flag,
      `must be at least ${KEY_SECRET_BYTES_MIN} bytes: the middleware's keySecret, the same on every instance`,
    );
  return new TraceKeyHash(rule, secret, from);
}

/** readAccessLogKey — `--key RAW` hashed, or `--key-pool NAME` checked: the name of the one key to replay, or null. */
function readAccessLogKey(v: TraceValues, keyHash: TraceKeyHash): string | null {
  if (v.key !== undefined && v['key-pool'] !== undefined)
    throw new SweepArgsError('--key-pool', 'and --key both pick a key; give one (--key takes the raw key, --key-pool its pool name)');
  if (v.key !== undefined) {
    if (v.key === '') throw new SweepArgsError('--key', 'needs the raw key whose arrivals to replay');
    return keyHash.name(v.key);
  }
  const pool = v['key-pool'];
  if (pool !== undefined && !keyHash.isName(pool))
    throw new SweepArgsError(
      '--key-pool',
      `must be a key's pool name as reports show it: ${keyHash.rule}: and ${DIGEST_CHARS} base64url characters`,
    );
  return pool ?? null;
}

/** traceArgv — flags that read back to `args`' trace flags (the key secret apart: never printed). */
export function traceArgv(args: TraceArgs): string[] {
  const argv = args.tracePaths.map((path) => `--trace=${path}`);
  if (args.traceFields !== null && args.keyHash !== null) {
    argv.push('--trace-format', args.traceFormat, ...formatTraceFields(args.traceFields).map((field) => `--trace-field=${field}`));
    argv.push(`--key-rule=${args.keyHash.rule}`);
  }
  if (args.traceKey !== null) argv.push(`${args.keyHash === null ? '--key' : '--key-pool'}=${args.traceKey}`);
  if (args.byKeyTop !== null) argv.push(`--by-key=${args.byKeyTop}`);
  return argv;
}

/** withByKeyValue — `argv` with each `--by-key` not followed by a number written `--by-key=N` (N the default), so N is optional. */
export function withByKeyValue(argv: readonly string[]): string[] {
  return argv.map((arg, i) => (arg === '--by-key' && !/^\d+$/.test(argv[i + 1] ?? '') ? `--by-key=${BY_KEY_TOP_DEFAULT}` : arg));
}

/** traceLabel — the trace's files for headers and reports: up to three by name, then how many more; its format when not tokenlease. */
export function traceLabel(args: Pick<TraceArgs, 'tracePaths' | 'traceFormat' | 'traceKey'>): string {
  const paths = args.tracePaths;
  const files = paths.length <= 3 ? paths.join(', ') : `${paths.slice(0, 2).join(', ')} and ${paths.length - 2} more files`;
  const format = args.traceFormat === 'tokenlease' ? '' : ` (${args.traceFormat})`;
  return `trace ${files}${format}${args.traceKey === null ? '' : ` key ${args.traceKey}`}`;
}

/** traceSource — how to read the trace's files. */
export function traceSource(args: TraceArgs): TraceSource {
  const { traceFields, keyHash } = args;
  if (traceFields === null || keyHash === null) return TOKENLEASE_SOURCE;
  return { format: args.traceFormat as AccessLogFormat, fields: traceFields, hashKey: (rawKey) => keyHash.name(rawKey) };
}
