/**
 * takeAllAt: several pools charged together or not at all, at fixed
 * instants; with receipts, given back together (giveBackAllAt).
 */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { LeaseSlot, RECEIPT_DENIED } from './lease-slot.js';
import { giveBackAllAt, takeAllAt, type SlotCharge } from './take-all.js';

function slot(pool: string, balanceTokens: number, expiresAtUs = 1_000): LeaseSlot {
  const s = new LeaseSlot(pool);
  s.balanceTokens = balanceTokens;
  s.expiresAtUs = expiresAtUs;
  s.hasLease = true;
  return s;
}

const charge = (s: LeaseSlot, cost: number): SlotCharge => ({ limiter: { slot: s }, cost });

describe('takeAllAt', () => {
  it('spends every part when every part fits', () => {
    const global = slot('global', 10);
    const tenant = slot('tenant-a', 3);
    expect(takeAllAt([charge(global, 2), charge(tenant, 3)], 500)).toBe(-1);
    expect([global.balanceTokens, tenant.balanceTokens]).toEqual([8, 0]);
    expect([global.admittedTokens, tenant.admittedTokens]).toEqual([2, 3]);
  });

  it.each<[string, () => LeaseSlot, number, string]>([
    ['too few tokens', () => slot('tenant-a', 2), 1, 'exhausted'],
    ['an expired lease', () => slot('tenant-a', 9, 400), 1, 'expired'],
    ['no lease yet', () => new LeaseSlot('tenant-a'), 1, 'no-lease'],
  ])('spends nothing when one part is denied: %s', (_name, makeTenant, index, reason) => {
    const global = slot('global', 10);
    const tenant = makeTenant();
    const before = tenant.balanceTokens;
    expect(takeAllAt([charge(global, 2), charge(tenant, 3)], 500)).toBe(index);
    expect(global.balanceTokens).toBe(10);
    expect(global.admittedTokens).toBe(0);
    expect(global.deniedTokens).toBe(0);
    expect(tenant.balanceTokens).toBe(before);
    expect(tenant.lastDenial).toBe(reason);
    expect(tenant.deniedTokens).toBe(3);
  });

  it('refuses the same pool twice and a bad cost before spending anything', () => {
    const global = slot('global', 10);
    expect(() => takeAllAt([charge(global, 1), charge(global, 1)], 500)).toThrow(AgentError);
    const tenant = slot('tenant-a', 10);
    expect(() => takeAllAt([charge(global, 1), charge(tenant, 0.5)], 500)).toThrow(AgentError);
    expect([global.balanceTokens, tenant.balanceTokens]).toEqual([10, 10]);
  });

  it('admits an empty charge list', () => {
    expect(takeAllAt([], 0)).toBe(-1);
  });
});

describe('takeAllAt receipts and giveBackAllAt', () => {
  it('writes each part its receipt on admission, none on a denial, and gives each part back by its own rules', () => {
    const global = slot('global', 10);
    const tenant = slot('tenant-a', 3);
    const charges = [charge(global, 2), charge(tenant, 3)];
    const receipts = [RECEIPT_DENIED, RECEIPT_DENIED];
    expect(takeAllAt(charges, 500, receipts)).toBe(-1);
    expect(receipts).toEqual([global.toldGeneration, tenant.toldGeneration]);
    expect(takeAllAt(charges, 510, [7, 7])).toBe(1); // the tenant is empty: nothing spent, nothing written
    global.told(); // the global pool's keeper renewed meanwhile: its part stays counted
    expect(giveBackAllAt(charges, receipts, 600)).toBe(3);
    expect([global.balanceTokens, tenant.balanceTokens]).toEqual([8, 3]);
    expect([global.refundedTokens, tenant.refundedTokens]).toEqual([0, 3]);
  });

  it('throws for a bad cost before giving anything back', () => {
    const global = slot('global', 10);
    const receipt = global.takeReceiptAt(2, 500);
    expect(() => giveBackAllAt([charge(global, 2), charge(slot('tenant-a', 3), 0)], [receipt, receipt], 600)).toThrow(AgentError);
    expect(global.balanceTokens).toBe(8);
  });
});
