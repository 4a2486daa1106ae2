import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from './seed.js';
import { checkWindows, WindowWatch } from './window.js';

describe('checkWindows', () => {
  it('counts admissions less than W apart in one window, and W apart in two', () => {
    expect(
      checkWindows(
        [
          { tUs: 0, cost: 3 },
          { tUs: 999, cost: 2 },
        ],
        5,
        1000,
      ).ok,
    ).toBe(true);
    expect(
      checkWindows(
        [
          { tUs: 0, cost: 3 },
          { tUs: 999, cost: 3 },
        ],
        5,
        1000,
      ),
    ).toMatchObject({ ok: false, fullestTokens: 6, violations: 1 });
    expect(
      checkWindows(
        [
          { tUs: 0, cost: 5 },
          { tUs: 1000, cost: 5 },
        ],
        5,
        1000,
      ),
    ).toMatchObject({ ok: true, fullestTokens: 5 });
  });

  it('sorts its input and names the fullest window', () => {
    const report = checkWindows(
      [
        { tUs: 500, cost: 1 },
        { tUs: 100, cost: 2 },
        { tUs: 5000, cost: 1 },
      ],
      10,
      1000,
    );
    expect(report.fullest).toEqual({ fromUs: 100, toUs: 500, admittedTokens: 3 });
    expect(report.admittedTokens).toBe(4);
  });

  it('refuses admissions out of order in a watch', () => {
    const watch = new WindowWatch(1, 10);
    watch.admit(5, 1);
    expect(() => watch.admit(4, 1)).toThrow(/out of order/);
  });

  it('agrees with counting every window by brute force', () => {
    const admissionsArb = fc.array(fc.record({ tUs: fc.nat(5000), cost: fc.integer({ min: 1, max: 5 }) }), { maxLength: 60 });
    fc.assert(
      fc.property(admissionsArb, fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 1, max: 40 }), (admissions, windowUs, limit) => {
        let fullest = 0;
        for (const a of admissions) {
          const held = admissions.filter((b) => b.tUs >= a.tUs && b.tUs < a.tUs + windowUs).reduce((n, b) => n + b.cost, 0);
          fullest = Math.max(fullest, held);
        }
        const report = checkWindows(admissions, limit, windowUs);
        expect(report.fullestTokens).toBe(fullest);
        expect(report.ok).toBe(fullest <= limit);
      }),
      { seed: propertySeed('src/testing/window.test.ts'), numRuns: 300 },
    );
  });
});
