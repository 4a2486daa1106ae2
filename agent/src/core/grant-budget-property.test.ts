/**
 * GrantBudget against an honest pool: whatever the delays, the spending and the
 * returns, no grant an honest coordinator makes is refused; and against a
 * responder that grants whatever is asked, the tokens taken stay within
 * B + r·T plus one round-trip's refill.
 */
import fc from 'fast-check';
import { propertySeed } from '@tokenlease/shared/testing';
import { describe, expect, it } from 'vitest';
import { GrantBudget } from './grant-budget.js';

// B 100, leases of at most 40, a token every 10 ms (100/s); delays each way up to 50 ms.
const B = 100;
const MAX_LEASE = 40;
const US_PER_TOKEN = 10_000;
const EXPECTED = { capacityTokens: B, maxLeaseTokens: MAX_LEASE, refillTokens: 100, refillPeriodMs: 1000 };
const RTT_MAX_US = 100_000;

/** The honest pool: level plus this lease's bound never above B, refilled a whole token at a time. */
class HonestPool {
  levelTokens = B;
  boundTokens = 0;
  private refilledToUs = 0;

  at(nowUs: number): void {
    const tokens = Math.floor((nowUs - this.refilledToUs) / US_PER_TOKEN);
    if (tokens <= 0) return;
    this.refilledToUs += tokens * US_PER_TOKEN;
    this.levelTokens = Math.min(B - this.boundTokens, this.levelTokens + tokens);
  }

  /** acquire — the lease reported `tokensLeft`: the bound falls to it (what was spent is gone, not back in the level), then a grant of what there is. */
  acquire(tokensLeft: number, wantTokens: number, nowUs: number): number {
    this.at(nowUs);
    this.boundTokens = tokensLeft;
    const granted = Math.max(0, Math.min(wantTokens, this.levelTokens, MAX_LEASE - this.boundTokens));
    this.levelTokens -= granted;
    this.boundTokens += granted;
    return granted;
  }

  release(tokensLeft: number, nowUs: number): void {
    this.at(nowUs);
    this.levelTokens += tokensLeft;
    this.boundTokens = 0;
  }
}

const step = fc.record({
  gapUs: fc.oneof(fc.integer({ min: 0, max: 20_000 }), fc.integer({ min: 0, max: 400_000 })),
  toCoordinatorUs: fc.integer({ min: 0, max: 50_000 }),
  toAgentUs: fc.oneof(fc.constantFrom(0, 50_000), fc.integer({ min: 0, max: 50_000 })),
  spendFraction: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
  wantTokens: fc.oneof(fc.constant(MAX_LEASE), fc.integer({ min: 0, max: MAX_LEASE })),
  returns: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
});

describe('GrantBudget property', () => {
  it('refuses no grant of an honest pool, whatever the delays, spending and returns', () => {
    const seed = propertySeed('src/core/grant-budget-property.test.ts');
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 300 }), (steps) => {
        const pool = new HonestPool();
        const budget = new GrantBudget(EXPECTED, RTT_MAX_US, 0);
        let balanceTokens = 0;
        let nowUs = 1_000_000;
        for (const s of steps) {
          nowUs += s.gapUs;
          balanceTokens -= Math.floor(balanceTokens * s.spendFraction);
          if (s.returns) {
            budget.credit(balanceTokens, nowUs);
            pool.release(balanceTokens, nowUs + s.toCoordinatorUs);
            balanceTokens = 0;
            nowUs += s.toCoordinatorUs + s.toAgentUs;
            continue;
          }
          const sentUs = nowUs;
          const granted = pool.acquire(balanceTokens, s.wantTokens, sentUs + s.toCoordinatorUs);
          nowUs = sentUs + s.toCoordinatorUs + s.toAgentUs;
          expect(budget.charge(granted, balanceTokens, 0, sentUs, nowUs)).toBeNull();
          balanceTokens += granted;
        }
      }),
      { seed, numRuns: 500 },
    );
  });

  it('lets a responder that grants whatever is asked give at most B + r·(T + one round-trip)', () => {
    const seed = propertySeed('src/core/grant-budget-property.test.ts');
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 300 }), (steps) => {
        const budget = new GrantBudget(EXPECTED, RTT_MAX_US, 0);
        const startUs = 1_000_000;
        let nowUs = startUs;
        let takenTokens = 0;
        for (const s of steps) {
          const sentUs = nowUs + s.gapUs;
          nowUs = sentUs + s.toCoordinatorUs + s.toAgentUs;
          if (budget.charge(s.wantTokens, 0, 0, sentUs, nowUs) === null) takenTokens += s.wantTokens;
        }
        // Everything was spent at once; nothing came back.
        expect(takenTokens).toBeLessThanOrEqual(B + Math.floor((nowUs - startUs + RTT_MAX_US) / US_PER_TOKEN));
      }),
      { seed, numRuns: 500 },
    );
  });
});
