import fc from 'fast-check';
import { thrown } from '../testing/thrown.js';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '../testing/seed.js';
import { checkEnvelope, type Admission } from '../testing/envelope.js';
import { TokenleaseError } from '../errors.js';
import { ExactBucket, type TakeResult } from './bucket.js';
import { makeRate, parseRate, type Rate } from './rate.js';

const SECOND_US = 1_000_000;
const ALLOW: TakeResult = { ok: true };
const NEVER_FITS: TakeResult = { ok: false, reason: 'never-fits' };
const wait = (retryAfterUs: number): TakeResult => ({ ok: false, reason: 'insufficient', retryAfterUs });

describe('ExactBucket reference trace (capacity 3, 2 tokens/s, starts full)', () => {
  // t in µs, cost, expected result, whole tokens available right after.
  const trace: ReadonlyArray<readonly [number, number, TakeResult, number]> = [
    [0, 1, ALLOW, 2],
    [0, 1, ALLOW, 1],
    [0, 1, ALLOW, 0],
    [0, 1, wait(500_000), 0],
    [250_000, 1, wait(250_000), 0],
    [500_000, 1, ALLOW, 0],
    [1_500_000, 2, ALLOW, 0],
    [100 * SECOND_US, 1, ALLOW, 2],
    [100 * SECOND_US, 1, ALLOW, 1],
    [100 * SECOND_US, 1, ALLOW, 0],
    [100 * SECOND_US, 1, wait(500_000), 0],
    [200 * SECOND_US, 4, NEVER_FITS, 3],
    [200 * SECOND_US, 3, ALLOW, 0],
  ];

  it('admits and refuses exactly as the table says', () => {
    const bucket = new ExactBucket(3, parseRate('2/s'), 0);
    trace.forEach(([tUs, cost, expected, availableAfter], step) => {
      expect({ step, result: bucket.take(cost, tUs) }).toEqual({ step, result: expected });
      expect({ step, available: bucket.availableTokens(tUs) }).toEqual({ step, available: availableAfter });
    });
  });

  it('retryAfterUs is the exact earliest instant that admits', () => {
    const bucket = new ExactBucket(3, parseRate('2/s'), 0);
    expect(bucket.take(3, 0)).toEqual(ALLOW);
    const refused = bucket.take(1, 250_000);
    expect(refused).toEqual(wait(250_000));
    expect(bucket.take(1, 499_999)).toEqual(wait(1));
    expect(bucket.take(1, 500_000)).toEqual(ALLOW);
  });

  it('retryAfterUs says the same wait without spending, 0 when the tokens are there, null when they never fit', () => {
    const bucket = new ExactBucket(3, parseRate('2/s'), 0);
    expect(bucket.retryAfterUs(3, 0)).toBe(0);
    expect(bucket.retryAfterUs(4, 0)).toBeNull();
    expect(bucket.take(3, 0)).toEqual(ALLOW);
    expect(bucket.retryAfterUs(1, 250_000)).toBe(250_000);
    expect(bucket.retryAfterUs(2, 250_000)).toBe(750_000);
    expect(bucket.take(1, 250_000)).toEqual(wait(250_000));
    expect(bucket.retryAfterUs(1, 500_000)).toBe(0);
    expect(bucket.availableTokens(500_000)).toBe(1);
  });

  it.each([
    // rate, capacity, cost, retryAfterUs from empty at t=0
    ['3/s', 5, 1, 333_334],
    ['3/s', 5, 2, 666_667],
    ['500/s', 10, 10, 20_000],
    ['1/d', 1, 1, 86_400 * SECOND_US],
    ['7/3ms', 7, 7, 3000],
  ])('rate %s capacity %i: cost %i waits %i µs, rounded up', (rate, capacity, cost, retryAfterUs) => {
    const bucket = new ExactBucket(capacity, parseRate(rate), 0);
    expect(bucket.take(capacity, 0)).toEqual(ALLOW);
    expect(bucket.take(cost, 0)).toEqual(wait(retryAfterUs));
    expect(bucket.take(cost, retryAfterUs - 1)).toMatchObject({ ok: false, reason: 'insufficient' });
    expect(bucket.take(cost, retryAfterUs)).toEqual(ALLOW);
  });
});

