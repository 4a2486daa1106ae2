/**
 * The lease client's grant check: the defence in depth of every lease
 * client (an agent's keeper, a relay's uplink) against a responder that is
 * not an honest coordinator (NATS permissions are the first line). One
 * check for both: a relay is an agent toward the root.
 *
 * Rules — a grant is implausible, and refused as an error that changes
 * nothing, when it:
 * - adds more tokens than the request asked for, or holds fewer than it adds;
 * - holds more than the pool's `maxLeaseTokens`, or that exceeds its capacity;
 * - lasts longer than the client's `leaseTtlMsMax`;
 * - names another capacity than the grant before it on the same lease;
 * - gives a rate above the pool's refill, or a cap above `maxLeaseTokens`;
 * - names a slot hold bound (a concurrency pool) with a rate or a window,
 *   or a most slots to keep without a hold bound;
 * - states more than the client's own expected limits, when it has them
 *   (expected-limits.ts): the limits a grant states are the responder's
 *   word, the expected ones the client's configuration.
 * A client may refuse more on its own account (a relay: a grant for
 * another pool than the one it serves); never less.
 */
import type { LeaseGrant, LeaseRequest } from '../protocol/messages.js';
import { expectedLimitsProblem, type ExpectedLimits } from './expected-limits.js';

/** SECRET_PATTERN — a lease secret: 22 (128 bits) to 128 characters of base64url. */
export const SECRET_PATTERN = /^[A-Za-z0-9_-]{22,128}$/;

/** GrantCheckLimits — the client's own limits a grant is checked against: the longest TTL it accepts, ms, and what it expects of the pool (null or absent: nothing). */
export interface GrantCheckLimits {
  readonly leaseTtlMsMax: number;
  readonly expectedLimits?: ExpectedLimits | null;
}

/**
 * grantProblem — why `grant`, the reply to `request`, is implausible, or
 * null when it is not. `capacityTokens` is the capacity the same lease's
 * last grant named (0: a new lease, any capacity).
 */
export function grantProblem(grant: LeaseGrant, request: LeaseRequest, limits: GrantCheckLimits, capacityTokens: number): string | null {
  if (grant.tokensGranted > request.tokensWanted)
    return `grants ${grant.tokensGranted} tokens where ${request.tokensWanted} were asked for`;
  if (grant.tokensGranted > grant.tokensHeld) return `grants ${grant.tokensGranted} tokens but says the lease holds ${grant.tokensHeld}`;
  if (grant.maxLeaseTokens > grant.capacityTokens)
    return `names a lease limit of ${grant.maxLeaseTokens} above the capacity ${grant.capacityTokens}`;
  if (grant.tokensHeld > grant.maxLeaseTokens)
    return `holds ${grant.tokensHeld} tokens, above the pool's lease limit of ${grant.maxLeaseTokens}`;
  if (grant.ttlMs > limits.leaseTtlMsMax) return `lasts ${grant.ttlMs} ms, above leaseTtlMsMax ${limits.leaseTtlMsMax}`;
  if (capacityTokens !== 0 && grant.capacityTokens !== capacityTokens) {
    return `changes the pool's capacity mid-lease from ${capacityTokens} to ${grant.capacityTokens}`;
  }
  const rate = grant.rate;
  if (rate !== undefined && (rate.tokensPerPeriod > grant.refillTokens || rate.capTokens > grant.maxLeaseTokens)) {
    return `gives a rate of ${rate.tokensPerPeriod} or a cap of ${rate.capTokens} beyond the pool's refill or lease limit`;
  }
  if (grant.holdMs !== undefined && (rate !== undefined || grant.window === true))
    return `names a slot hold bound of ${grant.holdMs} ms on a ${rate !== undefined ? 'rate' : 'window'} lease`;
  if (grant.slotsMax !== undefined && grant.holdMs === undefined)
    return `names a most slots to keep (${grant.slotsMax}) on a lease of tokens`;
  const expected = limits.expectedLimits;
  return expected === undefined || expected === null ? null : expectedLimitsProblem(grant, expected);
}
