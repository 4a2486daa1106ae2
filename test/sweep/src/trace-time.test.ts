/**
 * Times into whole µs: decimals read from their digits (half up past the
 * µs), JSON numbers exact over the whole range a trace may hold (read again
 * from the line past where a double holds every µs), ISO 8601 dates with a
 * zone by integer day arithmetic, agreeing with Date.parse where it reaches.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memberText } from './json-source.js';
import { decimalUs, isoDateUs, jsonNumberUs, numberUs, type TimeUnit } from './trace-time.js';
import { TRACE_TIME_US_MAX } from './trace.js';

/** decimalText — `us` µs as a decimal of `unit`s, written exactly (no float on the way). */
function decimalText(us: number, unit: TimeUnit): string {
  const digits = unit === 's' ? 6 : unit === 'ms' ? 3 : 0;
  if (digits === 0) return String(us);
  const scale = 10 ** digits;
  return `${Math.floor(us / scale)}.${String(us % scale).padStart(digits, '0')}`;
}

describe('decimalUs', () => {
  it.each<[string, TimeUnit, number | null]>([
    ['0', 'ms', 0],
    ['1.5', 'ms', 1500],
    ['1999.0004', 'ms', 1_999_000],
    ['1999.0005', 'ms', 1_999_001],
    ['1764662400.123', 's', 1_764_662_400_123_000],
    ['1764662400.1234565', 's', 1_764_662_400_123_457],
    ['5.5', 'us', 6],
    ['007', 'us', 7],
    ['-1', 'ms', null],
    ['1e3', 'ms', null],
    [' 1', 'ms', null],
    ['1.', 'ms', null],
    ['', 'ms', null],
  ])('reads %j %s as %j µs', (text, unit, us) => {
    expect(decimalUs(text, unit)).toBe(us);
  });
});

describe('numberUs and jsonNumberUs', () => {
  it('reads tiny and huge numbers, and refuses negative or infinite ones', () => {
    expect(numberUs(1e-7, 'ms')).toBe(0);
    expect(numberUs(1e21, 'ms')).toBe(Number.POSITIVE_INFINITY);
    expect(numberUs(-0.001, 'ms')).toBeNull();
    expect(jsonNumberUs(Number.NaN, 'ms', () => 'NaN')).toBeNull();
  });

  it.each<TimeUnit>(['ms', 's', 'us'])('reads every time a trace may hold in %s to the exact µs (property)', (unit) => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: TRACE_TIME_US_MAX }), (us) => {
        const line = `{"a":"}\\"t\\":1","t" : ${decimalText(us, unit)} ,"b":[1,{"t":2}]}`;
        const value = (JSON.parse(line) as { t: number }).t;
        expect(jsonNumberUs(value, unit, () => memberText(line, ['t']))).toBe(us);
      }),
    );
    // The top of the range, where a double is 2 µs apart in ms.
    const top = `{"t":${decimalText(TRACE_TIME_US_MAX - 1, unit)}}`;
    expect(jsonNumberUs((JSON.parse(top) as { t: number }).t, unit, () => memberText(top, ['t']))).toBe(TRACE_TIME_US_MAX - 1);
  });
});

describe('memberText', () => {
  it.each<[string, string[], string | undefined]>([
    ['{"a":1,"b":2}', ['b'], '2'],
    [' { "a" : 1.50 , "a" : 2.25 } ', ['a'], '2.25'],
    ['{"x":{"y":{"z":9007199254739.999}},"z":1}', ['x', 'y', 'z'], '9007199254739.999'],
    ['{"s":"{\\"t\\":5}","t":6}', ['t'], '6'],
    ['{"\\u0074":7}', ['t'], '7'],
    ['{"a-b":[1,[2]],"c":"d"}', ['a-b'], '[1,[2]]'],
    ['{"a":1}', ['b'], undefined],
    ['{"a":1}', ['a', 'b'], undefined],
  ])('finds in %s at %j: %j', (json, names, text) => {
    expect(memberText(json, names)).toBe(text);
  });
});

describe('isoDateUs', () => {
  it.each<[string, number | null]>([
    ['1970-01-01T00:00:00Z', 0],
    ['2025-12-02T08:00:00.123Z', 1_764_662_400_123_000],
    ['2025-12-02T09:00:00.123+01:00', 1_764_662_400_123_000],
    ['2025-12-02T03:30:00.123-0430', 1_764_662_400_123_000],
    ['2025-12-02 08:00:00.123456z', 1_764_662_400_123_456],
    ['2025-12-02T08:00:00.1234565Z', 1_764_662_400_123_457],
    ['2000-02-29T00:00:00Z', 951_782_400_000_000],
    ['2025-12-02T08:00:00.123', null],
    ['2023-02-29T00:00:00Z', null],
    ['1900-02-29T00:00:00Z', null],
    ['2025-04-31T00:00:00Z', null],
    ['2025-12-02T24:00:00Z', null],
    ['2025-12-31T23:59:60Z', null],
    ['1969-12-31T23:59:59Z', null],
    ['2025-12-02', null],
    ['1764662400.123', null],
  ])('reads %j as %j µs', (text, us) => {
    expect(isoDateUs(text)).toBe(us);
  });

  it('agrees with Date.parse to the ms, in any zone (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 14 * 3_600_000, max: 253_402_300_799_999 - 14 * 3_600_000 }),
        fc.integer({ min: -14 * 60, max: 14 * 60 }),
        (ms, offsetMinutes) => {
          const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, -1);
          const sign = offsetMinutes < 0 ? '-' : '+';
          const zone = `${sign}${String(Math.floor(Math.abs(offsetMinutes) / 60)).padStart(2, '0')}:${String(Math.abs(offsetMinutes) % 60).padStart(2, '0')}`;
          const text = `${local}${zone}`;
          expect(isoDateUs(text)).toBe(Date.parse(text) * 1000);
          expect(Date.parse(text)).toBe(ms);
        },
      ),
    );
  });
});
