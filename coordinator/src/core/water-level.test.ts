/**
 * WaterLevel: exact shares up to EXACT_LEASES_MAX leases; above, shares
 * from a water level recomputed every n / RECOMPUTE_DIVISOR renewals stay
 * close to the exact ones.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { LeaseTable } from './lease-table.js';
import { fairShareOf } from './rate-lease.js';
import { EXACT_LEASES_MAX, WaterLevel } from './water-level.js';
import { SECRET } from './pool.fixtures.js';

function table(n: number, demandOf: (i: number) => number, weightOf: (i: number) => number = () => 1): LeaseTable {
  const t = new LeaseTable('t-');
  for (let i = 0; i < n; i += 1) {
    const r = t.open(`a${i}`, SECRET, 1, 1_000_000, 'anon');
    t.setDemand(r, demandOf(i));
    t.setWeight(r, weightOf(i));
  }
  return t;
}

describe('WaterLevel', () => {
  it('is exact up to EXACT_LEASES_MAX leases', () => {
    const t = table(
      EXACT_LEASES_MAX,
      (i) => 10 + 7 * i,
      (i) => 1 + (i % 3),
    );
    const w = new WaterLevel();
    for (const r of t.all()) expect(w.shareOf(t, r, 5000, 1000)).toBe(fairShareOf([...t.all()], r, 5000, 1000));
  });

  it('stays within one token per unit of weight of the exact share for a large fleet', () => {
    const t = table(
      5000,
      (i) => (i % 10) * 3,
      (i) => 1 + (i % 2),
    );
    const w = new WaterLevel();
    const all = [...t.all()];
    for (const r of all.slice(0, 300)) {
      const exact = fairShareOf(all, r, 40_000, 1000);
      expect(Math.abs(w.shareOf(t, r, 40_000, 1000) - exact)).toBeLessThanOrEqual(r.weight + 1);
    }
  });

  it('gives every lease its claim and its part of what the claims leave when the total covers them all', () => {
    // 200 claims of ⌈5 · 19/20⌉ = 5 leave 9,000 of 10,000: 45 per lease, whatever the fleet's size.
    for (const n of [EXACT_LEASES_MAX, 200]) {
      const t = table(n, () => 5);
      const w = new WaterLevel();
      for (const r of t.all()) expect(w.shareOf(t, r, 50 * n, 1000)).toBe(50);
    }
  });

  it('stays within one token per unit of weight of the exact share for any fleet, ties and idle leases included (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            demand: fc.oneof(fc.constant(0), fc.constant(40), fc.integer({ min: 1, max: 5000 })),
            weight: fc.integer({ min: 1, max: 5 }),
          }),
          {
            minLength: EXACT_LEASES_MAX + 1,
            maxLength: 400,
          },
        ),
        fc.integer({ min: 1, max: 200_000 }),
        (fleet, assignable) => {
          const t = table(
            fleet.length,
            (i) => fleet[i]?.demand ?? 0,
            (i) => fleet[i]?.weight ?? 1,
          );
          const w = new WaterLevel();
          const all = [...t.all()];
          // The first call computes the level; the next n/16 - 1 reuse it.
          for (const r of all.slice(0, Math.floor(all.length / 16))) {
            const exact = fairShareOf(all, r, assignable, 1000);
            expect(Math.abs(w.shareOf(t, r, assignable, 1000) - exact)).toBeLessThanOrEqual(r.weight + 1);
          }
        },
      ),
      { seed: propertySeed('water-level.test.ts'), numRuns: 200, endOnFailure: true },
    );
  });
});
