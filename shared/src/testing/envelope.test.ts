/**
 * The envelope checker must find a violation when there is one (it is what
 * every test of the promise relies on), agree with a brute-force check, and
 * give the same answer one admission at a time as over a whole log.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { makeRate } from '../core/rate.js';
import { checkEnvelope, EnvelopeWatch, worstWindowRatio, type Admission } from './envelope.js';
import { propertySeed } from './seed.js';

const rate = makeRate(2, 1000); // 2 tokens/s: 1 token per 500 000 µs

describe('checkEnvelope', () => {
  const cases: Array<[string, Admission[], boolean]> = [
    ['nothing admitted', [], true],
    ['a full burst', [{ tUs: 0, cost: 3 }], true],
    [
      'a burst one over capacity',
      [
        { tUs: 0, cost: 2 },
        { tUs: 0, cost: 2 },
      ],
      false,
    ],
    [
      'the burst, then refill exactly on time',
      [
        { tUs: 0, cost: 3 },
        { tUs: 500_000, cost: 1 },
      ],
      true,
    ],
    [
      'the burst, then refill 1 µs early',
      [
        { tUs: 0, cost: 3 },
        { tUs: 499_999, cost: 1 },
      ],
      false,
    ],
    [
      'a late window over the envelope',
      [
        { tUs: 0, cost: 1 },
        { tUs: 10_000_000, cost: 3 },
        { tUs: 10_400_000, cost: 1 },
      ],
      false,
    ],
  ];
  it.each(cases)('%s', (_name, admissions, ok) => {
    expect(checkEnvelope(admissions, 3, rate).ok).toBe(ok);
  });

  it('reports the worst window and its excess exactly', () => {
    const report = checkEnvelope(
      [
        { tUs: 100, cost: 3 },
        { tUs: 250_100, cost: 2 },
      ],
      3,
      rate,
    );
    expect(report.ok).toBe(false);
    expect(report.worstWindow).toEqual({ fromUs: 100, toUs: 250_100, admittedTokens: 5 });
    expect(report.worstExcessTokens).toBeCloseTo(5 - (3 + 0.5), 9);
  });

  it('agrees with the brute-force check over every window (property)', () => {
    const seed = propertySeed('src/testing/envelope.test.ts');
    const admission = fc.record({ tUs: fc.integer({ min: 0, max: 3_000_000 }), cost: fc.integer({ min: 1, max: 4 }) });
    fc.assert(
      fc.property(fc.array(admission, { maxLength: 40 }), fc.integer({ min: 1, max: 8 }), (admissions, capacity) => {
        const sorted = [...admissions].sort((a, b) => a.tUs - b.tUs);
        let brute = true;
        for (let i = 0; i < sorted.length; i += 1) {
          let sum = 0n;
          for (let j = i; j < sorted.length; j += 1) {
            sum += BigInt((sorted[j] as Admission).cost);
            const spanUs = BigInt((sorted[j] as Admission).tUs - (sorted[i] as Admission).tUs);
            if (sum * 1_000_000n > BigInt(capacity) * 1_000_000n + 2n * spanUs) brute = false;
          }
        }
        expect(checkEnvelope(admissions, capacity, rate).ok).toBe(brute);
      }),
      { seed, numRuns: 500 },
    );
  });
});

describe('EnvelopeWatch', () => {
  it('refuses an admission earlier than the one before', () => {
    const watch = new EnvelopeWatch(3, rate);
    watch.admit(10, 1);
    expect(() => watch.admit(9, 1)).toThrow(/out of order/);
  });

  it('returns after each admission the worst excess of the windows ending there, as brute force finds it (property)', () => {
    const seed = propertySeed('src/testing/envelope.test.ts');
    const periodUs = 500_000n; // rate: 1 token per 500 000 µs
    const admission = fc.record({ tUs: fc.integer({ min: 0, max: 3_000_000 }), cost: fc.integer({ min: 1, max: 4 }) });
    fc.assert(
      fc.property(fc.array(admission, { maxLength: 30 }), fc.integer({ min: 1, max: 8 }), (raw, capacity) => {
        const admissions = [...raw].sort((a, b) => a.tUs - b.tUs);
        const watch = new EnvelopeWatch(capacity, makeRate(1, 500));
        admissions.forEach((a, j) => {
          // In units of tokens × 500 000 µs: Σ·u − (B·u + T).
          let worst: bigint | null = null;
          let sum = 0n;
          for (let i = j; i >= 0; i -= 1) {
            sum += BigInt((admissions[i] as Admission).cost);
            const excess = sum * periodUs - (BigInt(capacity) * periodUs + BigInt(a.tUs - (admissions[i] as Admission).tUs));
            if (worst === null || excess > worst) worst = excess;
          }
          expect(watch.admit(a.tUs, a.cost)).toBe(Number(worst) / Number(periodUs));
        });
      }),
      { seed, numRuns: 200 },
    );
  });
});

describe('worstWindowRatio', () => {
  it.each<[string, Admission[], number]>([
    ['one full burst uses the whole envelope', [{ tUs: 0, cost: 3 }], 1],
    [
      'half a burst',
      [
        { tUs: 0, cost: 1 },
        { tUs: 0, cost: 0.5 },
      ],
      0.5,
    ],
    ['a burst one over capacity', [{ tUs: 0, cost: 4 }], 4 / 3],
    [
      'burst then refill on time',
      [
        { tUs: 0, cost: 3 },
        { tUs: 500_000, cost: 1 },
      ],
      1,
    ],
  ])('%s', (_name, admissions, ratio) => {
    expect(worstWindowRatio(admissions, 3, rate)).toBeCloseTo(ratio, 6);
  });
});
