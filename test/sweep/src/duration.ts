/**
 * Durations as the sweep tool reads and prints them.
 *
 * Guarantees: a duration is `<digits>[.<digits>]<unit>` with unit `ms`, `s`,
 * `m` or `h` (no sign, no spaces, no exponent), read exactly into whole
 * microseconds without floating-point rounding; anything else, including a
 * value finer than one microsecond or larger than DURATION_US_MAX, is
 * refused with `null`. `formatDurationUs` prints a value that
 * `parseDurationUs` reads back to the same number.
 */

/** DURATION_US_MAX — the longest duration accepted, µs (one day). */
export const DURATION_US_MAX = 86_400_000_000;

const UNIT_US: Readonly<Record<string, number>> = { ms: 1000, s: 1_000_000, m: 60_000_000, h: 3_600_000_000 };
const DURATION_PATTERN = /^(\d{1,12})(?:\.(\d{1,6}))?(ms|s|m|h)$/;

/**
 * parseDurationUs — reads `500ms`, `2s`, `1.5s`, `0.2ms`, `1m`, `24h` into whole
 * microseconds (µs). Returns `null` for anything that is not such a duration,
 * is finer than 1 µs, or exceeds DURATION_US_MAX. `0ms` reads as 0.
 */
export function parseDurationUs(text: string): number | null {
  const match = DURATION_PATTERN.exec(text);
  if (match === null) return null;
  const unitUs = UNIT_US[match[3] ?? ''];
  if (unitUs === undefined) return null;
  const whole = Number(match[1]);
  const fractionDigits = match[2] ?? '';
  // fraction · unitUs must be a whole number of µs: check with integers only.
  const scale = 10 ** fractionDigits.length;
  const fractionScaledUs = Number(fractionDigits === '' ? 0 : fractionDigits) * unitUs;
  if (fractionScaledUs % scale !== 0) return null;
  const us = whole * unitUs + fractionScaledUs / scale;
  if (!Number.isSafeInteger(us) || us > DURATION_US_MAX) return null;
  return us;
}

/**
 * formatDurationUs — prints whole microseconds (µs) as the shortest of
 * `<n>h`, `<n>m`, `<n>s` or `<n>ms` that is exact: 2_000_000 → `2s`,
 * 1_500_000 → `1.5s`, 250_000 → `250ms`, 200 → `0.2ms`, 0 → `0ms`. Values of
 * a minute or more that are not whole minutes or hours print in seconds.
 */
export function formatDurationUs(us: number): string {
  if (us >= 3_600_000_000 && us % 3_600_000_000 === 0) return `${us / 3_600_000_000}h`;
  if (us >= 60_000_000 && us % 60_000_000 === 0) return `${us / 60_000_000}m`;
  if (us >= 1_000_000) return `${decimal(us, 1_000_000)}s`;
  return `${decimal(us, 1000)}ms`;
}

/** formatDurationMs — `formatDurationUs` for whole or fractional milliseconds (ms). */
export function formatDurationMs(ms: number): string {
  return formatDurationUs(Math.round(ms * 1000));
}

/** `value / divisor` written exactly, trailing zeros of the fraction trimmed. */
function decimal(value: number, divisor: number): string {
  const whole = Math.floor(value / divisor);
  const rest = value - whole * divisor;
  if (rest === 0) return String(whole);
  const width = String(divisor).length - 1;
  return `${whole}.${String(rest).padStart(width, '0').replace(/0+$/, '')}`;
}
