import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { exactShares, waterFill } from './water-fill.js';

describe('waterFill', () => {
  const cases: readonly [string, readonly [number, number][], number, readonly number[]][] = [
    // name, [demand, weight] per claim, total, shares
    [
      'all demands met, the rest undivided',
      [
        [10, 1],
        [20, 1],
      ],
      100,
      [10, 20],
    ],
    [
      'equal split when everyone wants more',
      [
        [100, 1],
        [100, 1],
        [100, 1],
      ],
      90,
      [30, 30, 30],
    ],
    [
      'a small demand is met, the big ones share the rest',
      [
        [10, 1],
        [100, 1],
        [100, 1],
      ],
      90,
      [10, 40, 40],
    ],
    [
      'weights divide the level',
      [
        [1000, 1],
        [1000, 3],
      ],
      100,
      [25, 75],
    ],
    [
      'a heavy claimant met below its weighted level frees the rest',
      [
        [10, 5],
        [1000, 1],
      ],
      100,
      [10, 90],
    ],
    [
      'rounds down; what rounding leaves goes to those served later',
      [
        [100, 1],
        [100, 1],
        [100, 1],
      ],
      100,
      [33, 33, 34],
    ],
    [
      'zero and negative demands get nothing',
      [
        [0, 1],
        [-5, 1],
        [50, 1],
      ],
      20,
      [0, 0, 20],
    ],
    [
      'a weight of 0 counts as 1',
      [
        [100, 0],
        [100, 1],
      ],
      10,
      [5, 5],
    ],
    ['nothing to divide', [[10, 1]], 0, [0]],
    ['no claims', [], 10, []],
  ];
  it.each(cases)('%s', (_name, claims, total, shares) => {
    expect(
      waterFill(
        claims.map(([demand, weight]) => ({ demand, weight })),
        total,
      ),
    ).toEqual(shares);
  });

  it.each<[string, readonly [number, number][], number, readonly number[]]>([
    [
      'an even split keeps its fractions',
      [
        [100, 1],
        [100, 1],
        [100, 1],
      ],
      100,
      [100 / 3, 100 / 3, 100 / 3],
    ],
    [
      'weights divide the level exactly',
      [
        [1000, 1],
        [1000, 3],
        [1, 1],
      ],
      10,
      [2.25, 6.75, 1],
    ],
  ])('without rounding (exactShares): %s', (_name, claims, total, shares) => {
    const exact = waterFill(
      claims.map(([demand, weight]) => ({ demand, weight })),
      total,
      exactShares,
    );
    exact.forEach((share, i) => expect(share).toBeCloseTo(shares[i] ?? NaN, 12));
  });

  it('is max-min fair: never over demand or total, and whoever gets less than asked gets at least every other share per weight (less rounding)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ demand: fc.integer({ min: 0, max: 10_000 }), weight: fc.integer({ min: 1, max: 10 }) }), { maxLength: 30 }),
        fc.integer({ min: 0, max: 100_000 }),
        (claims, total) => {
          const shares = waterFill(claims, total);
          expect(shares.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(total);
          claims.forEach((c, i) => {
            const share = shares[i] as number;
            expect(share).toBeGreaterThanOrEqual(0);
            expect(share).toBeLessThanOrEqual(c.demand);
            if (share >= c.demand) return;
            // Short of its demand: no one else holds more per unit of weight (one token of rounding each).
            claims.forEach((d, j) => expect((shares[j] as number) / d.weight).toBeLessThanOrEqual((share + 1) / c.weight + 1));
          });
          // Work-conserving: short claimants exist only when (almost) everything is divided.
          const short = claims.filter((c, i) => (shares[i] as number) < c.demand).length;
          if (short > 0) expect(total - shares.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(claims.length);
        },
      ),
      { seed: propertySeed('water-fill.test.ts') },
    );
  });
});
