/**
 * LeaseKeeper, what a service sees of it: the pool's limits from the
 * grant, an unknown pool told once and marked on the slot, the expected
 * wait (`retryAfterUs`) from the round-trip, the coordinator's hint and the
 * pool's refill rather than from the keeper's own timers, `release`, and
 * when a keeper is quiet (nothing to do without an event).
 */
import type { ErrorCode, Reply } from '@tokenlease/shared';
import { describe, expect, it } from 'vitest';
import { acquireIn, askFor, grantFor, keeperWith } from './lease-keeper.fixtures.js';

function errorReply(seq: number, code: ErrorCode, retryAfterMs: number): Reply {
  return { v: 2, kind: 'error', seq, code, fault: 'peer', message: `${code} for the test`, retryAfterMs };
}

describe('LeaseKeeper for a service', () => {
  it('knows the pool only from a grant: limits, heard', () => {
    const keeper = keeperWith();
    expect([keeper.limits, keeper.heard]).toEqual([null, false]);
    const first = askFor(keeper, 10, 0);
    keeper.onReply(
      first.seq,
      grantFor(first, { refillTokens: 60, refillPeriodMs: 60_000, capacityTokens: 500, maxLeaseTokens: 50 }),
      1_000,
    );
    expect(keeper.limits).toEqual({
      capacityTokens: 500,
      maxLeaseTokens: 50,
      refillTokens: 60,
      refillPeriodMs: 60_000,
      allowanceTokens: 0,
      window: false,
    });
    expect(keeper.heard).toBe(true);
  });

  it('marks an unknown pool once, denies with unknown-pool, and clears it on a grant', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 1, 0);
    keeper.onReply(first.seq, errorReply(first.seq, 'unknown-pool', 0), 1_000);
    expect([keeper.slot.unknownPool, keeper.heard, keeper.takeUnknownPoolNews(), keeper.takeUnknownPoolNews()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(keeper.slot.takeAt(1, 2_000)).toBe(false);
    expect(keeper.slot.lastDenial).toBe('unknown-pool');
    // The denial is new demand: the keeper asks again after its back-off, and a second refusal is no news.
    const again = acquireIn(keeper.tick(1_000_000));
    keeper.onReply(again.seq, errorReply(again.seq, 'unknown-pool', 0), 1_001_000);
    expect(keeper.takeUnknownPoolNews()).toBe(false);
    keeper.slot.takeAt(1, 1_002_000);
    const third = acquireIn(keeper.tick(2_000_000));
    keeper.onReply(third.seq, grantFor(third), 2_001_000);
    expect([keeper.slot.unknownPool, keeper.slot.takeAt(1, 2_002_000)]).toEqual([false, true]);
  });

  it('expects one round-trip while the pool has tokens to give, not the next renewal', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 5, 0);
    keeper.onReply(first.seq, grantFor(first), 1_000); // round-trip 1 ms
    expect(keeper.slot.takeAt(5, 2_000)).toBe(true);
    expect(keeper.slot.takeAt(1, 3_000)).toBe(false);
    expect(keeper.retryAfterUs(1, 3_000)).toBe(1_000);
  });

  it("expects the coordinator's hint and at least the refill of what is missing when the pool is short", () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 100, 0);
    // 10 of 100 granted; the pool expects the rest in 300 ms; it refills 100 tokens a second.
    keeper.onReply(first.seq, grantFor(first, { tokensGranted: 10, retryAfterMs: 300, refillTokens: 100, refillPeriodMs: 1000 }), 1_000);
    expect(keeper.retryAfterUs(5, 1_000)).toBe(1_000); // in hand
    expect(keeper.retryAfterUs(40, 1_000)).toBe(301_000); // 30 missing: 300 ms of refill, the hint, plus the round-trip
    expect(keeper.retryAfterUs(60, 1_000)).toBe(500_000); // 50 missing: half a second of refill
    expect(keeper.retryAfterUs(40, 401_000)).toBe(1_000); // the hint has passed: the keeper asks now, one round-trip
  });

  it('does not expect tokens before a back-off ends', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 1, 0);
    keeper.onReply(first.seq, errorReply(first.seq, 'unavailable', 700), 1_000);
    expect(keeper.retryAfterUs(1, 1_000)).toBe(700_000 + 2_000);
    expect(keeper.unavailable).toBe(true);
  });

  it('release returns the lease now and forgets the demand; the keeper is then quiet', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 10, 0);
    keeper.onReply(first.seq, grantFor(first), 1_000);
    keeper.slot.takeAt(3, 2_000);
    keeper.tick(3_000);
    expect(keeper.quiet).toBe(false);
    const [ret] = keeper.release(4_000);
    expect(ret?.message).toMatchObject({ op: 'return', tokensLeft: 7 });
    keeper.onReply(ret?.seq ?? 0, { v: 2, kind: 'receipt', seq: ret?.seq ?? 0, tokensReturned: 7 }, 5_000);
    expect([keeper.quiet, keeper.tick(10_000), keeper.nextDeadlineUs()]).toEqual([true, [], Infinity]);
  });
});
