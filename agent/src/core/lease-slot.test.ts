import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { AgentError } from '../errors.js';
import { LeaseSlot, type DenialReason } from './lease-slot.js';

interface SlotState {
  readonly balanceTokens?: number;
  readonly expiresAtUs?: number;
  readonly hasLease?: boolean;
  readonly costMaxTokens?: number;
  readonly lowWatermarkTokens?: number;
}

/** A slot in the given state, counting its `onLow` calls. */
function slotWith(state: SlotState = {}): { slot: LeaseSlot; lows: () => number } {
  const slot = new LeaseSlot('pool-a');
  Object.assign(slot, state);
  let calls = 0;
  slot.onLow = () => {
    calls += 1;
  };
  return { slot, lows: () => calls };
}

/** Everything a call may change, to compare before and after. */
function snapshot(slot: LeaseSlot): Record<string, unknown> {
  const { balanceTokens, expiresAtUs, costMaxTokens, hasLease, lowSignalled, admittedTokens, admittedCount } = slot;
  const { deniedTokens, deniedCount, lastAdmitUs, lastDenial, wantedCostTokens } = slot;
  return {
    balanceTokens,
    expiresAtUs,
    costMaxTokens,
    hasLease,
    lowSignalled,
    admittedTokens,
    admittedCount,
    deniedTokens,
    deniedCount,
    lastAdmitUs,
    lastDenial,
    wantedCostTokens,
  };
}

const LIVE: SlotState = { balanceTokens: 10, expiresAtUs: 1_000_000, hasLease: true, costMaxTokens: 50 };

describe('LeaseSlot.takeAt', () => {
  const cases: readonly [string, SlotState, number, number, boolean, DenialReason | null][] = [
    // name, state, cost, nowUs, admitted, denial reason
    ['no lease yet', {}, 1, 0, false, 'no-lease'],
    ['no lease yet, even later', {}, 1, 5_000_000, false, 'no-lease'],
    ['live lease, cost under the balance', LIVE, 3, 999_999, true, null],
    ['live lease, cost equal to the balance', LIVE, 10, 0, true, null],
    ['live lease, one token short', LIVE, 11, 500_000, false, 'exhausted'],
    ['live lease, empty', { ...LIVE, balanceTokens: 0 }, 1, 500_000, false, 'exhausted'],
    ['lease at its expiry instant', LIVE, 1, 1_000_000, false, 'expired'],
    ['lease after its expiry', LIVE, 1, 1_000_001, false, 'expired'],
    ['expired and too few tokens', LIVE, 11, 2_000_000, false, 'expired'],
    ['cost above the largest lease', LIVE, 51, 500_000, false, 'never-fits'],
    ['cost above the largest lease, no lease', { costMaxTokens: 5 }, 6, 0, false, 'never-fits'],
    ['largest cost that fits, too few tokens', LIVE, 50, 500_000, false, 'exhausted'],
  ];

  it.each(cases)('%s: cost %#', (_name, state, cost, nowUs, admitted, reason) => {
    const { slot } = slotWith(state);
    const before = slot.balanceTokens;
    expect(slot.takeAt(cost, nowUs)).toBe(admitted);
    if (admitted) {
      expect(slot.balanceTokens).toBe(before - cost);
      expect(slot.admittedTokens).toBe(cost);
      expect(slot.admittedCount).toBe(1);
      expect(slot.lastAdmitUs).toBe(nowUs);
      expect(slot.deniedCount).toBe(0);
    } else {
      expect(slot.lastDenial).toBe(reason);
      expect(slot.balanceTokens).toBe(before);
      expect(slot.deniedTokens).toBe(cost);
      expect(slot.deniedCount).toBe(1);
      expect(slot.admittedCount).toBe(0);
    }
  });

  const invalid: readonly number[] = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53];
  describe.each([
    ['without a lease', {}],
    ['with a live lease', { ...LIVE, balanceTokens: 2 ** 53 }],
  ] as const)('%s', (_name, state) => {
    it.each(invalid)('throws invalid-argument for cost %s and changes nothing', (cost) => {
      const { slot, lows } = slotWith(state);
      const before = snapshot(slot);
      let thrown: unknown = null;
      try {
        slot.takeAt(cost, 500_000);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(AgentError);
      expect((thrown as AgentError).code).toBe('invalid-argument');
      expect((thrown as AgentError).pool).toBe('pool-a');
      expect(snapshot(slot)).toEqual(before);
      expect(lows()).toBe(0);
    });
  });
});

