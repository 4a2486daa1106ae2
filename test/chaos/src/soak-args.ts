/**
 * Command line of the soak: `npm run soak -- [--duration 1h] [--seed N] [--json]`.
 *
 * `parseSoakArgs` returns validated SoakArgs or throws a SoakArgsError whose
 * message is one line naming the flag and what it accepts (the runner
 * prints it and exits 2). Pure: the seed, when not given, is drawn by the
 * runner.
 */
import { parseArgs } from 'node:util';

/** SoakArgs — one validated soak run. */
export interface SoakArgs {
  readonly durationMs: number;
  /** In [0, 2^32 − 1], or null to draw one (`$SEED`, else random). */
  readonly seed: number | null;
  readonly json: boolean;
  readonly help: boolean;
}

/** SoakArgsError — a refused command line; `message` is one line that starts with the flag. */
export class SoakArgsError extends Error {
  override readonly name = 'SoakArgsError';
  readonly code = 'bad-argument';
}

/** SOAK_DURATION_MIN_MS / SOAK_DURATION_MAX_MS — how short and how long a soak may be. */
export const SOAK_DURATION_MIN_MS = 60_000;
export const SOAK_DURATION_MAX_MS = 7 * 24 * 3_600_000;
const DEFAULT_DURATION_MS = 3_600_000;
const SEED_MAX = 2 ** 32 - 1;
const UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

export const SOAK_USAGE = `Usage: tokenlease-soak [flags] (in the repository: npm run soak -- [flags])

  --duration D   how long: a number and a unit, s, m (min) or h, such as 90s, 5m, 1h (default 1h; 1m to 168h)
  --seed N       the seed of the churn and the faults, in [0, ${SEED_MAX}] (default $SEED, else random)
  --json         print the report as one JSON object on stdout (progress goes to stderr)
  --help         this text`;

/** parseDuration — `90s`, `5m`, `5min`, `1h`, `1.5h` in ms; null when it is none of those. */
export function parseDuration(text: string): number | null {
  const match = /^(\d+(?:\.\d+)?)(s|m|min|h)$/.exec(text.trim());
  if (match === null) return null;
  const ms = Number(match[1]) * (UNITS[match[2] ?? ''] ?? NaN);
  return Number.isFinite(ms) ? Math.round(ms) : null;
}

export function parseSoakArgs(argv: readonly string[]): SoakArgs {
  let values: { duration?: string; seed?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { duration: { type: 'string' }, seed: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new SoakArgsError(error instanceof Error ? error.message.split('\n')[0] : String(error));
  }
  let durationMs = DEFAULT_DURATION_MS;
  if (values.duration !== undefined) {
    const parsed = parseDuration(values.duration);
    if (parsed === null || parsed < SOAK_DURATION_MIN_MS || parsed > SOAK_DURATION_MAX_MS) {
      throw new SoakArgsError(
        `--duration: must be a number and a unit (s, m, min, h) from 1m to 168h, such as 1h, got ${JSON.stringify(values.duration)}`,
      );
    }
    durationMs = parsed;
  }
  let seed: number | null = null;
  if (values.seed !== undefined) {
    seed = /^\d+$/.test(values.seed) ? Number(values.seed) : NaN;
    if (!Number.isSafeInteger(seed) || seed > SEED_MAX)
      throw new SoakArgsError(`--seed: must be an integer in [0, ${SEED_MAX}], got ${JSON.stringify(values.seed)}`);
  }
  return { durationMs, seed, json: values.json === true, help: values.help === true };
}
