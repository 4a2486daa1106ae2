/**
 * The lease client's settings: one set of defaults, and every rule refuses
 * what it names and keeps its bounds.
 */
import { describe, expect, it } from 'vitest';
import { HOLD_MS_DEFAULT } from '../protocol/limits.js';
import { LEASE_CLIENT_DEFAULTS, leaseClientSettingProblem, type LeaseClientSettings } from './lease-client-settings.js';

describe('LEASE_CLIENT_DEFAULTS', () => {
  it('are the safe ones where an agent’s and a relay’s differed, and keep every rule', () => {
    expect(LEASE_CLIENT_DEFAULTS).toEqual({
      holdMs: HOLD_MS_DEFAULT,
      replyTimeoutMs: 500,
      driftMargin: 0.1,
      refreshMs: 1000,
      leaseTtlMsMax: 3_600_000,
      agentClass: null,
    });
    for (const [key, value] of Object.entries(LEASE_CLIENT_DEFAULTS)) {
      expect(leaseClientSettingProblem(key as keyof LeaseClientSettings, value), key).toBeNull();
    }
  });
});

describe('leaseClientSettingProblem', () => {
  const accepted: readonly [keyof LeaseClientSettings, unknown][] = [
    ['holdMs', 0],
    ['holdMs', 60_000],
    ['replyTimeoutMs', 1],
    ['replyTimeoutMs', 60_000],
    ['refreshMs', 3_600_000],
    ['leaseTtlMsMax', 86_400_000],
    ['driftMargin', 0],
    ['driftMargin', 0.499],
    ['agentClass', 'relay-eu'],
    ['agentClass', null],
  ];
  it.each(accepted)('accepts %s %j', (key, value) => {
    expect(leaseClientSettingProblem(key, value)).toBeNull();
  });

  const refused: readonly [keyof LeaseClientSettings, unknown, string][] = [
    ['holdMs', -1, 'must be an integer in [0, 60000]'],
    ['holdMs', 60_001, 'must be an integer in [0, 60000]'],
    ['holdMs', 1.5, 'must be an integer in [0, 60000]'],
    ['holdMs', '200', 'must be an integer in [0, 60000]'],
    ['replyTimeoutMs', 0, 'must be an integer in [1, 60000]'],
    ['refreshMs', 3_600_001, 'must be an integer in [1, 3600000]'],
    ['leaseTtlMsMax', Number.POSITIVE_INFINITY, 'must be an integer in [1, 86400000]'],
    ['driftMargin', -0.01, 'must be in [0, 0.5)'],
    ['driftMargin', 0.5, 'must be in [0, 0.5)'],
    ['driftMargin', Number.NaN, 'must be in [0, 0.5)'],
    ['driftMargin', '0.1', 'must be in [0, 0.5)'],
    ['agentClass', 'relay eu', 'must be 1 to 128 printable ASCII characters without spaces, or null'],
    ['agentClass', '', 'must be 1 to 128 printable ASCII characters without spaces, or null'],
    ['agentClass', 7, 'must be 1 to 128 printable ASCII characters without spaces, or null'],
  ];
  it.each(refused)('refuses %s %j', (key, value, rule) => {
    expect(leaseClientSettingProblem(key, value)).toBe(rule);
  });
});
