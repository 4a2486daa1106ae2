/**
 * TakeQueue: waiting `take()` calls at fixed instants: admission at arrival,
 * FIFO order, deadlines, refusals and close, on chunk, rate and fallback
 * balances.
 */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { LeaseSlot, RECEIPT_NONE } from './lease-slot.js';
import { TakeQueue, type TakeQueueHost } from './take-queue.js';

type Kind = 'admitted' | 'waiting';

interface SlotState {
  readonly balanceTokens?: number;
  readonly expiresAtUs?: number;
  readonly hasLease?: boolean;
  readonly costMaxTokens?: number;
}

/** A live chunk lease of 50 tokens at most, expiring at 10 s, empty. */
const EMPTY: SlotState = { balanceTokens: 0, expiresAtUs: 10_000_000, hasLease: true, costMaxTokens: 50 };

function hostWith(state: SlotState): TakeQueueHost {
  const slot = new LeaseSlot('pool-a');
  Object.assign(slot, state);
  return { slot, waitingTokens: 0 };
}

type Step =
  | { readonly at: number; readonly arrive: string; readonly cost: number; readonly timeoutMs: number; readonly kind: Kind }
  | { readonly add: number }
  | { readonly at: number; readonly poll: readonly string[]; readonly timedOut?: readonly string[] }
  | { readonly close: readonly string[] };

