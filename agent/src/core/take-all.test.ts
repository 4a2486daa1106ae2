/**
 * takeAllAt: several pools charged together or not at all, at fixed instants.
 */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { LeaseSlot } from './lease-slot.js';
import { takeAllAt, type SlotCharge } from './take-all.js';

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
