/**
 * Rate (trickle) leases on the agent side: the slot's balance accrues like a
 * true token bucket (exact, capped, nothing while full), the keeper freezes
 * it when it sends and restarts it when the reply arrives, over the period
 * stretched by the drift margin, and renews once per refresh interval.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseGrant } from '@tokenlease/shared';
import { DemandWatch } from './demand-watch.js';
import { keeperOptions } from './keeper-options.js';
import { acquireIn, grant, grantFor, keeperWith, only } from './lease-keeper.fixtures.js';
import { LeaseSlot } from './lease-slot.js';
import { RateRenewal } from './rate-renewal.js';

function rateSlot(tokensPerPeriod: number, periodUs: number, capTokens: number, balance = 0): LeaseSlot {
  const slot = new LeaseSlot('pool-a');
  Object.assign(slot, { balanceTokens: balance, expiresAtUs: 1e12, hasLease: true, costMaxTokens: 1000 });
  slot.startRate(tokensPerPeriod, periodUs, capTokens, 0);
  return slot;
}

describe('LeaseSlot accrual', () => {
  it('adds ρ per period in whole µs, carrying the remainder exactly', () => {
    const slot = rateSlot(3, 1_000_000, 100); // 3 tokens per s: one per 333,333.3 µs
    expect(slot.takeAt(1, 333_333)).toBe(false);
    expect(slot.takeAt(1, 333_334)).toBe(true);
    expect(slot.takeAt(1, 666_667)).toBe(true); // 2,000,001 token·µs: the carry made the second token
    expect(slot.takeAt(1, 999_999)).toBe(false);
    expect(slot.takeAt(1, 1_000_000)).toBe(true);
  });

  it('never passes its cap, and gains nothing while full (a true bucket)', () => {
    const slot = rateSlot(1000, 1_000_000, 5, 5); // full, 1 token per ms
    expect(slot.takeAt(5, 10_000)).toBe(true); // full all along: nothing extra
    expect(slot.takeAt(1, 10_000)).toBe(false);
    expect(slot.takeAt(1, 11_000)).toBe(true);
    expect(slot.takeAt(5, 3_600_000_000)).toBe(true); // a long gap fills to the cap, no more
    expect(slot.takeAt(1, 3_600_000_000)).toBe(false);
  });

  it('does not accrue when frozen, and counts up to the freeze', () => {
    const slot = rateSlot(1000, 1_000_000, 100);
    slot.freezeRate(3_000);
    expect(slot.balanceTokens).toBe(3);
    expect(slot.takeAt(4, 1_000_000)).toBe(false);
    expect(slot.balanceTokens).toBe(3);
  });

  it('accrues in canTakeAt too, so all-or-nothing admission sees it', () => {
    const slot = rateSlot(1000, 1_000_000, 100);
    expect(slot.canTakeAt(2, 2_000)).toBe(true);
    expect(slot.canTakeAt(3, 2_000)).toBe(false);
  });
});

const rateGrant = (seq: number, fields: Partial<LeaseGrant> = {}): LeaseGrant =>
  grant(seq, {
    tokensGranted: 4,
    tokensHeld: 4,
    maxLeaseTokens: 50,
    rate: { tokensPerPeriod: 950, periodMs: 1000, capTokens: 10 },
    ...fields,
  });

describe('LeaseKeeper with rate leases', () => {
  it('starts accruing when the reply arrives, over the period stretched by the rate drift margin', () => {
    const keeper = keeperWith({ rateDriftMargin: 0.05 });
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(first.seq, rateGrant(first.seq), 100_000);
    // 950 per 1,052,632 µs (1 s / 0.95): the first token after 1109 µs (1108 × 950 < 1,052,632 ≤ 1109 × 950).
    expect(keeper.slot.ratePeriodUs).toBe(1_052_632);
    expect(keeper.slot.takeAt(4, 100_000)).toBe(true);
    expect(keeper.slot.takeAt(1, 100_000 + 1_108)).toBe(false);
    expect(keeper.slot.takeAt(1, 100_000 + 1_109)).toBe(true);
    // The default margin is 0.1%: 1 s / 0.999, rounded up.
    const byDefault = keeperWith();
    const req = acquireIn(byDefault.tick(0));
    byDefault.onReply(req.seq, rateGrant(req.seq), 0);
    expect(byDefault.slot.ratePeriodUs).toBe(1_001_002);
  });

  it('keeps the fraction accrued before a renewal for the same lease, drops it for a new one', () => {
    const keeper = keeperWith({ refreshMs: 100, rateDriftMargin: 0 });
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(
      first.seq,
      rateGrant(first.seq, { tokensGranted: 0, tokensHeld: 0, rate: { tokensPerPeriod: 10, periodMs: 1000, capTokens: 50 } }),
      0,
    );
    // 100 ms at 10/s: 1 token; at 150 ms: 1.5 tokens (0.5 carried).
    keeper.slot.takeAt(1, 150_000);
    const renew = acquireIn(keeper.tick(150_000));
    expect(renew.tokensLeft).toBe(0);
    keeper.onReply(
      renew.seq,
      rateGrant(renew.seq, { tokensGranted: 0, tokensHeld: 0, rate: { tokensPerPeriod: 10, periodMs: 1000, capTokens: 50 } }),
      160_000,
    );
    expect(keeper.slot.takeAt(1, 210_000)).toBe(true); // 0.5 carried + 0.5 in 50 ms
    const other = acquireIn(keeper.tick(400_000));
    keeper.onReply(
      other.seq,
      rateGrant(other.seq, {
        leaseId: 'L2',
        tokensGranted: 0,
        tokensHeld: 0,
        rate: { tokensPerPeriod: 10, periodMs: 1000, capTokens: 50 },
      }),
      400_000,
    );
    expect(keeper.slot.balanceTokens).toBe(0);
    expect(keeper.slot.takeAt(1, 499_999)).toBe(false); // nothing carried into a new lease
    expect(keeper.slot.takeAt(1, 500_000)).toBe(true);
  });

  it('asks again before its refresh when demand more than doubled, not within a quarter refresh', () => {
    const keeper = keeperWith({ refreshMs: 1000 });
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(first.seq, rateGrant(first.seq), 1_000);
    for (let t = 2_000; t < 240_000; t += 1_000) {
      keeper.slot.takeAt(5, t);
      expect(keeper.tick(t)).toEqual([]);
    }
    for (let t = 240_000; t < 400_000; t += 1_000) keeper.slot.takeAt(5, t);
    expect(only(keeper.tick(400_000)).message.op).toBe('acquire');
  });

  it('freezes the balance when it sends a renewal, and reports what it holds then', () => {
    const keeper = keeperWith({ refreshMs: 100 });
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(first.seq, rateGrant(first.seq, { tokensGranted: 0, tokensHeld: 0 }), 0);
    const renew = acquireIn(keeper.tick(100_000));
    expect(renew.tokensLeft).toBe(10); // 100 ms at ~900/s filled the cap of 10
    expect(keeper.slot.rateTokens).toBe(0);
    keeper.slot.takeAt(10, 100_000);
    expect(keeper.slot.takeAt(1, 500_000)).toBe(false); // frozen while the renewal is out
  });

  it('renews once per refresh interval, not whenever it runs low', () => {
    const keeper = keeperWith({ refreshMs: 500 });
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(first.seq, rateGrant(first.seq), 0);
    keeper.slot.takeAt(4, 1_000);
    keeper.slot.takeAt(100, 2_000); // denied: would ask at once for a chunk lease
    expect(keeper.tick(3_000)).toEqual([]);
    expect(keeper.nextDeadlineUs()).toBe(500_000);
    expect(only(keeper.tick(500_000)).message.op).toBe('acquire');
  });

  it('treats a grant without a rate as a chunk lease again', () => {
    const keeper = keeperWith({ refreshMs: 100 });
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(first.seq, rateGrant(first.seq), 0);
    const renew = acquireIn(keeper.tick(100_000));
    keeper.onReply(renew.seq, grantFor(renew, { maxLeaseTokens: 50 }), 101_000);
    expect(keeper.takeRejection()).toBeNull();
    expect(keeper.slot.rateTokens).toBe(0);
    const before = keeper.slot.balanceTokens;
    keeper.slot.takeAt(1, 900_000);
    expect(keeper.slot.balanceTokens).toBe(before - 1);
  });
});

describe('a rate lease gone idle', () => {
  it('reports its recent demand when its bucket is full, its 1 s estimate otherwise', () => {
    const slot = rateSlot(0, 1, 0, 1_000_000);
    const watch = new DemandWatch(slot, keeperOptions());
    // 1,000 tokens a second for 300 ms, then nothing for 200 ms.
    for (let t = 0; t <= 300_000; t += 1_000) {
      slot.takeAt(1, t);
      watch.observe(0, t);
    }
    const busySlow = watch.perSecond;
    expect(watch.perSecondOnWire(true)).toBe(watch.perSecondOnWire(false)); // the recent estimate is the higher
    for (let t = 310_000; t <= 500_000; t += 10_000) watch.observe(0, t);
    expect(watch.perSecondOnWire(false)).toBeGreaterThan(busySlow * 0.8); // e^(-0.2): the 1 s estimate barely moved
    expect(watch.perSecondOnWire(true)).toBeLessThan(busySlow * 0.1); // e^(-4): the 50 ms one is near none
  });

  it('asks again early when demand comes back, measured against what its request reported', () => {
    const options = keeperOptions({ refreshMs: 1000 });
    const grantOf = (): LeaseGrant => rateGrant(1);
    const idle = new RateRenewal(rateSlot(0, 1, 0), options);
    idle.granted(grantOf(), 0, false, 2); // reported 2/s, its 1 s estimate still higher
    expect(idle.outgrown(300_000, 100)).toBe(true);
    const busy = new RateRenewal(rateSlot(0, 1, 0), options);
    busy.granted(grantOf(), 0, false, 100);
    expect(busy.outgrown(300_000, 100)).toBe(false);
  });
});