describe('TakeQueue', () => {
  const scenarios: readonly [string, SlotState, readonly Step[], number][] = [
    // name, slot, steps (instants in µs; `add` puts tokens in the balance), tokens still waiting at the end
    [
      'admits at once when nothing waits and the balance covers',
      { ...EMPTY, balanceTokens: 5 },
      [
        { at: 0, arrive: 'a', cost: 3, timeoutMs: 100, kind: 'admitted' },
        { at: 0, arrive: 'b', cost: 2, timeoutMs: 100, kind: 'admitted' },
        { at: 0, arrive: 'c', cost: 1, timeoutMs: 100, kind: 'waiting' },
      ],
      1,
    ],
    [
      'admits waiters in arrival order when tokens come',
      EMPTY,
      [
        { at: 0, arrive: 'a', cost: 2, timeoutMs: 100, kind: 'waiting' },
        { at: 1_000, arrive: 'b', cost: 1, timeoutMs: 100, kind: 'waiting' },
        { at: 5_000, poll: [] },
        { add: 3 },
        { at: 10_000, poll: ['a', 'b'] },
      ],
      0,
    ],
    [
      'never lets a later take overtake, even one that alone would fit',
      { ...EMPTY, balanceTokens: 1 },
      [
        { at: 0, arrive: 'a', cost: 3, timeoutMs: 1000, kind: 'waiting' },
        { at: 0, arrive: 'b', cost: 1, timeoutMs: 1000, kind: 'waiting' },
        { at: 1_000, poll: [] },
        { add: 2 },
        { at: 2_000, poll: ['a'] },
        { add: 1 },
        { at: 3_000, poll: ['b'] },
      ],
      0,
    ],
    [
      'times out at its deadline, not before',
      EMPTY,
      [
        { at: 7, arrive: 'a', cost: 2, timeoutMs: 100, kind: 'waiting' },
        { at: 100_006, poll: [] },
        { at: 100_007, poll: [], timedOut: ['a'] },
        { add: 2 },
        { at: 100_008, poll: [] },
      ],
      0,
    ],
    [
      'admits a due head that fits; drops a due head that does not and serves the next',
      EMPTY,
      [
        { at: 0, arrive: 'a', cost: 5, timeoutMs: 100, kind: 'waiting' },
        { at: 0, arrive: 'b', cost: 1, timeoutMs: 500, kind: 'waiting' },
        { at: 0, arrive: 'c', cost: 1, timeoutMs: 100, kind: 'waiting' },
        { add: 2 },
        { at: 100_000, poll: ['b', 'c'], timedOut: ['a'] },
      ],
      0,
    ],
    [
      'times out a waiter behind a blocked head on its own deadline',
      EMPTY,
      [
        { at: 0, arrive: 'a', cost: 5, timeoutMs: 1000, kind: 'waiting' },
        { at: 0, arrive: 'b', cost: 1, timeoutMs: 100, kind: 'waiting' },
        { add: 1 },
        { at: 100_000, poll: [], timedOut: ['b'] },
      ],
      5,
    ],
    [
      'times out a zero timeout behind waiters at the next poll',
      EMPTY,
      [
        { at: 0, arrive: 'a', cost: 5, timeoutMs: 1000, kind: 'waiting' },
        { at: 50, arrive: 'b', cost: 1, timeoutMs: 0, kind: 'waiting' },
        { at: 50, poll: [], timedOut: ['b'] },
      ],
      5,
    ],
    [
      'admits no waiter from a lease past its expiry',
      { ...EMPTY, balanceTokens: 10, expiresAtUs: 1_000 },
      [
        { at: 1_000, arrive: 'a', cost: 1, timeoutMs: 100, kind: 'waiting' },
        { at: 2_000, poll: [] },
      ],
      1,
    ],
    [
      'hands back every waiter on close',
      EMPTY,
      [
        { at: 0, arrive: 'a', cost: 2, timeoutMs: 100, kind: 'waiting' },
        { at: 0, arrive: 'b', cost: 3, timeoutMs: 100, kind: 'waiting' },
        { close: ['a', 'b'] },
        { add: 5 },
        { at: 1_000, poll: [] },
      ],
      0,
    ],
  ];

  it.each(scenarios)('%s', (_name, state, steps, waitingTokensAtEnd) => {
    const host = hostWith(state);
    const queue = new TakeQueue<string>(host);
    steps.forEach((step, index) => {
      if ('arrive' in step) {
        const arrival = queue.arrive(step.cost, step.timeoutMs, step.arrive, step.at);
        // A take spent from the lease: its receipt is the slot's told generation, 1 (nothing told here).
        expect({ index, arrival }).toEqual({
          index,
          arrival: step.kind === 'admitted' ? { kind: 'admitted', receipt: 1 } : { kind: step.kind },
        });
      } else if ('add' in step) {
        host.slot.balanceTokens += step.add;
      } else if ('poll' in step) {
        const decisions = queue.poll(step.at);
        const receipts = step.poll.map(() => 1);
        expect({ index, decisions }).toEqual({
          index,
          decisions: { admitted: step.poll, receipts, timedOut: step.timedOut ?? [], refused: [] },
        });
      } else {
        expect(queue.close()).toEqual(step.close);
      }
    });
    expect(host.waitingTokens).toBe(waitingTokensAtEnd);
  });

  it('records the denial of a take that has to wait, and nothing when a poll finds the head short', () => {
    const host = hostWith(EMPTY);
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(4, 100, 'a', 0)).toEqual({ kind: 'waiting' });
    const { deniedTokens, deniedCount, wantedCostTokens, lastDenial } = host.slot;
    expect([deniedTokens, deniedCount, wantedCostTokens, lastDenial]).toEqual([4, 1, 4, 'exhausted']);
    expect(queue.arrive(2, 100, 'b', 0)).toEqual({ kind: 'waiting' }); // behind a waiter: not tried, so no denial
    expect(queue.poll(50_000)).toEqual({ admitted: [], receipts: [], timedOut: [], refused: [] });
    expect([host.slot.deniedTokens, host.slot.deniedCount]).toEqual([4, 1]);
    expect(host.waitingTokens).toBe(6);
  });

  it('admits a waiter once a rate lease has accrued its cost, at the poll that finds it', () => {
    const host = hostWith(EMPTY);
    // 10 tokens a second, up to 10.
    host.slot.startRate(10, 1_000_000, 10, 0);
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(2, 1000, 'a', 0)).toEqual({ kind: 'waiting' });
    expect(queue.poll(199_999)).toEqual({ admitted: [], receipts: [], timedOut: [], refused: [] });
    expect(queue.poll(200_000)).toEqual({ admitted: ['a'], receipts: [1], timedOut: [], refused: [] });
    expect(host.slot.balanceTokens).toBe(0);
  });

  it('admits a waiter from the fallback bucket once the fallback is active', () => {
    const host = hostWith({ costMaxTokens: 50 });
    host.slot.configureFallback(10, 5, 0);
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(3, 1000, 'a', 0)).toEqual({ kind: 'waiting' });
    expect(queue.poll(1_000)).toEqual({ admitted: [], receipts: [], timedOut: [], refused: [] });
    host.slot.fallbackActive = true;
    // From the fallback bucket: nothing of the lease to give back.
    expect(queue.poll(2_000)).toEqual({ admitted: ['a'], receipts: [RECEIPT_NONE], timedOut: [], refused: [] });
    expect(host.slot.fallbackTokens).toBe(3);
  });

  const refusals: readonly [string, number, number, boolean, string, string | undefined][] = [
    // name, cost, timeoutMs, takes already waiting, code, pool on the error
    ['a negative timeout', 1, -1, false, 'invalid-argument', 'pool-a'],
    ['a fractional timeout', 1, 1.5, false, 'invalid-argument', 'pool-a'],
    ['a timeout that is not a number', 1, Number.NaN, false, 'invalid-argument', 'pool-a'],
    ['a zero cost while nothing waits', 0, 100, false, 'invalid-argument', 'pool-a'],
    ['a fractional cost while nothing waits', 1.5, 100, false, 'invalid-argument', 'pool-a'],
    ['a negative cost while nothing waits', -1, 100, false, 'invalid-argument', 'pool-a'],
    ['a cost above the largest lease', 51, 100, false, 'never-fits', 'pool-a'],
    ['a cost above the largest lease, behind waiters', 51, 100, true, 'never-fits', 'pool-a'],
    ['a fractional cost behind waiters', 1.5, 100, true, 'invalid-argument', 'pool-a'],
    ['a zero cost behind waiters', 0, 100, true, 'invalid-argument', 'pool-a'],
  ];

  it.each(refusals)('refuses %s, and nothing waits for it', (_name, cost, timeoutMs, behind, code, pool) => {
    const host = hostWith(EMPTY);
    const queue = new TakeQueue<string>(host);
    if (behind) queue.arrive(5, 1000, 'first', 0);
    const before = [queue.length, host.waitingTokens];
    const arrival = queue.arrive(cost, timeoutMs, 'x', 0);
    expect(arrival.kind).toBe('refused');
    if (arrival.kind !== 'refused') return;
    expect(arrival.error).toBeInstanceOf(AgentError);
    expect([arrival.error.code, arrival.error.pool]).toEqual([code, pool]);
    expect([queue.length, host.waitingTokens]).toEqual(before);
  });

  it('refuses every take after close', () => {
    const host = hostWith({ ...EMPTY, balanceTokens: 10 });
    const queue = new TakeQueue<string>(host);
    expect(queue.close()).toEqual([]);
    const arrival = queue.arrive(1, 100, 'a', 0);
    expect(arrival.kind === 'refused' && [arrival.error.code, arrival.error.pool]).toEqual(['closed', 'pool-a']);
    expect(host.slot.balanceTokens).toBe(10);
  });

  it("waits for the pool's limits before deciding never-fits, then refuses the hopeless waiters only", () => {
    const host = hostWith({ ...EMPTY, costMaxTokens: Infinity });
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(80, 1000, 'big', 0)).toEqual({ kind: 'waiting' });
    expect(queue.arrive(3, 1000, 'small', 0)).toEqual({ kind: 'waiting' });
    host.slot.costMaxTokens = 50; // the first grant told the pool's limits
    const decisions = queue.poll(1_000);
    expect(decisions.refused.map((r) => [r.ticket, r.error.code])).toEqual([['big', 'never-fits']]);
    expect([queue.length, host.waitingTokens]).toEqual([1, 3]);
  });

  it('refuses every waiter, and every later take, while the pool is unknown', () => {
    const host = hostWith({ ...EMPTY, costMaxTokens: Infinity });
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(1, 1000, 'a', 0)).toEqual({ kind: 'waiting' });
    host.slot.unknownPool = true;
    const decisions = queue.poll(1_000);
    expect(decisions.refused.map((r) => [r.ticket, r.error.code])).toEqual([['a', 'unknown-pool']]);
    const later = queue.arrive(1, 1000, 'b', 2_000);
    expect(later.kind === 'refused' && later.error.code).toBe('unknown-pool');
    expect([queue.length, host.waitingTokens]).toEqual([0, 0]);
  });

  it('admits a probe (spend false) when its cost fits, spending nothing', () => {
    const host = hostWith({ ...EMPTY, balanceTokens: 2 });
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(2, 100, 'probe', 0, false)).toEqual({ kind: 'admitted', receipt: RECEIPT_NONE });
    expect(queue.arrive(3, 100, 'probe-2', 0, false)).toEqual({ kind: 'waiting' });
    host.slot.balanceTokens = 3;
    expect(queue.poll(1_000)).toEqual({ admitted: ['probe-2'], receipts: [RECEIPT_NONE], timedOut: [], refused: [] });
    expect([host.slot.balanceTokens, host.waitingTokens]).toEqual([3, 0]);
  });

  it("gives each admitted take the slot's receipt, so what a waiter spent can be given back", () => {
    const host = hostWith({ ...EMPTY, balanceTokens: 1 });
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(1, 100, 'first', 0)).toEqual({ kind: 'admitted', receipt: 1 });
    expect(queue.arrive(2, 100, 'waiter', 0)).toEqual({ kind: 'waiting' });
    host.slot.told(); // an acquire left: a new told generation
    host.slot.balanceTokens = 2;
    expect(queue.poll(1_000)).toEqual({ admitted: ['waiter'], receipts: [2], timedOut: [], refused: [] });
    expect(host.slot.giveBackAt(2, 2, 2_000)).toBe(2);
    expect(host.slot.giveBackAt(1, 1, 2_000)).toBe(0); // the first take was told since
    expect(host.slot.balanceTokens).toBe(2);
  });

  const deadlines: readonly [string, readonly [number, number][], number][] = [
    // name, arrivals (instant µs, timeout ms), next deadline µs
    ['none waiting', [], Infinity],
    ['one waiter', [[1_000, 200]], 201_000],
    [
      'the earliest, whatever the arrival order',
      [
        [0, 900],
        [10, 100],
        [20, 500],
      ],
      100_010,
    ],
    [
      'a zero timeout',
      [
        [0, 900],
        [30, 0],
      ],
      30,
    ],
  ];

  it.each(deadlines)('says when to poll next: %s', (_name, arrivals, nextUs) => {
    const queue = new TakeQueue<number>(hostWith(EMPTY));
    arrivals.forEach(([atUs, timeoutMs], i) => queue.arrive(1, timeoutMs, i, atUs));
    expect(queue.nextDeadlineUs()).toBe(nextUs);
  });
});
