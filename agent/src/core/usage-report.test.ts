/**
 * Usage reports (keeper option reportMs): published between renewals while
 * a chunk lease is held and nothing is in flight, only when the balance fell.
 */
import { describe, expect, it } from 'vitest';
import { askFor, grantFor, keeperWith, only } from './lease-keeper.fixtures.js';

describe('LeaseKeeper usage reports', () => {
  it('are off by default', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 100, 0);
    keeper.onReply(first.seq, grantFor(first), 1_000);
    keeper.slot.takeAt(10, 2_000);
    expect(keeper.tick(500_000)).toEqual([]);
  });

  it('publish what is left every reportMs once it fell, with a fresh sequence number and no reply awaited', () => {
    const keeper = keeperWith({ reportMs: 100 });
    const first = askFor(keeper, 100, 0);
    keeper.onReply(first.seq, grantFor(first), 1_000);
    expect(keeper.nextDeadlineUs()).toBe(101_000);
    expect(keeper.tick(101_000)).toEqual([]); // nothing spent yet
    keeper.slot.takeAt(30, 150_000);
    const action = only(keeper.tick(201_000));
    expect(action).toMatchObject({
      type: 'publish',
      timeoutMs: 0,
      message: { op: 'report', leaseId: 'L1', tokensLeft: 70, seq: first.seq + 1 },
    });
    expect(keeper.tick(301_000)).toEqual([]); // unchanged since
    expect(keeper.stats.reports).toBe(1);
  });

  it('wait, while the keeper defers its next ask, for the end of the deferral: no deadline in the past to spin on', () => {
    const keeper = keeperWith({ reportMs: 100 });
    const first = askFor(keeper, 100, 0);
    // A partial grant: the pool is short, ask again in 500 ms.
    keeper.onReply(first.seq, grantFor(first, { tokensGranted: 40, tokensHeld: 40, retryAfterMs: 500 }), 1_000);
    keeper.slot.takeAt(30, 150_000);
    expect(keeper.tick(201_000)).toEqual([]); // deferred: no report yet
    expect(keeper.nextDeadlineUs()).toBeGreaterThanOrEqual(501_000);
    // Then the report goes, the balance having fallen since the grant.
    expect(only(keeper.tick(keeper.nextDeadlineUs()))).toMatchObject({ type: 'publish', message: { op: 'report', tokensLeft: 10 } });
  });

  it('are never sent while a request is in flight, nor for a rate lease', () => {
    const keeper = keeperWith({ reportMs: 10, refreshMs: 1_000 });
    const first = askFor(keeper, 100, 0);
    keeper.slot.takeAt(1, 50_000);
    expect(keeper.tick(50_000)).toEqual([]);
    keeper.onReply(first.seq, grantFor(first, { rate: { tokensPerPeriod: 10, periodMs: 1000, capTokens: 100 } }), 60_000);
    keeper.slot.takeAt(50, 61_000);
    expect(keeper.tick(200_000)).toEqual([]);
  });
});
