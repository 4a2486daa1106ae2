/**
 * Expected limits: what a lease client was told, by its own configuration,
 * to expect of a pool. The grant check (lease-client-grant.ts) otherwise
 * weighs a grant only against the limits the grant itself states, which a
 * responder that is not an honest coordinator states as generously as it
 * likes; with expected limits a grant above them is implausible whatever
 * it says of itself.
 *
 * Rules — with expected limits, a grant is implausible when it:
 * - names a capacity above `capacityTokens`, a lease limit above
 *   `maxLeaseTokens`, or an allowance above `allowanceTokens`;
 * - names a refill faster than `refillTokens` per `refillPeriodMs`, or
 *   gives a rate lease a rate faster than that.
 * Rates are compared exactly, as cross products in BigInt. How much a
 * series of grants may add up to over time is the agent's grant budget
 * (agent/src/core/grant-budget.ts), which reads the same limits.
 */
import type { LeaseGrant } from '../protocol/messages.js';
import { RATE_PERIOD_MS_MAX, RATE_TOKENS_MAX } from './rate.js';
import { WIRE_TOKENS_MAX } from '../protocol/limits.js';

/** ExpectedLimits — the most a client expects of a pool: B, the largest lease, the refill r, and A. */
export interface ExpectedLimits {
  /** B: the pool's capacity, tokens. */
  readonly capacityTokens: number;
  /** The most one lease holds, tokens (at most `capacityTokens`). */
  readonly maxLeaseTokens: number;
  /** The refill: `refillTokens` every `refillPeriodMs`. */
  readonly refillTokens: number;
  readonly refillPeriodMs: number;
  /** A: the pool's allowance, tokens; default 0. */
  readonly allowanceTokens?: number;
}

const isInt = (value: unknown, min: number, max: number): boolean =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;

/**
 * expectedLimitsFormProblem — why `value` is not an ExpectedLimits (in
 * words, naming the field), or null when it is one. Own keys only.
 */
export function expectedLimitsFormProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be an object';
  const field = (key: string): unknown => (Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined);
  const known = new Set(['capacityTokens', 'maxLeaseTokens', 'refillTokens', 'refillPeriodMs', 'allowanceTokens']);
  const unknown = Object.keys(value).find((key) => !known.has(key));
  if (unknown !== undefined) return `has an unknown field ${JSON.stringify(unknown)}`;
  const capacity = field('capacityTokens');
  if (!isInt(capacity, 1, WIRE_TOKENS_MAX)) return `capacityTokens must be an integer in [1, ${WIRE_TOKENS_MAX}]`;
  if (!isInt(field('maxLeaseTokens'), 1, capacity as number)) return 'maxLeaseTokens must be an integer in [1, capacityTokens]';
  if (!isInt(field('refillTokens'), 1, RATE_TOKENS_MAX)) return `refillTokens must be an integer in [1, ${RATE_TOKENS_MAX}]`;
  if (!isInt(field('refillPeriodMs'), 1, RATE_PERIOD_MS_MAX)) return `refillPeriodMs must be an integer in [1, ${RATE_PERIOD_MS_MAX}]`;
  const allowance = field('allowanceTokens');
  if (allowance !== undefined && !isInt(allowance, 0, WIRE_TOKENS_MAX))
    return `allowanceTokens must be an integer in [0, ${WIRE_TOKENS_MAX}]`;
  return null;
}

/** faster — whether `tokens` per `periodMs` is a faster rate than `limitTokens` per `limitPeriodMs` (exact). */
function faster(tokens: number, periodMs: number, limitTokens: number, limitPeriodMs: number): boolean {
  return BigInt(tokens) * BigInt(limitPeriodMs) > BigInt(limitTokens) * BigInt(periodMs);
}

/** expectedLimitsProblem — why `grant` states more than `expected` allows (see the rules), or null when it does not. */
export function expectedLimitsProblem(grant: LeaseGrant, expected: ExpectedLimits): string | null {
  if (grant.capacityTokens > expected.capacityTokens)
    return `names a capacity of ${grant.capacityTokens}, above the expected ${expected.capacityTokens}`;
  if (grant.maxLeaseTokens > expected.maxLeaseTokens)
    return `names a lease limit of ${grant.maxLeaseTokens}, above the expected ${expected.maxLeaseTokens}`;
  const allowanceTokens = grant.allowanceTokens ?? 0;
  if (allowanceTokens > (expected.allowanceTokens ?? 0))
    return `names an allowance of ${allowanceTokens}, above the expected ${expected.allowanceTokens ?? 0}`;
  const { refillTokens, refillPeriodMs } = expected;
  if (faster(grant.refillTokens, grant.refillPeriodMs, refillTokens, refillPeriodMs)) {
    return `names a refill of ${grant.refillTokens} per ${grant.refillPeriodMs} ms, faster than the expected ${refillTokens} per ${refillPeriodMs} ms`;
  }
  const rate = grant.rate;
  if (rate !== undefined && faster(rate.tokensPerPeriod, rate.periodMs, refillTokens, refillPeriodMs)) {
    return `gives a rate of ${rate.tokensPerPeriod} per ${rate.periodMs} ms, faster than the expected refill`;
  }
  return null;
}