describe('ExactBucket rules', () => {
  it.each([
    ['insufficient', 2, 5],
    ['never-fits', 2, 11],
  ])('a %s refusal spends nothing', (_reason, level, cost) => {
    const bucket = new ExactBucket(10, parseRate('1/h'), 0);
    expect(bucket.take(10 - level, 0)).toEqual(ALLOW);
    expect(bucket.take(cost, 7)).toMatchObject({ ok: false });
    expect(bucket.availableTokens(7)).toBe(level);
    expect(bucket.take(level, 7)).toEqual(ALLOW);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])('rejects cost %d with invalid-argument', (cost) => {
    const bucket = new ExactBucket(3, parseRate('2/s'), 0);
    const error = thrown(TokenleaseError, () => bucket.take(cost, 0));
    expect(error.code).toBe('invalid-argument');
    expect(error.field).toBe('cost');
    expect(bucket.availableTokens(0)).toBe(3);
  });

  it.each([-1, 1.5, Number.NaN, 2 ** 53])('rejects time %d with out-of-range', (nowUs) => {
    const bucket = new ExactBucket(3, parseRate('2/s'), 0);
    expect(thrown(TokenleaseError, () => bucket.take(1, nowUs)).code).toBe('out-of-range');
    expect(thrown(TokenleaseError, () => bucket.availableTokens(nowUs)).code).toBe('out-of-range');
    expect(thrown(TokenleaseError, () => new ExactBucket(3, parseRate('2/s'), nowUs)).code).toBe('out-of-range');
    expect(bucket.availableTokens(0)).toBe(3);
  });

  it('rejects a capacity the scale refuses', () => {
    expect(thrown(TokenleaseError, () => new ExactBucket(0, parseRate('2/s'), 0)).code).toBe('out-of-range');
  });

  it('a clock reading earlier than the previous one mints nothing', () => {
    const bucket = new ExactBucket(3, parseRate('2/s'), 0);
    expect(bucket.take(3, SECOND_US)).toEqual(ALLOW);
    expect(bucket.availableTokens(500_000)).toBe(0);
    expect(bucket.take(1, 0)).toEqual(wait(500_000));
    expect(bucket.availableTokens(SECOND_US)).toBe(0);
    // Refill counts from the latest reading (1 s), not from the earlier ones.
    expect(bucket.availableTokens(1_499_999)).toBe(0);
    expect(bucket.availableTokens(1_500_000)).toBe(1);
  });

  it('a full bucket banks no credit over a long idle gap', () => {
    const bucket = new ExactBucket(2, parseRate('1000/ms'), 5);
    expect(bucket.availableTokens(Number.MAX_SAFE_INTEGER)).toBe(2);
    expect(bucket.take(2, Number.MAX_SAFE_INTEGER)).toEqual(ALLOW);
    expect(bucket.take(1, Number.MAX_SAFE_INTEGER)).toEqual(wait(1));
  });
});

/** Independent model: the level is the exact fraction levelNum / periodUs tokens. */
class RationalBucket {
  private readonly capacity: bigint;
  private readonly periodUs: bigint;
  private readonly tokens: bigint;
  private levelNum: bigint;
  private lastUs: bigint;

  constructor(capacity: number, rate: Rate, nowUs: number) {
    this.capacity = BigInt(capacity);
    this.periodUs = BigInt(rate.periodMs) * 1000n;
    this.tokens = BigInt(rate.tokens);
    this.levelNum = this.capacity * this.periodUs;
    this.lastUs = BigInt(nowUs);
  }

  take(cost: number, nowUs: number): TakeResult {
    this.advance(nowUs);
    const c = BigInt(cost);
    if (c > this.capacity) return NEVER_FITS;
    const need = c * this.periodUs;
    if (need > this.levelNum) {
      const missing = need - this.levelNum;
      return wait(Number((missing + this.tokens - 1n) / this.tokens));
    }
    this.levelNum -= need;
    return ALLOW;
  }

  available(nowUs: number): number {
    this.advance(nowUs);
    return Number(this.levelNum / this.periodUs);
  }

  private advance(nowUs: number): void {
    const t = BigInt(nowUs);
    if (t <= this.lastUs) return;
    const full = this.capacity * this.periodUs;
    const level = this.levelNum + this.tokens * (t - this.lastUs);
    this.levelNum = level < full ? level : full;
    this.lastUs = t;
  }
}

describe('ExactBucket properties', () => {
  const scenario = fc.integer({ min: 1, max: 1000 }).chain((capacity) =>
    fc.record({
      capacity: fc.constant(capacity),
      tokens: fc.integer({ min: 1, max: 1000 }),
      periodMs: fc.integer({ min: 1, max: 5000 }),
      startUs: fc.integer({ min: 0, max: 1_000_000_000 }),
      steps: fc.array(
        fc.record({
          // 'retry' / 'retry-1': step to exactly retryAfterUs (or 1 µs before) after an insufficient refusal.
          dtUs: fc.oneof(
            fc.integer({ min: 0, max: 2_000_000 }),
            fc.integer({ min: 0, max: 2000 }),
            fc.constantFrom(0, 'retry' as const, 'retry-1' as const),
          ),
          cost: fc.integer({ min: 1, max: capacity + 2 }),
        }),
        { maxLength: 200, size: 'max' },
      ),
    }),
  );

  it('admissions stay inside B + r·Δt over every window and match an exact rational model', { timeout: 30_000 }, () => {
    fc.assert(
      fc.property(scenario, ({ capacity, tokens, periodMs, startUs, steps }) => {
        const rate = makeRate(tokens, periodMs);
        const bucket = new ExactBucket(capacity, rate, startUs);
        const model = new RationalBucket(capacity, rate, startUs);
        const admitted: Admission[] = [];
        let tUs = startUs;
        let retryAfterUs = 0;
        steps.forEach(({ dtUs, cost }, step) => {
          if (dtUs === 'retry') tUs += retryAfterUs;
          else if (dtUs === 'retry-1') tUs += Math.max(0, retryAfterUs - 1);
          else tUs += dtUs;
          const announced = bucket.retryAfterUs(cost, tUs);
          const got = bucket.take(cost, tUs);
          retryAfterUs = !got.ok && got.reason === 'insufficient' ? got.retryAfterUs : 0;
          expect({ step, announced }).toEqual({ step, announced: got.ok ? 0 : got.reason === 'never-fits' ? null : got.retryAfterUs });
          expect({ step, tUs, cost, got }).toEqual({ step, tUs, cost, got: model.take(cost, tUs) });
          expect({ step, available: bucket.availableTokens(tUs) }).toEqual({ step, available: model.available(tUs) });
          if (got.ok) admitted.push({ tUs, cost });
        });

        const envelope = checkEnvelope(admitted, capacity, rate);
        expect(envelope.ok, `window ${JSON.stringify(envelope.worstWindow)} over B + r·Δt by ${envelope.worstExcessTokens} tokens`).toBe(
          true,
        );
      }),
      { seed: propertySeed('src/core/bucket.test.ts'), numRuns: 300 },
    );
  });
});
