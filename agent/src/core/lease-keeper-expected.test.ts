/**
 * A keeper configured with the pool limits it expects (KeeperOptions.expectedLimits):
 * grants stating more, or adding up to more than such a pool could give, are refused as
 * implausible and nothing of them is spendable.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseGrant } from '@tokenlease/shared';
import { askFor, grantFor, keeperWith } from './lease-keeper.fixtures.js';

// The fixtures' pool states B 5000, leases of 1000, refill 1000/s; the agent expects B 100, leases of 20, refill 100/s.
const EXPECTED = { capacityTokens: 100, maxLeaseTokens: 20, refillTokens: 100, refillPeriodMs: 1000 };
const MODEST: Partial<LeaseGrant> = { capacityTokens: 100, maxLeaseTokens: 20, refillTokens: 100, refillPeriodMs: 1000 };

describe('LeaseKeeper with expected limits', () => {
  const generous: readonly (readonly [string, Partial<LeaseGrant>, RegExp])[] = [
    ['a larger capacity', { ...MODEST, capacityTokens: 5000 }, /capacity of 5000, above the expected 100/],
    ['a larger lease limit', { ...MODEST, capacityTokens: 100, maxLeaseTokens: 50 }, /lease limit of 50, above the expected 20/],
    ['a faster refill', { ...MODEST, refillTokens: 101 }, /refill of 101 per 1000 ms, faster/],
    ['an allowance', { ...MODEST, allowanceTokens: 1 }, /allowance of 1, above the expected 0/],
    [
      'a rate above the expected refill',
      { ...MODEST, rate: { tokensPerPeriod: 20, periodMs: 100, capTokens: 20 } },
      /rate of 20 per 100 ms/,
    ],
  ];
  it.each(generous)('a grant stating more than expected (%s) is refused, nothing of it spendable', (_name, fields, why) => {
    const keeper = keeperWith({ expectedLimits: EXPECTED });
    const ask = askFor(keeper, 20, 0);
    keeper.onReply(ask.seq, grantFor(ask, { ...fields, tokensGranted: 20, tokensHeld: 20 }), 1_000);
    expect(keeper.takeRejection()).toMatch(why);
    expect(keeper.slot.takeAt(1, 2_000)).toBe(false);
    expect(keeper.stats).toMatchObject({ tokensGranted: 0, lastErrorCode: 'implausible-grant' });
  });

  it('without expected limits the same generous grant is believed (its own limits are all there is)', () => {
    const keeper = keeperWith();
    const ask = askFor(keeper, 20, 0);
    keeper.onReply(ask.seq, grantFor(ask, { tokensGranted: 20, tokensHeld: 20 }), 1_000);
    expect(keeper.takeRejection()).toBeNull();
    expect(keeper.slot.takeAt(20, 2_000)).toBe(true);
  });

  it('modest grants under fresh lease ids, as fast as the keeper asks, stop at what the expected pool holds', () => {
    const keeper = keeperWith({ expectedLimits: EXPECTED });
    let admitted = 0;
    let refused = 0;
    let t = 0;
    while (t < 1_000_000) {
      // Spend everything, then ask at once (or after the back-off a refusal set).
      while (keeper.slot.takeAt(1, t)) admitted += 1;
      keeper.waitingTokens = 20;
      const actions = keeper.tick(t);
      keeper.waitingTokens = 0;
      const ask = actions[0]?.message;
      if (ask?.op === 'acquire') {
        keeper.onReply(ask.seq, grantFor(ask, { ...MODEST, leaseId: `rogue-${t}`, tokensGranted: 20, tokensHeld: 20 }), t + 100);
        if (keeper.takeRejection() !== null) refused += 1;
      }
      t += 1_000;
    }
    // One second: B = 100 and the refill of 100, where the responder offered 20 every millisecond.
    console.log(`lease-keeper-expected: 1 s of modest grants: ${admitted} admitted, ${refused} refused`);
    expect(admitted).toBeLessThanOrEqual(200);
    expect(admitted).toBeGreaterThanOrEqual(150);
    expect(refused).toBeGreaterThan(0);
  });
});
