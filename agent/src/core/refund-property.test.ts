/**
 * Refund property: random sequences of takes, give-backs (of any receipt
 * taken so far, current or stale, once or again), tells, grants on the
 * same lease, new leases (chunk or rate), lease ends, expiries (time
 * passing), fallback and shadow switches, on one LeaseSlot. A model of
 * what the coordinator was told checks after every step:
 *
 * - the balance never passes the balance last told plus what was granted
 *   or accrued since (so it stays within the coordinator's bound);
 * - a rate lease's balance never passes its cap;
 * - tokens are conserved: counted (admitted less refunded) + balance +
 *   what leases ended with = granted + accrued, so counted spending never
 *   passes what was granted (and accrued);
 * - a give-back with a receipt of an earlier generation, of nothing
 *   (fallback, shadow) or of a denial gives nothing back, nor does one
 *   without a live lease.
 *
 * `SEED=<n> npx vitest run src/core/refund-property.test.ts` replays a run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { LeaseSlot, RECEIPT_DENIED, RECEIPT_NONE } from './lease-slot.js';

type Step =
  | { readonly kind: 'take'; readonly dtUs: number; readonly cost: number }
  | { readonly kind: 'giveBack'; readonly dtUs: number; readonly pick: number; readonly again: boolean }
  | { readonly kind: 'tell'; readonly dtUs: number }
  | { readonly kind: 'grant'; readonly dtUs: number; readonly tokens: number }
  | { readonly kind: 'lease'; readonly dtUs: number; readonly tokens: number; readonly ttlUs: number; readonly rate: boolean }
  | { readonly kind: 'end'; readonly dtUs: number }
  | { readonly kind: 'fallback'; readonly dtUs: number; readonly on: boolean }
  | { readonly kind: 'shadow'; readonly dtUs: number; readonly on: boolean };

const dtUs = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 2_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 200_000 }) },
);

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 30, arbitrary: fc.record({ kind: fc.constant('take' as const), dtUs, cost: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 30, arbitrary: fc.record({ kind: fc.constant('giveBack' as const), dtUs, pick: fc.nat(), again: fc.boolean() }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('tell' as const), dtUs }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('grant' as const), dtUs, tokens: fc.integer({ min: 0, max: 20 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('lease' as const),
      dtUs,
      tokens: fc.integer({ min: 0, max: 30 }),
      ttlUs: fc.integer({ min: 1, max: 300_000 }),
      rate: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('end' as const), dtUs }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fallback' as const), dtUs, on: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('shadow' as const), dtUs, on: fc.boolean() }) },
);

/** A rate lease's cap and rate: 10 tokens a second, up to 15. */
const RATE_CAP_TOKENS = 15;
const RATE_TOKENS_PER_PERIOD = 10;
const RATE_PERIOD_US = 1_000_000;

/** How often each interesting path ran, over all runs: the property must reach them all. */
const reached = { givenBack: 0, partial: 0, droppedStale: 0, droppedExpired: 0, droppedNothing: 0, cappedByRate: 0 };

/** What the coordinator was told and what the slot was given, from the steps alone. */
class Model {
  readonly slot = new LeaseSlot('pool-p');
  nowUs = 0;
  /** Every receipt a take got, with its cost and generation, in order. */
  readonly receipts: { readonly cost: number; readonly receipt: number }[] = [];
  toldTokens = 0;
  grantedSinceTold = 0;
  accruedSinceTold = 0;
  grantedTokens = 0;
  accruedTokens = 0;
  /** What leases held when they ended (returned or dropped). */
  endedWithTokens = 0;
  rateLease = false;

  constructor() {
    this.slot.configureFallback(1_000, 5, 0);
  }

  /** accrue — brings a rate lease's balance up to now and books what it gained as accrued (nothing is spent by asking). */
  accrue(): void {
    const before = this.slot.balanceTokens;
    this.slot.canTakeAt(1, this.nowUs);
    const gained = this.slot.balanceTokens - before;
    this.accruedTokens += gained;
    this.accruedSinceTold += gained;
  }

  tell(): void {
    this.slot.told();
    this.toldTokens = this.slot.balanceTokens;
    this.grantedSinceTold = 0;
    this.accruedSinceTold = 0;
  }

  end(): void {
    const slot = this.slot;
    this.endedWithTokens += slot.balanceTokens;
    slot.told();
    Object.assign(slot, { balanceTokens: 0, hasLease: false, expiresAtUs: 0 });
    slot.startRate(0, 1, 0, this.nowUs);
    this.rateLease = false;
    this.toldTokens = 0;
    this.grantedSinceTold = 0;
    this.accruedSinceTold = 0;
  }

