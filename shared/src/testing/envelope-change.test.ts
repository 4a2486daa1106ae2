/** The two-regime envelope check (envelope-change.ts) on hand-made admission logs. */
import { describe, expect, it } from 'vitest';
import { makeRate } from '../core/rate.js';
import { checkAcrossChange, fasterRate } from './envelope-change.js';

const S = 1_000_000;
const before = { boundTokens: 100, rate: makeRate(100, 1000) };
const after = { boundTokens: 20, rate: makeRate(10, 1000) };

describe('checkAcrossChange', () => {
  it('holds when each class of window keeps its envelope', () => {
    const admissions = [
      { tUs: 1 * S, cost: 100 },
      { tUs: 2 * S, cost: 100 },
      { tUs: 5 * S, cost: 20 },
      { tUs: 6 * S, cost: 10 },
    ];
    const report = checkAcrossChange(admissions, 3 * S, 1 * S, before, after);
    expect(report.ok).toBe(true);
  });

  it('judges a window a TTL after the change by the new envelope', () => {
    const admissions = [{ tUs: 5 * S, cost: 21 }];
    const report = checkAcrossChange(admissions, 3 * S, 1 * S, before, after);
    expect(report.after.ok).toBe(false);
    expect(report.spanning.ok).toBe(true);
    expect(report.ok).toBe(false);
  });

  it('judges windows inside the settling time by the larger envelope only', () => {
    const report = checkAcrossChange([{ tUs: 3.5 * S, cost: 100 }], 3 * S, 1 * S, before, after);
    expect(report.ok).toBe(true);
    expect(checkAcrossChange([{ tUs: 3.5 * S, cost: 101 }], 3 * S, 1 * S, before, after).spanning.ok).toBe(false);
  });

  it('judges windows that end by the change by the old envelope', () => {
    const report = checkAcrossChange([{ tUs: 2 * S, cost: 101 }], 3 * S, 1 * S, before, { boundTokens: 500, rate: before.rate });
    expect(report.before.ok).toBe(false);
    expect(report.spanning.ok).toBe(true);
  });

  it('compares rates exactly', () => {
    expect(fasterRate(makeRate(1, 3), makeRate(333, 1000))).toEqual(makeRate(1, 3));
    expect(fasterRate(makeRate(2, 1000), makeRate(1, 1000))).toEqual(makeRate(2, 1000));
  });
});
