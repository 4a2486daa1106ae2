/**
 * Grant signatures: what a coordinator signs when it is given a signing key,
 * so that an agent given the public half can tell its grants from a rogue
 * responder's (docs/design.md, "Signed grants").
 *
 * Rules:
 * - The signature (`sig` in the grant, Ed25519, 64 bytes as 86 characters
 *   of base64url) covers the grant's every field that decides what the
 *   agent may spend, and the request it answers: the pool and the agent id
 *   of the request, besides the grant's own sequence and lease id. A signed
 *   grant replayed to another agent, pool or request does not verify.
 * - The signed text is built from values only, in a fixed order, as a JSON
 *   array behind a version tag: one text per grant, whatever order the
 *   fields arrived in.
 * - `sig` is optional on the wire. An agent configured with keys refuses a
 *   grant without one; an agent without keys (or one older than signing)
 *   ignores it.
 * Signing and verifying are the adapters' (node:crypto); this is the text.
 */
import type { LeaseGrant } from './messages.js';

/** GRANT_SIGNATURE_PATTERN — an Ed25519 signature in base64url: 86 characters. */
export const GRANT_SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{86}$/;

/** The tag that versions the signed text. */
const SIGNED_TEXT_TAG = 'tokenlease-grant-v1';

/** GrantBinding — the request a grant answers, as the signature binds it: its agent id and pool. */
export interface GrantBinding {
  readonly agentId: string;
  readonly pool: string;
}

/** grantSigningText — the text a signature of `grant` for `binding` covers (see the rules); `sig` itself is not in it. */
export function grantSigningText(grant: LeaseGrant, binding: GrantBinding): string {
  const rate = grant.rate === undefined ? null : [grant.rate.tokensPerPeriod, grant.rate.periodMs, grant.rate.capTokens];
  const values = [
    binding.pool,
    binding.agentId,
    grant.seq,
    grant.leaseId,
    grant.tokensGranted,
    grant.tokensHeld,
    grant.ttlMs,
    grant.epoch,
    grant.maxLeaseTokens,
    grant.capacityTokens,
    grant.refillTokens,
    grant.refillPeriodMs,
    grant.retryAfterMs,
    grant.allowanceTokens ?? 0,
    grant.window === true,
    grant.shadow === true,
    rate,
    // Appended, so a grant without it signs the same text as before it existed.
    ...(grant.holdMs === undefined ? [] : [grant.holdMs]),
    ...(grant.slotsMax === undefined ? [] : [grant.slotsMax]),
  ];
  return `${SIGNED_TEXT_TAG}\n${JSON.stringify(values)}`;
}