  giveBack(pick: number, again: boolean): void {
    const slot = this.slot;
    if (this.receipts.length === 0) return;
    const index = pick % this.receipts.length;
    const { cost, receipt } = this.receipts[index] as { readonly cost: number; readonly receipt: number };
    if (!again) this.receipts.splice(index, 1);
    const live = slot.hasLease && this.nowUs < slot.expiresAtUs;
    const current = receipt === slot.toldGeneration;
    const spentTokens = slot.toldSpentTokens;
    const balanceTokens = slot.balanceTokens;
    const given = slot.giveBackAt(cost, receipt, this.nowUs);
    expect(given).toBeGreaterThanOrEqual(0);
    expect(given).toBeLessThanOrEqual(Math.min(cost, spentTokens));
    expect(slot.balanceTokens).toBe(balanceTokens + given);
    if (receipt === RECEIPT_NONE || receipt === RECEIPT_DENIED) {
      expect(given, 'gave back a take that spent nothing from the lease').toBe(0);
      reached.droppedNothing += 1;
    } else if (!current) {
      expect(given, 'gave back a take the coordinator was told of').toBe(0);
      reached.droppedStale += 1;
    } else if (!live) {
      expect(given, 'gave back to a lease not held or past its expiry').toBe(0);
      reached.droppedExpired += 1;
    } else if (given > 0) {
      reached.givenBack += 1;
      if (given < cost) reached.partial += 1;
      if (this.rateLease && slot.balanceTokens === RATE_CAP_TOKENS && given < Math.min(cost, spentTokens)) reached.cappedByRate += 1;
    }
  }

  play(s: Step): void {
    const slot = this.slot;
    this.nowUs += s.dtUs;
    this.accrue();
    switch (s.kind) {
      case 'take': {
        const receipt = slot.takeReceiptAt(s.cost, this.nowUs);
        if (receipt !== RECEIPT_DENIED) this.receipts.push({ cost: s.cost, receipt });
        return;
      }
      case 'giveBack':
        return this.giveBack(s.pick, s.again);
      case 'tell':
        return this.tell();
      case 'grant': {
        // More tokens on the lease held, from a grant to a request that told the balance: the keeper's same-lease grant.
        if (!slot.hasLease) return;
        const tokens = this.rateLease ? Math.min(s.tokens, Math.max(0, RATE_CAP_TOKENS - slot.balanceTokens)) : s.tokens;
        slot.balanceTokens += tokens;
        this.grantedTokens += tokens;
        this.grantedSinceTold += tokens;
        return;
      }
      case 'lease': {
        if (slot.hasLease) this.end();
        const tokens = s.rate ? Math.min(s.tokens, RATE_CAP_TOKENS) : s.tokens;
        slot.told();
        Object.assign(slot, { balanceTokens: tokens, hasLease: true, expiresAtUs: this.nowUs + s.ttlUs });
        if (s.rate) slot.startRate(RATE_TOKENS_PER_PERIOD, RATE_PERIOD_US, RATE_CAP_TOKENS, this.nowUs);
        this.rateLease = s.rate;
        this.grantedTokens += tokens;
        this.toldTokens = tokens;
        this.grantedSinceTold = 0;
        this.accruedSinceTold = 0;
        return;
      }
      case 'end':
        return this.end();
      case 'fallback':
        slot.fallbackActive = s.on;
        return;
      case 'shadow':
        slot.shadowForced = s.on;
        return;
    }
  }

  check(): void {
    const slot = this.slot;
    expect(Number.isSafeInteger(slot.balanceTokens)).toBe(true);
    expect(slot.balanceTokens).toBeGreaterThanOrEqual(0);
    expect(slot.balanceTokens, 'the balance passed what the coordinator was told').toBeLessThanOrEqual(
      this.toldTokens + this.grantedSinceTold + this.accruedSinceTold,
    );
    if (this.rateLease) expect(slot.balanceTokens).toBeLessThanOrEqual(RATE_CAP_TOKENS);
    const countedTokens = slot.admittedTokens - slot.refundedTokens;
    expect(countedTokens).toBeGreaterThanOrEqual(0);
    expect(countedTokens + slot.balanceTokens + this.endedWithTokens).toBe(this.grantedTokens + this.accruedTokens);
    expect(countedTokens).toBeLessThanOrEqual(this.grantedTokens + this.accruedTokens);
  }
}

describe('LeaseSlot refund property', () => {
  it('never lets counted spending pass what was granted, nor the balance pass what was last told', { timeout: 60_000 }, () => {
    const seed = propertySeed('src/core/refund-property.test.ts');
    fc.assert(
      fc.property(fc.array(step, { maxLength: 150, size: 'max' }), (steps) => {
        const model = new Model();
        for (const s of steps) {
          model.play(s);
          model.check();
        }
      }),
      { seed, numRuns: 400 },
    );
    console.log('refund-property.test.ts: paths reached', reached);
    for (const [path, count] of Object.entries(reached)) expect(count, `the runs never reached: ${path}`).toBeGreaterThan(0);
  });
});
