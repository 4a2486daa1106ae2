/**
 * The chaos checks on hand-made logs: they must flag what they exist to flag.
 */
import { describe, expect, it } from 'vitest';
import type { LoggedAdmission } from '@tokenlease/harness/fleet';
import { expiryViolations, recoveryMs } from './checks.js';

const at = (tUs: number, leaseId = 'L1', cost = 1): LoggedAdmission => ({ tUs, cost, leaseId, source: 'lease' });

describe('expiryViolations', () => {
  const grants = [
    { leaseId: 'L1', tUs: 1_000, ttlMs: 100 },
    { leaseId: 'L1', tUs: 90_000, ttlMs: 100 },
  ];
  it.each<[string, LoggedAdmission, number]>([
    ['inside the first grant', at(50_000), 0],
    ['inside the renewal', at(189_999), 0],
    ['at the expiry of the renewal', at(190_000), 1],
    ['before any grant of that lease', at(500), 1],
    ['from a lease never granted', at(50_000, 'L9'), 1],
  ])('%s', (_name, admission, problems) => {
    expect(expiryViolations([admission], grants)).toHaveLength(problems);
  });
});

describe('recoveryMs', () => {
  // 200 tokens/s: 90% over 500 ms is 90 tokens.
  const steady = (fromUs: number, toUs: number, everyUs: number): LoggedAdmission[] =>
    Array.from({ length: Math.floor((toUs - fromUs) / everyUs) }, (_, i) => at(fromUs + i * everyUs));
  it('is 0 when the rate never dropped', () => {
    expect(recoveryMs(steady(0, 2_000_000, 5_000), 0, 200)).toBe(0);
  });
  it('is the gap when admissions stopped, then came back at full rate', () => {
    const logs = [...steady(0, 1_000_000, 5_000), ...steady(1_800_000, 3_000_000, 5_000)];
    expect(recoveryMs(logs, 1_000_000, 200)).toBe(800);
  });
  it('is null when the rate never came back', () => {
    expect(recoveryMs(steady(0, 3_000_000, 20_000), 0, 200)).toBeNull();
  });
});
