/**
 * Rate: a refill of `tokens` every `periodMs` milliseconds, kept as an exact
 * ratio of two integers. `500/s` is `{ tokens: 500, periodMs: 1000 }`, never
 * the float 0.5 tokens per millisecond.
 *
 * Limits: `tokens` is an integer in [1, RATE_TOKENS_MAX]; `periodMs` is an
 * integer in [1, RATE_PERIOD_MS_MAX] (one day). Anything else is rejected with
 * a `TokenleaseError('invalid-rate')` that quotes the input.
 */
import { TokenleaseError } from '../errors.js';

/** Rate — `tokens` per `periodMs` milliseconds, as parseRate reads `"<tokens>/<period>"`. */
export interface Rate {
  readonly tokens: number;
  readonly periodMs: number;
}

/** RATE_TOKENS_MAX — the most tokens a rate may refill per period. */
export const RATE_TOKENS_MAX = 1_000_000_000;
/** RATE_PERIOD_MS_MAX — the longest period a rate may have, ms (one day). */
export const RATE_PERIOD_MS_MAX = 86_400_000;

/** Units of a rate's period, in ms: a Map, because the unit comes from a file (`constructor` must be no unit). */
const UNIT_MS: ReadonlyMap<string, number> = new Map([
  ['ms', 1],
  ['s', 1000],
  ['sec', 1000],
  ['m', 60_000],
  ['min', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
]);

const RATE_PATTERN = /^\s*(\d+)\s*\/\s*(\d*)\s*([a-z]+)\s*$/;

/** RATE_TEXT_PATTERN — the text form parseRate reads, units spelled out, as a JSON Schema `pattern` (what editors check). */
export const RATE_TEXT_PATTERN = `^\\s*[0-9]+\\s*/\\s*[0-9]*\\s*(${[...UNIT_MS.keys()].join('|')})\\s*$`;

/**
 * parseRate — reads `"<tokens>/<period>"` such as `500/s`, `2/1000ms`,
 * `60/min`, `1/h`, `10/5s`. Units: ms, s, sec, m, min, h, d.
 */
export function parseRate(text: string): Rate {
  const match = RATE_PATTERN.exec(text);
  const unitMs = match ? UNIT_MS.get(match[3] ?? '') : undefined;
  if (!match || unitMs === undefined) {
    throw new TokenleaseError(
      'invalid-rate',
      `rate ${JSON.stringify(text)} is not "<tokens>/<period>" like "500/s", "2/1000ms" or "60/min"`,
    );
  }
  const count = match[2] === '' ? 1 : Number(match[2]);
  return makeRate(Number(match[1]), count * unitMs);
}

/** makeRate — validates and returns `{ tokens, periodMs }`. */
export function makeRate(tokens: number, periodMs: number): Rate {
  if (!Number.isSafeInteger(tokens) || tokens < 1 || tokens > RATE_TOKENS_MAX) {
    throw new TokenleaseError('invalid-rate', `rate tokens must be an integer in [1, ${RATE_TOKENS_MAX}], got ${tokens}`);
  }
  if (!Number.isSafeInteger(periodMs) || periodMs < 1 || periodMs > RATE_PERIOD_MS_MAX) {
    throw new TokenleaseError('invalid-rate', `rate period must be an integer number of ms in [1, ${RATE_PERIOD_MS_MAX}], got ${periodMs}`);
  }
  return { tokens, periodMs };
}

/** formatRate — `"<tokens>/<periodMs>ms"`, or `/s` when the period is one second. */
export function formatRate(rate: Rate): string {
  return rate.periodMs === 1000 ? `${rate.tokens}/s` : `${rate.tokens}/${rate.periodMs}ms`;
}

/** tokensPerSecond — the rate as a float, for display and estimates only, never for credit. */
export function tokensPerSecond(rate: Rate): number {
  return (rate.tokens * 1000) / rate.periodMs;
}
