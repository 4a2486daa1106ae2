/**
 * LeaseTable keeps the soonest expiry exact as leases open, extend, end
 * and lapse, so the coordinator wakes exactly when a lease may lapse.
 */
import { describe, expect, it } from 'vitest';
import { LeaseTable } from './lease-table.js';
import { SECRET } from './pool.fixtures.js';

describe('LeaseTable soonest expiry', () => {
  it('follows opens, extensions of the soonest lease, removals and reclaims', () => {
    const table = new LeaseTable('e-');
    expect(table.earliestExpiryUs()).toBe(Infinity);
    const a = table.open('a', SECRET, 1, 1_000, 'anon');
    const b = table.open('b', SECRET, 1, 2_000, 'anon');
    table.open('c', SECRET, 1, 3_000, 'anon');
    expect(table.earliestExpiryUs()).toBe(1_000);
    table.extend(b, 1_500); // never shortens
    expect(b.expiresAtUs).toBe(2_000);
    table.extend(a, 2_500); // the soonest moves on to b
    expect(table.earliestExpiryUs()).toBe(2_000);
    table.remove(b);
    expect(table.earliestExpiryUs()).toBe(2_500);
    expect(table.reclaimExpired(2_499)).toEqual([]);
    expect(table.reclaimExpired(2_500)).toEqual(['a']);
    expect(table.earliestExpiryUs()).toBe(3_000);
    expect(table.reclaimExpired(3_000)).toEqual(['c']);
    expect(table.earliestExpiryUs()).toBe(Infinity);
    expect(table.boundTokensSum).toBe(0);
  });
});

describe('LeaseTable weight sums', () => {
  it('sums the weights of all live leases, and of those whose agents report demand', () => {
    const table = new LeaseTable('w-');
    const a = table.open('a', SECRET, 1, 1_000, 'anon');
    const b = table.open('b', SECRET, 1, 1_000, 'anon');
    table.setWeight(a, 3);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([4, 0]);
    table.setDemand(a, 10);
    expect(table.demandingWeightsSum).toBe(3);
    table.setWeight(a, 5); // a weight changed while demanding counts at once
    table.setDemand(b, 2);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([6, 6]);
    table.setDemand(a, 0); // gone idle: its lease still weighs in the whole sum only
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([6, 1]);
    table.setDemand(a, 7);
    table.remove(a);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([1, 1]);
    expect(table.reclaimExpired(1_000)).toEqual(['b']);
    expect([table.weightsSum, table.demandingWeightsSum]).toEqual([0, 0]);
  });
});
