/** ListingBudget at fixed instants (µs): full at the start, refilled at its rate up to its burst, served while positive. */
import { describe, expect, it } from 'vitest';
import { LISTING_WORK_BURST, LISTING_WORK_PER_US, ListingBudget } from './listing-budget.js';

describe('ListingBudget', () => {
  it('serves while the balance is positive, then says how long until it is again', () => {
    const budget = new ListingBudget(1000);
    expect(budget.spend(LISTING_WORK_BURST - 1, 1000)).toBe(0);
    // One unit left: a page of any cost is still served, and the balance goes below zero.
    expect(budget.spend(5 * LISTING_WORK_PER_US * 1000, 1000)).toBe(0);
    const debtUnits = 5 * LISTING_WORK_PER_US * 1000 - 1;
    expect(budget.spend(1, 1000)).toBe(Math.ceil((debtUnits + 1) / LISTING_WORK_PER_US / 1000));
    expect(budget.spend(1, 1000 + 4_999)).toBe(1);
    expect(budget.spend(1, 1000 + 5_000)).toBe(0);
  });

  it('refills up to the burst and no further, and mints nothing when time runs backwards', () => {
    const budget = new ListingBudget(0);
    expect(budget.spend(LISTING_WORK_BURST, 0)).toBe(0);
    expect(budget.spend(1, 0)).toBe(1);
    expect(budget.spend(1, 10 ** 12)).toBe(0);
    // Full again after a long pause, not more: the burst and one unit take it to zero and below.
    expect(budget.spend(LISTING_WORK_BURST, 10 ** 12)).toBe(0);
    expect(budget.spend(1, 10 ** 12)).toBeGreaterThan(0);
    expect(budget.spend(1, 5)).toBeGreaterThan(0);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses a cost of %s', (cost) => {
    expect(() => new ListingBudget(0).spend(cost, 0)).toThrow(RangeError);
  });
});
