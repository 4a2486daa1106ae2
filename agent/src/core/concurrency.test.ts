/**
 * A keeper and its slot on a concurrency pool (the grant names a slot hold
 * bound): slots taken and given back locally, what each message tells the
 * coordinator (free plus busy slots while the lease lasts, free ones only on
 * a return), holds that outlive their lease, the hold bound on the agent's
 * clock, shadow mode, and the grants and calls refused.
 */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { acquireIn, askFor, grantFor, keeperWith, only } from './lease-keeper.fixtures.js';

const HOLD_MS = 1000;
/** The hold bound on the agent's clock at the fixtures' drift margin of 0.05, µs. */
const HOLD_US = 950_000;

/** A keeper holding lease L1 of `slots` slots of a concurrency pool, asked for at 0 and granted at 1 ms. */
function slotted(slots = 4): LeaseKeeper {
  const keeper = keeperWith({ initialTokens: 1 });
  const request = askFor(keeper, slots, 0);
  expect(keeper.onReply(request.seq, grantFor(request, { tokensGranted: slots, holdMs: HOLD_MS }), 1_000)).toEqual([]);
  return keeper;
}

describe('a keeper on a concurrency pool', () => {
  it('takes slots without I/O and gives a released one back to the lease at once', () => {
    const keeper = slotted(2);
    const slot = keeper.slot;
    expect(slot.concurrency).toBe(true);
    expect(slot.holds.holdUs).toBe(HOLD_US);
    const a = slot.acquireAt(2_000);
    const b = slot.acquireAt(2_000);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    expect(slot.acquireAt(2_000)).toBe(0);
    expect(slot.lastDenial).toBe('exhausted');
    expect(slot.releaseAt(a, 3_000)).toBe(true);
    expect(slot.releaseAt(a, 3_000)).toBe(false);
    expect(slot.balanceTokens).toBe(1);
    expect(slot.acquireAt(3_000)).toBeGreaterThan(0);
    expect(slot.busySlots).toBe(2);
  });

  it('counts a hold released at its bound, on its own clock, whatever the request does', () => {
    const keeper = slotted(1);
    const slot = keeper.slot;
    const a = slot.acquireAt(10_000);
    expect(slot.acquireAt(10_000 + HOLD_US - 1)).toBe(0);
    const b = slot.acquireAt(10_000 + HOLD_US);
    expect(b).toBeGreaterThan(0);
    expect(slot.releaseAt(a, 10_000 + HOLD_US)).toBe(false);
    expect(slot.busySlots).toBe(1);
  });

  it('tells the coordinator its free and busy slots on a renewal, and only the free ones on a return', () => {
    const keeper = slotted(4);
    const slot = keeper.slot;
    slot.acquireAt(1_500_000);
    slot.acquireAt(1_500_000);
    slot.acquireAt(1_500_000);
    // Renewal time: the lease is in use.
    const renewal = acquireIn(keeper.tick(1_880_000));
    expect(renewal.leaseId).toBe('L1');
    expect(renewal.tokensLeft).toBe(4);
    expect(keeper.onReply(renewal.seq, grantFor(renewal, { tokensGranted: 0, holdMs: HOLD_MS }), 1_900_000)).toEqual([]);
    const { message } = only(keeper.close(1_900_000));
    expect(message.op).toBe('return');
    if (message.op === 'return') expect(message.tokensLeft).toBe(1);
  });

  it('resumes a lease that lapsed here while its renewal was held: its busy slots come back to it as their requests end', () => {
    const keeper = slotted(3);
    const slot = keeper.slot;
    const a = slot.acquireAt(1_500_000);
    const b = slot.acquireAt(1_500_000);
    // The renewal tells 1 free and 2 busy; the coordinator holds it past the agent-side expiry (1.9 s).
    const renewal = acquireIn(keeper.tick(1_880_000));
    expect(renewal).toMatchObject({ leaseId: 'L1', tokensLeft: 3 });
    keeper.tick(1_900_000);
    expect(slot.hasLease).toBe(false);
    // One request ends while the lease is lapsed here: nothing to give back to.
    expect(slot.releaseAt(a, 1_950_000)).toBe(true);
    expect(slot.balanceTokens).toBe(0);
    // The renewal lands: L1 goes on with 3 slots, of which 1 is still busy.
    keeper.onReply(renewal.seq, grantFor(renewal, { tokensGranted: 0, tokensHeld: 3, holdMs: HOLD_MS }), 2_000_000);
    expect(slot.hasLease).toBe(true);
    expect(slot.balanceTokens).toBe(2);
    expect(slot.busySlots).toBe(1);
    expect(keeper.stats.leasesStarted).toBe(1);
    // The other request ends: its slot is L1's again.
    expect(slot.releaseAt(b, 2_100_000)).toBe(true);
    expect(slot.balanceTokens).toBe(3);
  });

  it('asks for nothing while every slot of a lease at its largest size is busy, however often acquires are refused', () => {
    const keeper = keeperWith({ initialTokens: 1 });
    const request = askFor(keeper, 2, 0);
    keeper.onReply(request.seq, grantFor(request, { tokensGranted: 2, holdMs: HOLD_MS, maxLeaseTokens: 2, capacityTokens: 10 }), 1_000);
    const slot = keeper.slot;
    expect(slot.acquireAt(2_000)).toBeGreaterThan(0);
    expect(slot.acquireAt(2_000)).toBeGreaterThan(0);
    for (let t = 3_000; t < 100_000; t += 1_000) {
      expect(slot.acquireAt(t)).toBe(0);
      // Refused: the lease is all busy, and a lease may hold no more than 2: asking would be answered with nothing.
      expect(keeper.tick(t)).toEqual([]);
    }
  });

  it('gives nothing back to a new lease for a hold taken under the one before', () => {
    const keeper = slotted(2);
    const slot = keeper.slot;
    const old = slot.acquireAt(1_800_000);
    // The lease lapses in hand (agent-side expiry 1.9 s after the send at 0); the next grant opens L2.
    keeper.tick(1_900_000);
    expect(slot.hasLease).toBe(false);
    expect(slot.busySlots).toBe(0);
    expect(slot.holdsInFlight).toBe(1);
    const request = askFor(keeper, 2, 1_900_000);
    expect(request.tokensLeft).toBe(0);
    keeper.onReply(request.seq, grantFor(request, { leaseId: 'L2', tokensGranted: 2, holdMs: HOLD_MS }), 1_901_000);
    expect(slot.releaseAt(old, 1_902_000)).toBe(true);
    expect(slot.balanceTokens).toBe(2);
    expect(slot.busySlots).toBe(0);
  });

  it('admits a refusal in shadow mode with a hold that frees nothing', () => {
    const keeper = slotted(1);
    const slot = keeper.slot;
    slot.shadowForced = true;
    const counted = slot.acquireAt(2_000);
    const shadowed = slot.acquireAt(2_000);
    expect(shadowed).toBeGreaterThan(0);
    expect(slot.shadowDeniedCount).toBe(1);
    expect(slot.busySlots).toBe(1);
    expect(slot.releaseAt(shadowed, 3_000)).toBe(true);
    expect(slot.balanceTokens).toBe(0);
    expect(slot.releaseAt(counted, 3_000)).toBe(true);
    expect(slot.balanceTokens).toBe(1);
  });

  it('refuses acquire on a pool that leases tokens, as a typed error', () => {
    const keeper = keeperWith();
    const request = askFor(keeper, 5, 0);
    keeper.onReply(request.seq, grantFor(request, { tokensGranted: 5 }), 1_000);
    expect(() => keeper.slot.acquireAt(2_000)).toThrow(AgentError);
    expect(keeper.slot.balanceTokens).toBe(5);
  });

  it('refuses a grant that turns its lease from slots to tokens, or names a hold bound on a window', () => {
    const keeper = slotted(2);
    const slot = keeper.slot;
    slot.acquireAt(1_500_000);
    const renewal = acquireIn(keeper.tick(1_880_000));
    keeper.onReply(renewal.seq, grantFor(renewal, { tokensGranted: 0 }), 1_880_000);
    expect(keeper.takeRejection()).toMatch(/mid-lease from slots to tokens/);
    expect(slot.concurrency).toBe(true);
    expect(slot.busySlots).toBe(1);

    const other = keeperWith({ initialTokens: 1 });
    const ask = askFor(other, 2, 0);
    other.onReply(ask.seq, grantFor(ask, { tokensGranted: 2, holdMs: HOLD_MS, window: true }), 1_000);
    expect(other.takeRejection()).toMatch(/hold bound of 1000 ms on a window lease/);
    expect(other.slot.hasLease).toBe(false);
  });

  it('keeps to the most slots a grant allows: free ones above it go at once, released ones are not reused above it', () => {
    const keeper = slotted(4);
    const slot = keeper.slot;
    const held = [slot.acquireAt(1_500_000), slot.acquireAt(1_500_000), slot.acquireAt(1_500_000)];
    const renewal = acquireIn(keeper.tick(1_880_000));
    expect(renewal.tokensLeft).toBe(4);
    keeper.onReply(renewal.seq, grantFor(renewal, { tokensGranted: 0, holdMs: HOLD_MS, slotsMax: 2 }), 1_881_000);
    expect(slot.balanceTokens).toBe(0);
    expect(slot.releaseAt(held[0] as number, 1_882_000)).toBe(true);
    expect(slot.balanceTokens).toBe(0);
    expect(slot.releaseAt(held[1] as number, 1_882_000)).toBe(true);
    expect(slot.balanceTokens).toBe(1);
    expect(slot.balanceTokens + slot.heldSlots).toBe(2);
  });

  it('names no lease after letting one lapse, and counts the slots its requests still hold when that lease is granted again', () => {
    const keeper = keeperWith({ initialTokens: 1 });
    const slot = keeper.slot;
    const first = askFor(keeper, 2, 0);
    keeper.onReply(first.seq, grantFor(first, { tokensGranted: 2, holdMs: 5000 }), 1_000);
    slot.acquireAt(1_800_000);
    keeper.tick(1_900_000);
    expect(slot.hasLease).toBe(false);
    const request = askFor(keeper, 2, 1_900_000);
    expect(request.leaseId).toBeNull();
    // The coordinator still had L1 (the agent stops first) and renewed it: its earlier request still holds a slot of it.
    keeper.onReply(request.seq, grantFor(request, { leaseId: 'L1', tokensGranted: 1, tokensHeld: 3, holdMs: 5000 }), 1_901_000);
    expect(slot.balanceTokens).toBe(1);
    slot.acquireAt(3_000_000);
    const renewal = acquireIn(keeper.tick(1_900_000 + 1_900_000 - 20_000));
    expect(renewal.leaseId).toBe('L1');
    // Its own request and the earlier one's: never taken for free while that one runs.
    expect(renewal.tokensLeft).toBe(2);
  });

  it('refuses take on a pool of slots, as a typed error', () => {
    const keeper = slotted(2);
    expect(() => keeper.slot.takeAt(1, 2_000)).toThrow(/use acquire and release/);
    expect(keeper.slot.balanceTokens).toBe(2);
  });
});
