/**
 * Refunds (LeaseSlot.takeReceiptAt, giveBackAt, told): at fixed instants,
 * a take's tokens go back to its lease only within its told generation,
 * with the lease held and live, up to what the generation spent and a rate
 * lease's cap; fallback and shadow admissions spent nothing and get
 * nothing back. And the keeper starts a new generation whenever it tells
 * the coordinator the balance or the lease changes.
 */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { askFor, grantFor, keeperWith, only } from './lease-keeper.fixtures.js';
import { LeaseSlot, RECEIPT_DENIED, RECEIPT_NONE } from './lease-slot.js';

/** A live chunk lease of 10 tokens, expiring at 1 s. */
function liveSlot(balanceTokens = 10): LeaseSlot {
  const slot = new LeaseSlot('pool-a');
  Object.assign(slot, { balanceTokens, expiresAtUs: 1_000_000, hasLease: true, costMaxTokens: 50 });
  return slot;
}

describe('LeaseSlot refunds', () => {
  it('gives a take back to its lease within its told generation, counting it', () => {
    const slot = liveSlot();
    const receipt = slot.takeReceiptAt(3, 100);
    expect(receipt).toBe(slot.toldGeneration);
    expect(receipt).toBeGreaterThan(RECEIPT_NONE);
    expect([slot.balanceTokens, slot.toldSpentTokens]).toEqual([7, 3]);
    expect(slot.giveBackAt(3, receipt, 200)).toBe(3);
    expect([slot.balanceTokens, slot.toldSpentTokens, slot.refundedTokens, slot.refundedCount]).toEqual([10, 0, 3, 1]);
    // Counters only grow: admitted stays, refunded says what did not count.
    expect([slot.admittedTokens, slot.admittedCount]).toEqual([3, 1]);
  });

  // name, what happens between the take (3 tokens at 100 µs) and the give-back, give-back instant
  const dropped: readonly [string, (slot: LeaseSlot) => void, number][] = [
    ['the balance was told since (an acquire, a report, a return)', (slot) => slot.told(), 200],
    [
      'the lease ended (returned or expired, the keeper noticed)',
      (slot) => Object.assign(slot, { hasLease: false, balanceTokens: 0 }),
      200,
    ],
    [
      'a new lease was installed',
      (slot) => {
        slot.told();
        slot.balanceTokens = 20;
      },
      200,
    ],
    ['at the lease expiry instant', () => undefined, 1_000_000],
    ['after the lease expiry, before the keeper noticed', () => undefined, 1_500_000],
  ];

  it.each(dropped)('drops a give-back when %s: the take stays counted', (_name, between, atUs) => {
    const slot = liveSlot();
    const receipt = slot.takeReceiptAt(3, 100);
    between(slot);
    const balanceTokens = slot.balanceTokens;
    expect(slot.giveBackAt(3, receipt, atUs)).toBe(0);
    expect([slot.balanceTokens, slot.refundedTokens, slot.refundedCount]).toEqual([balanceTokens, 0, 0]);
  });

  it('gives back at most what the lease spent in the generation, however often a receipt is handed back', () => {
    const slot = liveSlot();
    slot.takeAt(2, 50);
    slot.told(); // the 2 above were told: they stay spent
    const receipt = slot.takeReceiptAt(3, 100);
    expect(slot.giveBackAt(5, receipt, 200)).toBe(3); // a larger cost than taken: only what was spent since told
    expect(slot.giveBackAt(3, receipt, 300)).toBe(0); // the same receipt again: nothing left
    expect([slot.balanceTokens, slot.refundedTokens, slot.refundedCount]).toEqual([8, 3, 1]);
  });

  it('gives takes of the same generation back in any order', () => {
    const slot = liveSlot();
    const first = slot.takeReceiptAt(4, 100);
    const second = slot.takeReceiptAt(5, 110);
    expect(first).toBe(second);
    expect(slot.giveBackAt(5, second, 200)).toBe(5);
    expect(slot.giveBackAt(4, first, 210)).toBe(4);
    expect(slot.balanceTokens).toBe(10);
  });

  it("never lifts a rate lease's balance above its cap: the excess is dropped", () => {
    const slot = liveSlot(10);
    slot.startRate(10, 1_000_000, 10, 0); // 10 a second, up to 10, full
    const receipt = slot.takeReceiptAt(4, 0);
    expect(slot.balanceTokens).toBe(6);
    // 200 ms later 2 have accrued (8): room for 2 of the 4.
    expect(slot.giveBackAt(4, receipt, 200_000)).toBe(2);
    expect([slot.balanceTokens, slot.refundedTokens]).toEqual([10, 2]);
    // Full: nothing more goes back, though the generation spent 2 more.
    expect(slot.toldSpentTokens).toBe(2);
    expect(slot.giveBackAt(2, receipt, 300_000)).toBe(0);
    expect(slot.balanceTokens).toBe(10);
  });

  it('gives a receipt of nothing for a denial, a fallback admission and a would-be denial of shadow mode, and never gives them back', () => {
    const slot = liveSlot(1);
    expect(slot.takeReceiptAt(5, 100)).toBe(RECEIPT_DENIED);
    slot.configureFallback(100, 10, 0);
    slot.fallbackActive = true;
    expect(slot.takeReceiptAt(5, 200)).toBe(RECEIPT_NONE);
    expect(slot.fallbackTokens).toBe(5);
    slot.fallbackActive = false;
    slot.shadowForced = true;
    expect(slot.takeReceiptAt(5, 300)).toBe(RECEIPT_NONE);
    expect(slot.shadowDeniedTokens).toBe(5);
    // Shadow mode admits what the lease holds as it would enforced: spent, so it can go back.
    const spent = slot.takeReceiptAt(1, 400);
    expect(spent).toBe(slot.toldGeneration);
    for (const receipt of [RECEIPT_DENIED, RECEIPT_NONE]) expect(slot.giveBackAt(5, receipt, 500)).toBe(0);
    expect(slot.balanceTokens).toBe(0);
    expect(slot.giveBackAt(1, spent, 500)).toBe(1);
    expect([slot.balanceTokens, slot.fallbackTokens, slot.refundedTokens]).toEqual([1, 5, 1]);
  });

  it('gives a receipt of nothing when the take itself made the keeper tell the balance (onLow acting at once)', () => {
    const slot = liveSlot();
    slot.lowWatermarkTokens = 8;
    slot.onLow = () => slot.told();
    const receipt = slot.takeReceiptAt(3, 100);
    expect(receipt).toBe(RECEIPT_NONE);
    expect(slot.giveBackAt(3, slot.toldGeneration, 200)).toBe(0); // nothing spent since that tell
    expect(slot.balanceTokens).toBe(7);
  });

  it('throws invalid-argument for a bad cost, changing nothing', () => {
    const slot = liveSlot();
    const receipt = slot.takeReceiptAt(3, 100);
    for (const cost of [0, -1, 1.5, Number.NaN]) {
      expect(() => slot.giveBackAt(cost, receipt, 200)).toThrow(AgentError);
    }
    expect([slot.balanceTokens, slot.toldSpentTokens, slot.refundedTokens]).toEqual([7, 3, 0]);
  });
});

