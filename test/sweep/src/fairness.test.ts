/**
 * The fairness figures of a sweep row: the weighted max-min division and
 * Jain's index over the agents that wanted more than their share.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jain, jainOverShare, weightedMaxMinShares } from './fairness.js';

describe('weightedMaxMinShares', () => {
  const cases: [string, number[], number, number[], number[]][] = [
    ['equal demands above the level', [10, 10, 10], 15, [], [5, 5, 5]],
    ['a small demand met, the rest split', [1, 10, 10], 15, [], [1, 7, 7]],
    ['everyone met', [1, 2, 3], 100, [], [1, 2, 3]],
    ['weights 1:3', [100, 100], 40, [1, 3], [10, 30]],
    ['a heavy agent met, the rest to the light one', [5, 100], 40, [3, 1], [5, 35]],
    ['zero demand gets nothing', [0, 10], 4, [], [0, 4]],
    ['nothing to divide', [5, 5], 0, [], [0, 0]],
  ];
  it.each(cases)('%s', (_name, demands, total, weights, expected) => {
    const shares = weightedMaxMinShares(demands, total, weights);
    shares.forEach((share, i) => expect(share).toBeCloseTo(expected[i] ?? 0, 9));
  });

  it('gives no one more than its demand and divides min(total, Σ demand) (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 1, max: 5 })), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 5000 }),
        (claims, total) => {
          const demands = claims.map(([d]) => d);
          const shares = weightedMaxMinShares(
            demands,
            total,
            claims.map(([, w]) => w),
          );
          shares.forEach((share, i) => expect(share).toBeLessThanOrEqual((demands[i] ?? 0) + 1e-9));
          expect(shares.reduce((a, b) => a + b, 0)).toBeCloseTo(
            Math.min(
              total,
              demands.reduce((a, b) => a + b, 0),
            ),
            6,
          );
        },
      ),
    );
  });
});

describe('jainOverShare', () => {
  const cases: [string, number[], number[], number[], number][] = [
    // Offered 100, 50, 10, 5 and 165 admitted in all: 10 and 5 are met, 75 each is the share of the other two.
    ['the saturated agents got equal amounts', [75, 75, 10, 5], [100, 80, 10, 5], [], 1],
    ['one saturated agent got twice the other', [100, 50, 10, 5], [200, 200, 10, 5], [], 0.9],
    ['a small agent short-changed does not count: it wanted less than its share', [80, 80, 1, 4], [200, 200, 10, 5], [], 1],
    ['fewer than two saturated agents: nothing to compare', [100, 10], [200, 10], [], 1],
    ['nobody saturated', [10, 20], [10, 20], [], 1],
    ['weights: 2:1 amounts for 2:1 weights are fair', [100, 50], [300, 300], [2, 1], 1],
    ['weights: equal amounts for 2:1 weights are not', [75, 75], [300, 300], [2, 1], 0.9],
  ];
  it.each(cases)('%s', (_name, admitted, offered, weights, expected) => {
    expect(jainOverShare(admitted, offered, weights)).toBeCloseTo(expected, 9);
  });

  it('is in (0, 1] and 1 whenever the agents above their share got equal amounts (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 2, maxLength: 10 }),
        fc.integer({ min: 1, max: 500 }),
        (small, level) => {
          // Agents that wanted less than the level get it all; two or more that wanted more get the level each.
          const offered = [...small.map((d) => Math.min(d, level - 1)), level * 3, level * 2];
          const admitted = offered.map((d) => Math.min(d, level));
          expect(jainOverShare(admitted, offered)).toBeCloseTo(1, 9);
          const skewed = admitted.map((a, i) => (i === admitted.length - 1 ? a / 2 : a));
          const index = jainOverShare(skewed, offered);
          expect(index > 0 && index <= 1).toBe(true);
        },
      ),
    );
  });

  it('differs from jain, which counts every agent against its share', () => {
    // The small agent got half of what it wanted: unfair to it, so jain < 1; the saturated two are even.
    expect(jain([80, 80, 5], [200, 200, 10])).toBeLessThan(0.95);
    expect(jainOverShare([80, 80, 5], [200, 200, 10])).toBe(1);
  });
});
