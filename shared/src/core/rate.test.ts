import fc from 'fast-check';
import { thrown } from '../testing/thrown.js';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '../testing/seed.js';
import { TokenleaseError } from '../errors.js';
import { RATE_PERIOD_MS_MAX, RATE_TOKENS_MAX, formatRate, makeRate, parseRate, tokensPerSecond } from './rate.js';
import { UNITS_MAX, tokenScale, waitUs, wholeTokens, type TokenScale } from './token-scale.js';

describe('parseRate', () => {
  it.each([
    ['500/s', 500, 1000],
    ['2/1000ms', 2, 1000],
    ['60/min', 60, 60_000],
    ['10/5s', 10, 5000],
    ['1/h', 1, 3_600_000],
    ['1/d', 1, 86_400_000],
    ['7/sec', 7, 1000],
    ['3/2m', 3, 120_000],
    [' 500 / s ', 500, 1000],
    ['1000000000/s', RATE_TOKENS_MAX, 1000],
  ])('%j is %i tokens per %i ms', (text, tokens, periodMs) => {
    expect(parseRate(text)).toEqual({ tokens, periodMs });
  });

  it.each([
    '',
    'abc',
    '0/s',
    '5/0s',
    '1.5/s',
    '5/yr',
    '-1/s',
    '2000000000/s',
    '500',
    '/s',
    '500/',
    '500/S',
    '2/d2',
    '1/2d',
    '99999999999999999999/s',
    '5/constructor',
    '5/tostring',
    '5/__proto__',
  ])('rejects %j with invalid-rate', (text) => {
    const error = thrown(TokenleaseError, () => parseRate(text));
    expect(error.code).toBe('invalid-rate');
  });

  it('quotes the rejected input in the message', () => {
    expect(thrown(TokenleaseError, () => parseRate('5/yr')).message).toContain('"5/yr"');
  });
});

describe('makeRate', () => {
  it('accepts the bounds', () => {
    expect(makeRate(1, 1)).toEqual({ tokens: 1, periodMs: 1 });
    expect(makeRate(RATE_TOKENS_MAX, RATE_PERIOD_MS_MAX)).toEqual({ tokens: RATE_TOKENS_MAX, periodMs: RATE_PERIOD_MS_MAX });
  });

  it.each([
    [0, 1000],
    [RATE_TOKENS_MAX + 1, 1000],
    [1.5, 1000],
    [Number.NaN, 1000],
    [1, 0],
    [1, RATE_PERIOD_MS_MAX + 1],
    [1, 0.5],
    [1, Number.POSITIVE_INFINITY],
  ])('rejects tokens %d per %d ms', (tokens, periodMs) => {
    expect(thrown(TokenleaseError, () => makeRate(tokens, periodMs)).code).toBe('invalid-rate');
  });

  it('formats and converts for display', () => {
    expect(formatRate(makeRate(500, 1000))).toBe('500/s');
    expect(formatRate(makeRate(2, 250))).toBe('2/250ms');
    expect(tokensPerSecond(makeRate(60, 60_000))).toBe(1);
  });
});

describe('tokenScale', () => {
  it('reduces by the gcd: 500/s is 2000 units per token, 1 unit per µs', () => {
    const scale = tokenScale(10, parseRate('500/s'));
    expect(scale).toMatchObject({ capacityTokens: 10, unitsPerToken: 2000, unitsPerUs: 1, capacityUnits: 20_000 });
    expect(scale.fillUs).toBe(20_000);
  });

  it.each([
    // rate, unitsPerToken, unitsPerUs
    ['3/s', 1_000_000, 3],
    ['2/s', 500_000, 1],
    ['1/d', 86_400_000_000, 1],
    ['1000000000/ms', 1, 1_000_000],
  ])('%s has %i units per token and %i per µs', (rate, unitsPerToken, unitsPerUs) => {
    expect(tokenScale(1, parseRate(rate))).toMatchObject({ unitsPerToken, unitsPerUs });
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects capacity %d with out-of-range', (capacity) => {
    const error = thrown(TokenleaseError, () => tokenScale(capacity, parseRate('500/s')));
    expect(error.code).toBe('out-of-range');
    expect(error.field).toBe('capacity');
  });

  it('rejects a capacity too large for the rate and names the largest that fits', () => {
    const rate = parseRate('1/d');
    const max = Number(BigInt(UNITS_MAX) / 86_400_000_000n);
    expect(tokenScale(max, rate).capacityUnits).toBeLessThanOrEqual(UNITS_MAX);
    const error = thrown(TokenleaseError, () => tokenScale(max + 1, rate));
    expect(error.code).toBe('out-of-range');
    expect(error.message).toContain(`[1, ${max}]`);
  });

  it('waitUs rounds up to whole microseconds', () => {
    const scale = tokenScale(1, parseRate('3/s'));
    expect(waitUs(scale, 0)).toBe(0);
    expect(waitUs(scale, -5)).toBe(0);
    expect(waitUs(scale, 1_000_000)).toBe(333_334);
    expect(waitUs(scale, 999_999)).toBe(333_333);
  });
});

describe('wholeTokens', () => {
  const base = tokenScale(1, makeRate(1, 1));
  const withUnits = (unitsPerToken: number): TokenScale => ({ ...base, unitsPerToken });

  it.each([
    [1, UNITS_MAX, UNITS_MAX],
    [3, UNITS_MAX, Number(BigInt(UNITS_MAX) / 3n)],
    [2000, 1999, 0],
    [2000, 2000, 1],
    [86_400_000_000, UNITS_MAX, 52_124],
    [1, 0, 0],
  ])('unitsPerToken %i, units %i → %i', (unitsPerToken, units, tokens) => {
    expect(wholeTokens(withUnits(unitsPerToken), units)).toBe(tokens);
  });

  it('is the exact floor at and around every multiple (property)', () => {
    const unitsPerToken = fc.oneof(
      fc.integer({ min: 1, max: 1000 }),
      fc.integer({ min: 1, max: 86_400_000_000 }),
      fc.integer({ min: 1, max: UNITS_MAX }),
    );
    const cases = unitsPerToken.chain((u) =>
      fc.record({
        u: fc.constant(u),
        k: fc.integer({ min: 0, max: Math.floor(UNITS_MAX / u) }),
        delta: fc.constantFrom(-1, 0, 1),
      }),
    );
    fc.assert(
      fc.property(cases, ({ u, k, delta }) => {
        const units = BigInt(k) * BigInt(u) + BigInt(delta);
        if (units < 0n || units > BigInt(UNITS_MAX)) return;
        expect(wholeTokens(withUnits(u), Number(units))).toBe(Number(units / BigInt(u)));
      }),
      { seed: propertySeed('src/core/rate.test.ts'), numRuns: 2000 },
    );
  });
});
