/**
 * Limiter.take: the adapter drives the pool's TakeQueue with one timer.
 * Fake timers stand in for the clock, so nothing sleeps. And give-backs:
 * receipts from tryTakeReceipt and takeReceipt, giveBack, the stats.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentError } from '../errors.js';
import { keeperOptions } from '../core/keeper-options.js';
import { LeaseKeeper } from '../core/lease-keeper.js';
import { RECEIPT_DENIED, RECEIPT_NONE } from '../core/lease-slot.js';
import { Limiter, type LimiterHost } from './limiter.js';
import { TEST_SECRET, testHooks } from '../core/lease-keeper.fixtures.js';

/** A limiter on a keeper holding a live lease of `balanceTokens` (50 at most), its clock the fake timers' clock. */
function limiterWith(balanceTokens: number): { limiter: Limiter; keeper: LeaseKeeper; wakes: () => number } {
  const keeper = new LeaseKeeper(
    'agent-1',
    'pool-a',
    () => 1,
    keeperOptions(),
    () => 0.5,
    TEST_SECRET,
    testHooks(),
  );
  let wakes = 0;
  const host: LimiterHost = { clock: () => Date.now() * 1000, wake: () => (wakes += 1) };
  Object.assign(keeper.slot, { hasLease: true, balanceTokens, expiresAtUs: host.clock() + 60_000_000, costMaxTokens: 50 });
  return { limiter: new Limiter(keeper, host), keeper, wakes: () => wakes };
}

describe('Limiter.take', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('admits at once from the balance, without waking the keeper', async () => {
    const { limiter, wakes } = limiterWith(5);
    await expect(limiter.take(3)).resolves.toBe(true);
    expect([limiter.slot.balanceTokens, wakes()]).toEqual([2, 0]);
  });

  it('waits for tokens, wakes the keeper, and is admitted in arrival order when they come', async () => {
    const { limiter, keeper, wakes } = limiterWith(0);
    const order: string[] = [];
    const first = limiter.take(2, { timeoutMs: 500 }).then((ok) => order.push(`first ${ok}`));
    const second = limiter.take(1, { timeoutMs: 500 }).then((ok) => order.push(`second ${ok}`));
    expect([keeper.waitingTokens, wakes()]).toEqual([3, 2]);
    await vi.advanceTimersByTimeAsync(100);
    keeper.slot.balanceTokens = 3;
    limiter.serveWaiters();
    await Promise.all([first, second]);
    expect(order).toEqual(['first true', 'second true']);
    expect(keeper.waitingTokens).toBe(0);
  });

  it('resolves false at its timeout, and not before', async () => {
    const { limiter, keeper } = limiterWith(0);
    let settled: boolean | null = null;
    void limiter.take(1, { timeoutMs: 200 }).then((ok) => (settled = ok));
    await vi.advanceTimersByTimeAsync(199);
    expect(settled).toBeNull();
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(false);
    expect(keeper.waitingTokens).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps one timer, set for the earliest deadline', async () => {
    const { limiter } = limiterWith(0);
    const results: string[] = [];
    void limiter.take(1, { timeoutMs: 300 }).then((ok) => results.push(`a ${ok}`));
    void limiter.take(1, { timeoutMs: 100 }).then((ok) => results.push(`b ${ok}`));
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(results).toEqual(['b false']);
    await vi.advanceTimersByTimeAsync(200);
    expect(results).toEqual(['b false', 'a false']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves waiting takes false on close and rejects later ones with closed', async () => {
    const { limiter } = limiterWith(0);
    const waiting = limiter.take(1, { timeoutMs: 1000 });
    limiter.cancelWaiters();
    await expect(waiting).resolves.toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    await expect(limiter.take(1)).rejects.toMatchObject({ code: 'closed', pool: 'pool-a' });
  });

  it.each([
    ['never-fits', 51, 100],
    ['invalid-argument', 1, -5],
  ])('rejects with %s (cost %i, timeoutMs %i)', async (code, cost, timeoutMs) => {
    const { limiter } = limiterWith(0);
    const taken = limiter.take(cost, { timeoutMs });
    await expect(taken).rejects.toBeInstanceOf(AgentError);
    await expect(taken).rejects.toMatchObject({ code });
  });

  it.each([0, 1.5, -1, Number.NaN])('rejects a bad cost %s, never throws, whether or not a take waits', async (cost) => {
    for (const behind of [false, true]) {
      const { limiter } = limiterWith(0);
      if (behind) void limiter.take(1, { timeoutMs: 1000 });
      let taken: Promise<boolean> | null = null;
      expect(() => (taken = limiter.take(cost))).not.toThrow();
      await expect(taken).rejects.toMatchObject({ code: 'invalid-argument' });
      limiter.cancelWaiters();
    }
  });

  it('waits for the first grant before deciding never-fits', async () => {
    const { limiter, keeper } = limiterWith(0);
    keeper.slot.costMaxTokens = Infinity;
    const taken = limiter.take(80, { timeoutMs: 1000 });
    expect(keeper.waitingTokens).toBe(80);
    keeper.slot.costMaxTokens = 50;
    limiter.serveWaiters();
    await expect(taken).rejects.toMatchObject({ code: 'never-fits', pool: 'pool-a' });
    expect(keeper.waitingTokens).toBe(0);
  });
});

describe('Limiter give-backs', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('gives a take back under its receipt, once, and counts it in stats', () => {
    const { limiter } = limiterWith(5);
    const receipt = limiter.tryTakeReceipt(3);
    expect(receipt).toBeGreaterThan(RECEIPT_NONE);
    expect(limiter.tryTakeReceipt(3)).toBe(RECEIPT_DENIED);
    expect(limiter.giveBack(3, receipt)).toBe(3);
    expect(limiter.giveBack(3, receipt)).toBe(0);
    expect(limiter.availableTokens).toBe(5);
    expect(limiter.stats()).toMatchObject({ admittedTokens: 3, refundedTokens: 3, refundedCount: 1 });
  });

  it('drops a give-back once the keeper has told the coordinator the balance', () => {
    const { limiter, keeper } = limiterWith(5);
    const receipt = limiter.tryTakeReceipt(2);
    keeper.slot.told(); // what sending a renewal or a report does
    expect(limiter.giveBack(2, receipt)).toBe(0);
    expect(limiter.stats()).toMatchObject({ balanceTokens: 3, refundedTokens: 0 });
  });

  it('gives a waiting take its receipt once admitted, and -1 when it times out', async () => {
    const { limiter, keeper } = limiterWith(0);
    const waited = limiter.takeReceipt(2, { timeoutMs: 500 });
    const late = limiter.takeReceipt(5, { timeoutMs: 100 });
    await vi.advanceTimersByTimeAsync(50);
    keeper.slot.balanceTokens = 2;
    limiter.serveWaiters();
    const receipt = await waited;
    expect(receipt).toBe(keeper.slot.toldGeneration);
    await vi.advanceTimersByTimeAsync(100);
    await expect(late).resolves.toBe(RECEIPT_DENIED);
    expect(limiter.giveBack(2, receipt)).toBe(2);
    expect(limiter.availableTokens).toBe(2);
  });
});