describe('LeaseSlot.onLow', () => {
  it('fires once when an admission takes the balance below the watermark', () => {
    const { slot, lows } = slotWith({ ...LIVE, lowWatermarkTokens: 5 });
    expect(slot.takeAt(5, 1)).toBe(true); // 10 → 5: not below
    expect(lows()).toBe(0);
    expect(slot.takeAt(1, 2)).toBe(true); // 5 → 4: below
    expect(lows()).toBe(1);
    expect(slot.lowSignalled).toBe(true);
    expect(slot.takeAt(1, 3)).toBe(true);
    expect(slot.takeAt(9, 4)).toBe(false); // a denial while signalled: no second call
    expect(lows()).toBe(1);
    slot.lowSignalled = false; // the keeper re-arms it when it acts
    expect(slot.takeAt(1, 5)).toBe(true); // 3 → 2, still below: fires again
    expect(lows()).toBe(2);
  });

  it('never fires on an admission with a zero watermark', () => {
    const { slot, lows } = slotWith(LIVE);
    for (let i = 0; i < 10; i += 1) expect(slot.takeAt(1, i)).toBe(true);
    expect(slot.balanceTokens).toBe(0);
    expect(lows()).toBe(0);
  });

  const denials: readonly [DenialReason, SlotState, number, number][] = [
    ['no-lease', {}, 1, 0],
    ['exhausted', LIVE, 11, 0],
    ['expired', LIVE, 1, 1_000_000],
  ];
  it.each(denials)('fires once on a %s denial until re-armed', (reason, state, cost, nowUs) => {
    const { slot, lows } = slotWith(state);
    expect(slot.takeAt(cost, nowUs)).toBe(false);
    expect(slot.lastDenial).toBe(reason);
    expect(lows()).toBe(1);
    expect(slot.takeAt(cost, nowUs + 1)).toBe(false);
    expect(slot.takeAt(cost, nowUs + 2)).toBe(false);
    expect(lows()).toBe(1);
    slot.lowSignalled = false;
    expect(slot.takeAt(cost, nowUs + 3)).toBe(false);
    expect(lows()).toBe(2);
  });
});

describe('LeaseSlot accounting', () => {
  it('adds up admitted and denied tokens and counts', () => {
    const { slot } = slotWith({ ...LIVE, balanceTokens: 20 });
    const calls: readonly [number, number, boolean][] = [
      [5, 10, true],
      [7, 20, true],
      [9, 30, false],
      [8, 40, true],
      [1, 50, false],
      [60, 60, false],
      [3, 2_000_000, false],
    ];
    for (const [cost, nowUs, admitted] of calls) expect(slot.takeAt(cost, nowUs)).toBe(admitted);
    expect(slot.admittedTokens).toBe(5 + 7 + 8);
    expect(slot.admittedCount).toBe(3);
    expect(slot.deniedTokens).toBe(9 + 1 + 60 + 3);
    expect(slot.deniedCount).toBe(4);
    expect(slot.balanceTokens).toBe(20 - slot.admittedTokens);
    expect(slot.lastAdmitUs).toBe(40);
    expect(slot.lastDenial).toBe('expired');
  });

  it('remembers the largest denied cost that could fit, not one that never fits', () => {
    const { slot } = slotWith({ costMaxTokens: 50 });
    const steps: readonly [number, number][] = [
      // cost denied, wantedCostTokens after
      [3, 3],
      [2, 3],
      [7, 7],
      [51, 7],
      [50, 50],
      [10_000, 50],
    ];
    for (const [cost, wanted] of steps) {
      expect(slot.takeAt(cost, 0)).toBe(false);
      expect(slot.wantedCostTokens).toBe(wanted);
    }
    Object.assign(slot, { balanceTokens: 100, expiresAtUs: 10, hasLease: true });
    expect(slot.takeAt(40, 1)).toBe(true); // an admission leaves it alone
    expect(slot.wantedCostTokens).toBe(50);
  });
});

describe('LeaseSlot property', () => {
  it('spends the whole cost exactly when it fits a live lease, else nothing, and never goes negative', () => {
    const seed = propertySeed('src/core/lease-slot.test.ts');
    const call = fc.record({ cost: fc.integer({ min: 1, max: 40 }), dtUs: fc.integer({ min: 0, max: 300 }) });
    const start = fc.record({
      balanceTokens: fc.integer({ min: 0, max: 200 }),
      expiresAtUs: fc.integer({ min: 0, max: 5_000 }),
      hasLease: fc.boolean(),
      costMaxTokens: fc.integer({ min: 1, max: 50 }),
      lowWatermarkTokens: fc.integer({ min: 0, max: 30 }),
    });
    fc.assert(
      fc.property(start, fc.array(call, { maxLength: 60 }), (state, calls) => {
        const { slot, lows } = slotWith(state);
        let nowUs = 0;
        for (const { cost, dtUs } of calls) {
          nowUs += dtUs;
          const before = slot.balanceTokens;
          const fits = cost <= before && nowUs < slot.expiresAtUs;
          expect(slot.takeAt(cost, nowUs)).toBe(fits);
          expect(slot.balanceTokens).toBe(fits ? before - cost : before);
          expect(slot.balanceTokens).toBeGreaterThanOrEqual(0);
          expect(lows()).toBeLessThanOrEqual(1); // never re-armed here
        }
        expect(slot.admittedTokens).toBe(state.balanceTokens - slot.balanceTokens);
        expect(slot.admittedCount + slot.deniedCount).toBe(calls.length);
        expect(slot.admittedTokens + slot.deniedTokens).toBe(calls.reduce((sum, c) => sum + c.cost, 0));
      }),
      { seed, numRuns: 300 },
    );
  });
});
