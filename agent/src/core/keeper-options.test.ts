import { thrown } from '@tokenlease/shared/testing';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { DEFAULT_KEEPER_OPTIONS, keeperOptions, type KeeperOptions } from './keeper-options.js';

describe('keeperOptions', () => {
  it('returns the defaults when given nothing, as a copy', () => {
    const options = keeperOptions();
    expect(options).toEqual(DEFAULT_KEEPER_OPTIONS);
    expect(options).not.toBe(DEFAULT_KEEPER_OPTIONS);
    expect(keeperOptions({})).toEqual(DEFAULT_KEEPER_OPTIONS);
  });

  it('overlays the given fields on the defaults', () => {
    const options = keeperOptions({ holdMs: 0, initialTokens: 40, driftMargin: 0.1 });
    expect(options).toEqual({ ...DEFAULT_KEEPER_OPTIONS, holdMs: 0, initialTokens: 40, driftMargin: 0.1 });
  });

  const accepted: readonly [string, Partial<KeeperOptions>][] = [
    ['holdMs at 0', { holdMs: 0 }],
    ['holdMs at its maximum', { holdMs: 60_000 }],
    ['replyTimeoutMs at 1', { replyTimeoutMs: 1 }],
    ['initialTokens at 2^52', { initialTokens: 2 ** 52 }],
    ['backoffMsMax equal to backoffMsMin', { backoffMsMin: 300, backoffMsMax: 300 }],
    ['driftMargin at 0', { driftMargin: 0 }],
    ['driftMargin just under 0.5', { driftMargin: 0.499 }],
    ['idleReturnMs at one day', { idleReturnMs: 86_400_000 }],
    [
      'expectedLimits of B 100, leases of 20, 100/s',
      { expectedLimits: { capacityTokens: 100, maxLeaseTokens: 20, refillTokens: 100, refillPeriodMs: 1000 } },
    ],
    [
      'expectedLimits with an allowance',
      { expectedLimits: { ...{ capacityTokens: 100, maxLeaseTokens: 20, refillTokens: 100, refillPeriodMs: 1000 }, allowanceTokens: 50 } },
    ],
  ];
  it.each(accepted)('accepts %s', (_name, given) => {
    expect(keeperOptions(given)).toMatchObject(given);
  });

  const refused: readonly [string, Partial<KeeperOptions>][] = [
    ['holdMs', { holdMs: -1 }],
    ['holdMs', { holdMs: 60_001 }],
    ['holdMs', { holdMs: 1.5 }],
    ['holdMs', { holdMs: Number.NaN }],
    ['replyTimeoutMs', { replyTimeoutMs: 0 }],
    ['refreshMs', { refreshMs: 0 }],
    ['refreshMs', { refreshMs: 3_600_001 }],
    ['idleReturnMs', { idleReturnMs: 0 }],
    ['initialTokens', { initialTokens: 0 }],
    ['initialTokens', { initialTokens: 2 ** 52 + 1 }],
    ['backoffMsMin', { backoffMsMin: 0 }],
    ['backoffMsMax', { backoffMsMin: 100, backoffMsMax: 99 }],
    ['backoffMsMax', { backoffMsMax: 600_001 }],
    ['assumedTtlMs', { assumedTtlMs: 0 }],
    ['assumedTtlMs', { assumedTtlMs: Number.POSITIVE_INFINITY }],
    ['driftMargin', { driftMargin: -0.01 }],
    ['driftMargin', { driftMargin: 0.5 }],
    ['driftMargin', { driftMargin: Number.NaN }],
    ['expectedLimits', { expectedLimits: { capacityTokens: 100 } as never }],
    ['maxLeaseTokens', { expectedLimits: { capacityTokens: 100, maxLeaseTokens: 101, refillTokens: 1, refillPeriodMs: 1 } }],
    ['refillPeriodMs', { expectedLimits: { capacityTokens: 100, maxLeaseTokens: 10, refillTokens: 1, refillPeriodMs: 0 } }],
    [
      'allowanceTokens',
      { expectedLimits: { capacityTokens: 100, maxLeaseTokens: 10, refillTokens: 1, refillPeriodMs: 1, allowanceTokens: -1 } },
    ],
    [
      'unknown field',
      { expectedLimits: { capacityTokens: 100, maxLeaseTokens: 10, refillTokens: 1, refillPeriodMs: 1, capacity: 5 } as never },
    ],
    ['capacity', { expectedLimits: { capacityTokens: 2 ** 52, maxLeaseTokens: 10, refillTokens: 7, refillPeriodMs: 86_400_000 } }],
    // A misspelled option would otherwise be silently left at its default.
    ['idleReturn is not a keeper option', { idleReturn: 500 } as never],
  ];
  it.each(refused)('refuses a bad %s (%j) with invalid-argument naming the field', (field, given) => {
    const error = thrown(AgentError, () => keeperOptions(given));
    expect(error.code).toBe('invalid-argument');
    expect(error.message).toContain(field);
  });
});

describe('agentClass', () => {
  it('is null by default, kept when valid, refused with a space or empty', () => {
    expect(keeperOptions().agentClass).toBeNull();
    expect(keeperOptions({ agentClass: 'premium' }).agentClass).toBe('premium');
    expect(() => keeperOptions({ agentClass: 'pre mium' })).toThrow(/agentClass/);
    expect(() => keeperOptions({ agentClass: '' })).toThrow(/agentClass/);
  });
});
