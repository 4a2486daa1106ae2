/** The operator CLI's views: pages merged by name across coordinators, bars, and text. */
import { describe, expect, it } from 'vitest';
import type { PoolList, PoolSummary } from '@tokenlease/shared';
import { bar, formatPools, formatReload, mergePages } from './operator-view.js';

const summary = (pool: string): PoolSummary => ({
  pool,
  kind: 'configured',
  capacityTokens: 10,
  allowanceTokens: 0,
  refillTokens: 1,
  refillPeriodMs: 1000,
  leaseTtlMs: 1000,
  leaseMode: 'chunk',
  levelTokens: 5,
  leasedTokens: 3,
  leases: 1,
  waiting: 0,
  quietMs: 0,
  epoch: 1,
  shadow: false,
});
const page = (coordinator: string, pools: string[], next: string | null): PoolList => ({
  v: 2,
  kind: 'pools',
  coordinator,
  pools: pools.map(summary),
  next,
});

describe('mergePages', () => {
  it('keeps what is complete up to the smallest cursor of the coordinators that have more', () => {
    const merged = mergePages([page('c1', ['a', 'c', 'e'], 'e'), page('c2', ['b', 'd', 'f'], null), page('c3', ['g'], 'g')]);
    expect(merged.next).toBe('e');
    expect(merged.pools.map((p) => `${p.pool}@${p.coordinator}`)).toEqual(['a@c1', 'b@c2', 'c@c1', 'd@c2', 'e@c1']);
  });

  it('is complete when no coordinator has more', () => {
    const merged = mergePages([page('c1', ['b'], null), page('c2', ['a'], null)]);
    expect(merged).toMatchObject({ next: undefined });
    expect(merged.pools.map((p) => p.pool)).toEqual(['a', 'b']);
  });
});

describe('views', () => {
  it.each<[number, number, number, string]>([
    [5, 3, 10, '[#####===..]'],
    [0, 0, 10, '[..........]'],
    [20, 10, 10, '[#######===]'],
  ])('bar(%i, %i, %i)', (level, leased, capacity, want) => expect(bar(level, leased, capacity, 10)).toBe(want));

  it('shows the calls agents reported, where coordinators tell them', () => {
    const told = { ...summary('api'), coordinator: 'c1', calls: { admitted: 120, denied: 4_000, shadowDenied: 0 } };
    const older = { ...summary('old'), coordinator: 'c2' };
    expect(formatPools([told, older])).toMatch(/ REFILL +ADMITTED +DENIED\napi .* 1\/1000ms +120 +4000\nold .* 1\/1000ms +- +-$/);
    const shadow = { ...told, pool: 'dry', calls: { admitted: 9, denied: 0, shadowDenied: 31 } };
    expect(formatPools([told, shadow])).toMatch(/ ADMITTED +DENIED +SHADOW-DENIED\napi .* 120 +4000 +0\ndry .* 9 +0 +31$/);
  });

  it('prints a table and reload outcomes', () => {
    expect(formatPools([{ ...summary('api'), coordinator: 'c1' }])).toMatch(
      /^POOL +KIND +COORDINATOR .*\napi +configured +c1 +10 +5 +3 +1 +0 +1\/1000ms$/,
    );
    expect(
      formatReload([
        { v: 2, kind: 'reload', coordinator: 'c1', outcome: 'applied', message: 'applied x', added: ['b'], removed: [], changed: ['a'] },
      ]),
    ).toBe('c1: applied (added b; changed a): applied x');
    const window = { ...summary('search'), windowMs: 60_000, coolingTokens: 4, coordinator: 'c1' };
    expect(formatPools([{ ...summary('api'), coordinator: 'c1' }, window])).toMatch(
      /^POOL +KIND .* REFILL +COOLING\napi +configured +c1 +10 +5 +3 +1 +0 +1\/1000ms +-\nsearch +configured +c1 +10 +5 +3 +1 +0 +window 60000ms +4$/,
    );
  });
});