describe('LeaseKeeper told generations', () => {
  it('a renewal drops the give-backs of takes before it; a grant on the same lease does not', () => {
    const keeper = keeperWith();
    const slot = keeper.slot;
    const first = askFor(keeper, 100, 0);
    keeper.onReply(first.seq, grantFor(first), 1_000);
    const before = slot.takeReceiptAt(4, 2_000);
    expect(slot.giveBackAt(4, before, 3_000)).toBe(4);
    const told = slot.takeReceiptAt(4, 4_000);
    const renewal = askFor(keeper, 200, 5_000); // the acquire tells the coordinator 96 are left
    expect(renewal.tokensLeft).toBe(96);
    expect(slot.giveBackAt(4, told, 6_000)).toBe(0);
    const during = slot.takeReceiptAt(2, 7_000); // while the renewal is in flight
    keeper.onReply(renewal.seq, grantFor(renewal, { tokensGranted: 50 }), 8_000);
    expect(slot.giveBackAt(2, during, 9_000)).toBe(2); // the grant counted 96, before this take: it may go back
    expect(slot.balanceTokens).toBe(96 + 50);
  });

  it('a new lease, a usage report, a return and an expiry each drop the give-backs of takes before them', () => {
    const keeper = keeperWith({ reportMs: 100 });
    const slot = keeper.slot;
    const first = askFor(keeper, 100, 0);
    keeper.onReply(first.seq, grantFor(first), 1_000);
    // A usage report tells what is left.
    const reported = slot.takeReceiptAt(10, 50_000);
    expect(only(keeper.tick(101_000)).message).toMatchObject({ op: 'report', tokensLeft: 90 });
    expect(slot.giveBackAt(10, reported, 102_000)).toBe(0);
    // A grant under a new lease id replaces the lease.
    const replaced = slot.takeReceiptAt(10, 103_000);
    const renewal = askFor(keeper, 200, 104_000);
    const during = slot.takeReceiptAt(5, 105_000);
    keeper.onReply(renewal.seq, grantFor(renewal, { leaseId: 'L2', tokensGranted: 60, tokensHeld: 60 }), 106_000);
    expect([slot.giveBackAt(10, replaced, 107_000), slot.giveBackAt(5, during, 107_000)]).toEqual([0, 0]);
    expect(slot.balanceTokens).toBe(60);
    // A return ends the lease.
    const returned = slot.takeReceiptAt(1, 108_000);
    expect(only(keeper.release(109_000)).message).toMatchObject({ op: 'return', leaseId: 'L2', tokensLeft: 59 });
    expect(slot.giveBackAt(1, returned, 110_000)).toBe(0);
    expect(slot.balanceTokens).toBe(0);
  });

  it('a lease the keeper found expired gives nothing back', () => {
    const keeper = keeperWith();
    const slot = keeper.slot;
    const first = askFor(keeper, 100, 0);
    keeper.onReply(first.seq, grantFor(first, { ttlMs: 100 }), 1_000);
    const receipt = slot.takeReceiptAt(3, 2_000);
    const generation = slot.toldGeneration;
    keeper.tick(slot.expiresAtUs);
    expect([slot.hasLease, slot.toldGeneration > generation]).toEqual([false, true]);
    expect(slot.giveBackAt(3, receipt, slot.expiresAtUs)).toBe(0);
  });
});
