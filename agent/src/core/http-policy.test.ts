/**
 * HttpPolicy: pool names from keys, the fields' syntax and values, and the
 * refusals' statuses, bodies and Retry-After.
 */
import { describe, expect, it } from 'vitest';
import {
  denial,
  encodeKey,
  missingKey,
  quotaWindow,
  rateLimitField,
  rateLimitPolicyField,
  retryAfterSeconds,
  sfString,
} from './http-policy.js';

const LIMITS = { capacityTokens: 100, maxLeaseTokens: 10, refillTokens: 100, refillPeriodMs: 1000 };

describe('HttpPolicy', () => {
  it.each([
    ['acme', 'tenant:acme'],
    ['10.0.0.1', 'tenant:10%2E0%2E0%2E1'],
    ['a b*c>d%', 'tenant:a%20b%2Ac%3Ed%25'],
    ['é', 'tenant:%C3%A9'],
    ['', null],
    ['x'.repeat(122), null],
    ['x'.repeat(121), `tenant:${'x'.repeat(121)}`],
  ])('encodeKey(tenant, %j) is %j: distinct keys, distinct pools', (key, pool) => {
    expect(encodeKey('tenant', key)).toBe(pool);
  });

  it.each([
    [1, 1],
    [1000, 1],
    [1001, 2],
    [0, 1],
    [2500, 3],
  ])('Retry-After of %i ms is %i s', (ms, seconds) => expect(retryAfterSeconds(ms)).toBe(seconds));

  it.each([
    [100, 1000, 100, 1],
    [60, 60_000, 60, 60],
    [2, 100, 20, 1],
    [1, 1500, 1, 2],
  ])('a refill of %i per %i ms is q=%i, w=%i', (refillTokens, refillPeriodMs, quotaTokens, windowSeconds) => {
    expect(quotaWindow({ ...LIMITS, refillTokens, refillPeriodMs })).toEqual({ quotaTokens, windowSeconds });
  });

  it('writes both fields as structured-field lists, leaving out pools without limits', () => {
    const views = [
      { policy: 'global', limits: LIMITS, remainingTokens: 7.9, moreAfterMs: 2 },
      { policy: 'tenant', limits: { ...LIMITS, refillTokens: 5 }, remainingTokens: 0, moreAfterMs: 1200 },
      { policy: 'new', limits: null, remainingTokens: 0, moreAfterMs: 2 },
    ];
    expect(rateLimitPolicyField(views)).toBe('"global";q=100;w=1, "tenant";q=5;w=1');
    expect(rateLimitField(views)).toBe('"global";r=7;t=1, "tenant";r=0;t=2');
    expect(rateLimitField([views[2] as (typeof views)[number]])).toBeNull();
    expect(sfString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(() => sfString('é')).toThrow(RangeError);
  });

  it.each([
    ['exhausted', 1500, false, 429, 'rate-limited', 2],
    ['no-lease', 3, false, 429, 'rate-limited', 1],
    ['expired', 3, true, 503, 'unavailable', 1],
    ['never-fits', null, false, 429, 'never-fits', null],
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
