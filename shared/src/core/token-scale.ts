/**
 * TokenScale: exact integer credit arithmetic for one pool.
 *
 * Rules:
 * - Credit is counted in integer *units*. A refill of `T` tokens per `P` ms
 *   adds `T / g` units every microsecond, and one token is `P·1000 / g` units,
 *   where `g = gcd(T, P·1000)`. Refill over whole microseconds is therefore
 *   exact: no float ever holds a token count.
 * - Time is an integer number of microseconds of a monotonic clock. The
 *   envelope `B + r·T` holds for T measured in those whole microseconds.
 * - Every unit count stays at or below UNITS_MAX (2^52), so sums of two unit
 *   counts and the quotients below are exact in a float64. A capacity whose
 *   unit count would pass it is rejected with `out-of-range`, and the message
 *   names the largest capacity that fits the rate.
 */
import { TokenleaseError } from '../errors.js';
import type { Rate } from './rate.js';

/** UNITS_MAX — the largest credit unit count (2^52): sums of two stay exact in a float64. */
export const UNITS_MAX = 2 ** 52;
/** Largest monotonic clock reading accepted, in µs (about 285 years). */
export const TIME_US_MAX = Number.MAX_SAFE_INTEGER;

/** TokenScale — one pool's exact integer credit arithmetic (tokenScale): its capacity, its rate, and their units. */
export interface TokenScale {
  readonly capacityTokens: number;
  readonly rate: Rate;
  /** Credit units in one token. */
  readonly unitsPerToken: number;
  /** Credit units refilled per microsecond. */
  readonly unitsPerUs: number;
  /** `capacityTokens · unitsPerToken`. */
  readonly capacityUnits: number;
  /** Elapsed µs after which an empty pool is full; longer gaps refill no more. */
  readonly fillUs: number;
}

function gcd(a: number, b: number): number {
  let x = a;
  let y = b;
  while (y !== 0) {
    const t = x % y;
    x = y;
    y = t;
  }
  return x;
}

/** tokenScale — validates `capacityTokens` against `rate` and returns the unit constants. */
export function tokenScale(capacityTokens: number, rate: Rate): TokenScale {
  const periodUs = rate.periodMs * 1000;
  const g = gcd(rate.tokens, periodUs);
  const unitsPerToken = periodUs / g;
  const unitsPerUs = rate.tokens / g;
  const capacityTokensMax = Math.floor(UNITS_MAX / unitsPerToken);
  if (!Number.isSafeInteger(capacityTokens) || capacityTokens < 1 || capacityTokens > capacityTokensMax) {
    throw new TokenleaseError(
      'out-of-range',
      `capacity must be an integer in [1, ${capacityTokensMax}] for a refill of ${rate.tokens} per ${rate.periodMs} ms, got ${capacityTokens}`,
      { field: 'capacity' },
    );
  }
  const capacityUnits = capacityTokens * unitsPerToken;
  return {
    capacityTokens,
    rate,
    unitsPerToken,
    unitsPerUs,
    capacityUnits,
    fillUs: Math.ceil(capacityUnits / unitsPerUs),
  };
}

/**
 * refillUnits — units that `elapsedUs` microseconds add, never more than
 * `roomUnits`. Zero or negative elapsed time adds nothing.
 */
export function refillUnits(scale: TokenScale, elapsedUs: number, roomUnits: number): number {
  if (elapsedUs <= 0 || roomUnits <= 0) return 0;
  const clampedUs = elapsedUs < scale.fillUs ? elapsedUs : scale.fillUs;
  const units = clampedUs * scale.unitsPerUs;
  return units < roomUnits ? units : roomUnits;
}

/** wholeTokens — `floor(units / unitsPerToken)`, exact for units in [0, UNITS_MAX]. */
export function wholeTokens(scale: TokenScale, units: number): number {
  let q = Math.floor(units / scale.unitsPerToken);
  // Float division can round up across an integer boundary; correct it.
  if (q * scale.unitsPerToken > units) q -= 1;
  else if ((q + 1) * scale.unitsPerToken <= units) q += 1;
  return q;
}

/** waitUs — whole microseconds of refill needed to accrue `missingUnits` (0 when none are missing). */
export function waitUs(scale: TokenScale, missingUnits: number): number {
  return missingUnits <= 0 ? 0 : Math.ceil(missingUnits / scale.unitsPerUs);
}

/** assertTimeUs — rejects a clock reading that is not a non-negative safe integer of µs. */
export function assertTimeUs(nowUs: number, field = 'nowUs'): void {
  if (!Number.isSafeInteger(nowUs) || nowUs < 0) {
    throw new TokenleaseError('out-of-range', `${field} must be an integer number of microseconds in [0, ${TIME_US_MAX}], got ${nowUs}`, {
      field,
    });
  }
}
