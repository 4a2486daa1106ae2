/**
 * CallReports through the LeaseKeeper: every acquire and return tells the
 * calls decided since the last request answered with a grant or receipt;
 * a retry repeats them, a refusal leaves them for the next request.
 */
import type { Reply } from '@tokenlease/shared';
import { describe, expect, it } from 'vitest';
import { acquireIn, askFor, grantFor, keeperWith, only } from './lease-keeper.fixtures.js';

const MS = 1000;

describe('call reports', () => {
  it('tells admitted and denied calls once, after a grant says the coordinator has them', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 5, 0);
    expect(first.calls).toBeUndefined();
    keeper.onReply(first.seq, grantFor(first, { tokensGranted: 5, ttlMs: 60_000 }), 1 * MS);
    const s = keeper.slot;
    for (let i = 0; i < 5; i += 1) expect(s.takeAt(1, 2 * MS)).toBe(true);
    expect(s.takeAt(1, 2 * MS)).toBe(false);
    const ask = acquireIn(keeper.tick(3 * MS));
    expect(ask.calls).toEqual({ admitted: 5, denied: 1, shadowDenied: 0 });
    // No reply: the retry is the same message, calls and all.
    keeper.onFailure(ask.seq, 'timeout', 'no reply', 1_003 * MS);
    const retry = only(keeper.tick(2_000 * MS));
    expect(retry.message).toBe(ask);
    // A refusal: the calls were not counted, so the next request tells them again, with the calls since.
    const unavailable: Reply = {
      v: 2,
      kind: 'error',
      seq: ask.seq,
      code: 'unavailable',
      fault: 'coordinator',
      message: 'x',
      retryAfterMs: 0,
    };
    keeper.onReply(ask.seq, unavailable, 2_001 * MS);
    expect(s.takeAt(1, 2_002 * MS)).toBe(false);
    const again = acquireIn(keeper.tick(5_000 * MS));
    expect(again.calls).toEqual({ admitted: 5, denied: 2, shadowDenied: 0 });
    expect(keeper.onReply(again.seq, grantFor(again, { ttlMs: 60_000 }), 5_001 * MS)).toEqual([]);
    // Told: the next request carries only what came after.
    expect(s.takeAt(s.balanceTokens, 5_002 * MS)).toBe(true);
    expect(s.takeAt(1, 5_002 * MS)).toBe(false);
    const next = acquireIn(keeper.tick(5_003 * MS));
    expect(next.calls).toEqual({ admitted: 1, denied: 1, shadowDenied: 0 });
  });

  it('tells shadow-mode would-be denials apart, and tells the calls on the return', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 5, 0);
    expect(keeper.onReply(first.seq, grantFor(first, { ttlMs: 60_000, shadow: true }), 1 * MS)).toEqual([]);
    const s = keeper.slot;
    expect(s.takeAt(5, 2 * MS)).toBe(true);
    expect(s.takeAt(5, 2 * MS)).toBe(true);
    const renewal = acquireIn(keeper.tick(3 * MS));
    expect(renewal.calls).toEqual({ admitted: 1, denied: 0, shadowDenied: 1 });
    expect(keeper.onReply(renewal.seq, grantFor(renewal, { ttlMs: 60_000, shadow: true }), 4 * MS)).toEqual([]);
    expect(s.takeAt(1, 5 * MS)).toBe(true);
    const closing = only(keeper.close(6 * MS)).message;
    expect(closing).toMatchObject({ op: 'return', calls: { admitted: 1, denied: 0, shadowDenied: 0 } });
  });
});
