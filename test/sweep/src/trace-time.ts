/**
 * Times as traces and access logs write them, read into whole microseconds.
 *
 * Guarantees: a decimal is read digit by digit, never through a float
 * product, so every time a trace can hold (up to TRACE_TIME_MS_MAX ms, just
 * under 2^53 µs) comes out as the exact integer number of µs its text
 * says, digits past the µs rounded half up (`1764662400123.4565` ms →
 * 1764662400123457 µs). A JSON number below 2^43 ms (2^33 s) is read
 * through its shortest round-trip text (`String(x)`), which gives back the
 * decimal as written to the µs (the doubles there are closer than 1 µs
 * apart, so no two such decimals share one); a larger one, from its own
 * digits in the line (`jsonNumberUs`). An ISO 8601 date needs its zone (`Z`, `±hh:mm`
 * or `±hhmm`) and is converted with integer day arithmetic, no Date and no
 * clock. Each function returns null for text that is not its form; range
 * checks are the caller's, who names the line and field.
 */

/** TimeUnit — what a number of a numeric time field counts: seconds, milliseconds or microseconds since the epoch (or the trace's start). */
export type TimeUnit = 's' | 'ms' | 'us';
/** TIME_UNITS — the units `--trace-field time=PATH:UNIT` accepts. */
export const TIME_UNITS: readonly TimeUnit[] = ['s', 'ms', 'us'];

/** Digits of a unit past the µs: how far its decimal point moves to reach µs. */
const DECIMALS_TO_US = new Map<TimeUnit, number>([
  ['s', 6],
  ['ms', 3],
  ['us', 0],
]);
/** Below these, a double holds every µs of its unit (its spacing is under 1 µs); past them, a JSON number is read from its text. */
const DOUBLE_EXACT_BELOW = new Map<TimeUnit, number>([
  ['s', 2 ** 33],
  ['ms', 2 ** 43],
  ['us', 2 ** 53],
]);
/** DECIMAL — digits, and maybe a point and more digits: no sign, no exponent, no space. */
const DECIMAL = /^(\d+)(?:\.(\d+))?$/;
/** ISO_DATE — an ISO 8601 / RFC 3339 date-time with its zone: date, T (t or a space), time, a fraction after . or , and Z or an offset. */
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;
const SECONDS_PER_DAY = 86_400;
const US_PER_SECOND = 1_000_000;

/**
 * decimalUs — the decimal text `digits[.digits]` counting `unit`s, as whole
 * µs (half up), or null for any other text (signs, exponents, spaces). A
 * text of more than 2^53 µs comes out inexact but still larger than any
 * limit below 2^53, so range checks stay right.
 */
export function decimalUs(text: string, unit: TimeUnit): number | null {
  const match = DECIMAL.exec(text);
  if (match === null) return null;
  const shift = DECIMALS_TO_US.get(unit) ?? 0;
  const fraction = match[2] ?? '';
  const whole = Number(`${match[1] ?? ''}${fraction.slice(0, shift).padEnd(shift, '0')}`);
  return whole + ((fraction[shift] ?? '0') >= '5' ? 1 : 0);
}

/** numberUs — a JSON number counting `unit`s as whole µs (half up), or null when it is negative or not finite. */
export function numberUs(value: number, unit: TimeUnit): number | null {
  if (!Number.isFinite(value) || value < 0) return null;
  const text = String(value);
  // Exponent forms: below 1e-6 (less than half a µs of any unit but seconds, which
  // round the same either way) or from 1e21 on (far past every limit).
  if (text.includes('e')) return value < 1 ? Math.round(value * 10 ** (DECIMALS_TO_US.get(unit) ?? 0)) : Number.POSITIVE_INFINITY;
  return decimalUs(text, unit);
}

/**
 * jsonNumberUs — a JSON number counting `unit`s as whole µs (half up): from
 * the double when it holds every µs, else from `sourceText()`, the number's
 * digits in the line (json-source.ts); null when it is negative or not finite.
 */
export function jsonNumberUs(value: number, unit: TimeUnit, sourceText: () => string | undefined): number | null {
  if (!Number.isFinite(value) || value < 0) return null;
  if (value < (DOUBLE_EXACT_BELOW.get(unit) ?? 0)) return numberUs(value, unit);
  const text = sourceText();
  return (text === undefined ? null : decimalUs(text, unit)) ?? numberUs(value, unit);
}

/**
 * isoDateUs — an ISO 8601 / RFC 3339 date-time with its zone, like
 * `2025-12-02T08:00:00.123Z` or `2025-12-02T09:00:00.123456+01:00`, as µs
 * since the Unix epoch (fractions past the µs rounded half up); null for
 * any other text, an impossible date (Feb 30, hour 24, second 60) or a
 * date before the epoch.
 */
export function isoDateUs(text: string): number | null {
  const m = ISO_DATE.exec(text);
  if (m === null) return null;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetSeconds = 0;
  if (m[8] === undefined) {
    const [offsetHours, offsetMinutes] = [Number(m[10]), Number(m[11])];
    if (offsetHours > 23 || offsetMinutes > 59) return null;
    offsetSeconds = (m[9] === '-' ? -1 : 1) * (offsetHours * 3600 + offsetMinutes * 60);
  }
  const seconds = daysFromCivil(year, month, day) * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second - offsetSeconds;
  const us = seconds * US_PER_SECOND + (decimalUs(`0.${m[7] ?? '0'}`, 's') ?? 0);
  return us < 0 ? null : us;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** daysFromCivil — days from 1970-01-01 to the proleptic Gregorian date (H. Hinnant's algorithm, integers only). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
