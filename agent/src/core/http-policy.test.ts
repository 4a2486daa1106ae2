/**
 * HttpPolicy: pool names from keys, the fields' syntax and values, and the
 * refusals' statuses, bodies and Retry-After.
 */
import { describe, expect, it } from 'vitest';
import {
  denial,
  limitFields,
  missingKey,
  quotaWindow,
  rateLimitField,
  rateLimitPolicyField,
  retryAfterSeconds,
  sfString,
} from './http-policy.js';

const LIMITS = { capacityTokens: 100, maxLeaseTokens: 10, refillTokens: 100, refillPeriodMs: 1000, allowanceTokens: 0, window: false };

describe('HttpPolicy', () => {
  it.each([
    [1, 1],
    [1000, 1],
    [1001, 2],
    [0, 1],
    [2500, 3],
  ])('Retry-After of %i ms is %i s', (ms, seconds) => expect(retryAfterSeconds(ms)).toBe(seconds));

  // q is B + A + the refill over w, rounded up: never less than the fleet may admit in w seconds.
  it.each([
    [100, 1000, 0, 200, 1],
    [60, 60_000, 0, 160, 60],
    [2, 100, 0, 120, 1],
    [1, 1500, 0, 102, 2],
    [3, 7000, 0, 103, 7],
    [100, 1000, 25, 225, 1],
  ])(
    'B 100 and a refill of %i per %i ms, A %i: q=%i, w=%i',
    (refillTokens, refillPeriodMs, allowanceTokens, quotaTokens, windowSeconds) => {
      expect(quotaWindow({ ...LIMITS, refillTokens, refillPeriodMs, allowanceTokens })).toEqual({ quotaTokens, windowSeconds });
    },
  );

  it.each([
    [60_000, 100, 60],
    [1000, 100, 1],
    [1500, 200, 2],
  ])('a sliding window of %i ms and limit 100: q=%i, w=%i', (windowMs, quotaTokens, windowSeconds) => {
    const limits = { ...LIMITS, refillTokens: 100, refillPeriodMs: windowMs, window: true };
    expect(quotaWindow(limits)).toEqual({ quotaTokens, windowSeconds });
  });

  it('writes both fields as structured-field lists, leaving out pools without limits', () => {
    const views = [
      { policy: 'global', limits: LIMITS, remainingTokens: 7.9, moreAfterMs: 2, partitionKey: null },
      {
        policy: 'tenant',
        limits: { ...LIMITS, refillTokens: 5 },
        remainingTokens: 0,
        moreAfterMs: 1200,
        partitionKey: new Uint8Array([1, 2, 255]),
      },
      { policy: 'new', limits: null, remainingTokens: 0, moreAfterMs: 2, partitionKey: null },
    ];
    expect(rateLimitPolicyField(views)).toBe('"global";q=200;w=1, "tenant";q=105;w=1;pk=:AQL/:');
    expect(rateLimitField(views)).toBe('"global";r=7;t=1, "tenant";r=0;t=2;pk=:AQL/:');
    // One limit in the older formats: the pool with the fewest tokens left.
    expect(limitFields('draft-6', views, 0)).toEqual([
      ['RateLimit-Policy', '105;w=1'],
      ['RateLimit-Limit', '105'],
      ['RateLimit-Remaining', '0'],
      ['RateLimit-Reset', '2'],
    ]);
    expect(limitFields('x-ratelimit', views, 1_700_000_000_500)).toContainEqual(['X-RateLimit-Reset', '1700000003']);
    expect(limitFields('off', views, 0)).toEqual([]);
    expect(limitFields('draft-7', [views[2] as (typeof views)[number]], 0)).toEqual([]);
    expect(rateLimitField([views[2] as (typeof views)[number]])).toBeNull();
    expect(sfString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(() => sfString('é')).toThrow(RangeError);
  });

  it.each([
    ['exhausted', 1500, false, 429, 'rate-limited', 2],
    ['no-lease', 3, false, 429, 'rate-limited', 1],
    ['expired', 3, true, 503, 'unavailable', 1],
    ['never-fits', null, false, 413, 'never-fits', null],
    ['unknown-pool', null, false, 500, 'unknown-pool', null],
  ] as const)('a denial for %s (%s ms, unavailable %s) is %i %s, Retry-After %s', (reason, ms, unavailable, status, type, seconds) => {
    const refusal = denial('api', 'api', reason, ms, unavailable);
    expect([refusal.status, refusal.problem.type, refusal.retryAfterSeconds]).toEqual([status, `urn:tokenlease:problem:${type}`, seconds]);
    expect(refusal.problem.status).toBe(status);
  });

  it("refuses a request without its key with the rule's status", () => {
    expect(missingKey('tenant', 401, 'x-tenant header')).toMatchObject({
      status: 401,
      problem: { type: 'urn:tokenlease:problem:missing-key' },
    });
  });
});
