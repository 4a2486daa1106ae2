/**
 * The lease client's rules of a lease's life, one for every client (an
 * agent's keeper, a relay's uplink: a relay is an agent toward the root).
 *
 * Rules:
 * - Expiry: a client stops using a lease at `first send of the request
 *   that got it + TTL × (1 − driftMargin)`, on its own clock. The
 *   coordinator's expiry starts when it granted, which is later, and the
 *   margin covers the two clocks' rates: the client always stops first.
 *   A retry repeats the request's first-send instant, so it never extends
 *   the lease.
 * - Sequence floor: a `stale-sequence` refusal names the highest sequence
 *   the coordinator has seen of this agent id (`seqFloor`); the client's
 *   next request goes above it, whatever its own counter said.
 */
import type { Reply } from '../protocol/messages.js';

const US_PER_MS = 1000;

/**
 * clientLeaseEndUs — when a client stops using a lease of `ttlMs` granted
 * to the request it first sent at `firstSendUs`, µs (whole: floored):
 * `firstSendUs + ttlMs·1000·(1 − driftMargin)`. A TTL of 0 ends at the first send.
 */
export function clientLeaseEndUs(firstSendUs: number, ttlMs: number, driftMargin: number): number {
  return firstSendUs + Math.floor(ttlMs * US_PER_MS * (1 - driftMargin));
}

/** staleSeqFloor — the floor a `stale-sequence` refusal names (the next request goes above it), or null for any other reply. */
export function staleSeqFloor(reply: Reply): number | null {
  if (reply.kind !== 'error' || reply.code !== 'stale-sequence' || reply.seqFloor === undefined) return null;
  return reply.seqFloor;
}

/** seqAbove — the sequence number after `lastSeq` that is above `floor` too (0: no floor). */
export function seqAbove(lastSeq: number, floor: number): number {
  return Math.max(lastSeq, floor) + 1;
}
