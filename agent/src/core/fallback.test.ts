/**
 * The opt-in local fallback: off by default (fail-closed); while the
 * coordinator cannot grant, costs the lease cannot cover come from a local
 * bucket; a grant turns it off again.
 */
import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { AgentError } from '../errors.js';
import { acquireIn, grantFor, keeperWith, only } from './lease-keeper.fixtures.js';
import { LeaseSlot } from './lease-slot.js';

function fallbackSlot(perSecond: number, burst: number): LeaseSlot {
  const slot = new LeaseSlot('pool-a');
  slot.configureFallback(perSecond, burst, 0);
  slot.fallbackActive = true;
  return slot;
}

describe('LeaseSlot fallback bucket', () => {
  it('admits nothing from it unless configured and active', () => {
    const slot = new LeaseSlot('pool-a');
    slot.fallbackActive = true; // no rate configured: stays off
    expect(slot.fallbackActive).toBe(false);
    expect(slot.takeAt(1, 10)).toBe(false);
    const configured = new LeaseSlot('pool-a');
    configured.configureFallback(100, 10, 0);
    expect(configured.takeAt(1, 10)).toBe(false);
    expect(configured.lastDenial).toBe('no-lease');
  });

  it('starts full, then refills at its rate per whole µs, up to its burst', () => {
    const slot = fallbackSlot(1000, 3); // 1 token per ms
    expect([slot.takeAt(1, 0), slot.takeAt(1, 0), slot.takeAt(1, 0), slot.takeAt(1, 0)]).toEqual([true, true, true, false]);
    expect(slot.takeAt(1, 999.9)).toBe(false); // 999 whole µs: 0.999 token
    expect(slot.takeAt(1, 1000)).toBe(true);
    expect(slot.takeAt(2, 1_000_000)).toBe(true); // refilled to the burst of 3, no more
    expect(slot.takeAt(2, 1_000_000)).toBe(false);
    expect({ tokens: slot.fallbackTokens, count: slot.fallbackCount, admitted: slot.admittedTokens }).toEqual({
      tokens: 6,
      count: 5,
      admitted: 0,
    });
  });

  it('spends the live lease first and only covers what the lease cannot', () => {
    const slot = fallbackSlot(1000, 5);
    Object.assign(slot, { balanceTokens: 2, expiresAtUs: 1_000, hasLease: true, costMaxTokens: 100 });
    expect(slot.takeAt(2, 10)).toBe(true);
    expect(slot.balanceTokens).toBe(0);
    expect(slot.fallbackTokens).toBe(0);
    expect(slot.takeAt(3, 10)).toBe(true);
    expect(slot.fallbackTokens).toBe(3);
  });

  it('counts in canTakeAt, so tryTakeAll sees it', () => {
    const slot = fallbackSlot(1000, 2);
    expect(slot.canTakeAt(2, 0)).toBe(true);
    expect(slot.canTakeAt(3, 0)).toBe(false);
    expect(slot.fallbackTokens).toBe(0);
  });

  it('refuses bad settings with a typed error and changes nothing', () => {
    const slot = fallbackSlot(10, 10);
    for (const [rate, burst] of [
      [-1, 1],
      [1.5, 1],
      [10, 0],
      [2e9, 1],
      [10, Number.NaN],
    ] as const) {
      expect(thrown(AgentError, () => slot.configureFallback(rate, burst, 0)).code).toBe('invalid-argument');
    }
    expect(slot.takeAt(10, 0)).toBe(true);
  });
});

describe('LeaseKeeper fallback policy', () => {
  it('is fail-closed by default: no reply, no admission', () => {
    const keeper = keeperWith();
    const { message } = only(keeper.tick(0));
    keeper.onFailure(message.seq, 'bus-no-responders', 'nobody serves the pool', 1_000);
    expect(keeper.slot.fallbackActive).toBe(false);
    expect(keeper.slot.takeAt(1, 2_000)).toBe(false);
  });

  it('turns on when the coordinator cannot grant, and off with the next grant', () => {
    const keeper = keeperWith({ fallbackPerSecond: 100, fallbackBurstTokens: 4, initialTokens: 100 });
    const first = acquireIn(keeper.tick(0));
    keeper.onFailure(first.seq, 'bus-timeout', 'no reply', 1_000);
    expect(keeper.slot.fallbackActive).toBe(true);
    expect(keeper.slot.takeAt(4, 1_000)).toBe(true);
    expect(keeper.slot.takeAt(1, 1_000)).toBe(false);
    keeper.onReply(first.seq, grantFor(first), 5_000);
    expect(keeper.slot.fallbackActive).toBe(false);
    expect(keeper.slot.takeAt(100, 6_000)).toBe(true);
    expect(keeper.slot.takeAt(1, 6_000)).toBe(false); // lease spent; fallback off again
  });

  it.each(['unavailable', 'not-owner', 'internal'] as const)('turns on for an error reply %s, not for a refusal of the request', (code) => {
    const keeper = keeperWith({ fallbackPerSecond: 10 });
    const first = only(keeper.tick(0)).message;
    keeper.onReply(first.seq, { v: 2, kind: 'error', seq: first.seq, code, fault: 'coordinator', message: 'x', retryAfterMs: 10 }, 1_000);
    expect(keeper.slot.fallbackActive).toBe(true);
    const other = keeperWith({ fallbackPerSecond: 10 });
    const req = only(other.tick(0)).message;
    other.onReply(req.seq, { v: 2, kind: 'error', seq: req.seq, code: 'bad-request', fault: 'peer', message: 'x', retryAfterMs: 0 }, 1_000);
    expect(other.slot.fallbackActive).toBe(false);
  });
});
