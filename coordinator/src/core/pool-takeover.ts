/**
 * Takeover: a pool as a new owner finds it in a durable store.
 *
 * Rules:
 * - No quiet period: the new owner knows the kept leases, treats each as
 *   live for a full TTL from the takeover and refills from the takeover on,
 *   so the owners' gap mints nothing.
 * - Its level is clipped so the kept credit fits B + A; a pool the store
 *   has no record of starts full (it has no lease anywhere).
 * - A kept rate lease may be full and keeps trickling at its rate until it
 *   renews or expires.
 * - A kept lease whose request was held when the store last heard of it
 *   answers a retry with a grant of nothing: the agent learns its balance
 *   and asks again.
 * - Such a pool records which leases change (pool-state.ts's ChangeLog),
 *   for the adapter to write before it sends the replies.
 */
import { grantReply, type PoolParts } from './pool-parts.js';
import { ChangeLog, type PersistedPool } from './pool-state.js';

/** adoptKept — fills the fresh pool `p` (started at `takeoverUs`, no quiet period) with the store's `state` (null: none). */
export function adoptKept<R>(p: PoolParts<R>, takeoverUs: number, state: PersistedPool | null): void {
  p.changed = new ChangeLog();
  for (const kept of state?.leases ?? []) {
    const record = p.leases.adopt(kept.agentId, kept.leaseId, kept.boundTokens, kept.lastSeq, takeoverUs + p.ttlUs);
    record.heldTokens = kept.boundTokens;
    record.accrualFromUs = takeoverUs;
    p.leases.setRate(record, kept.ratePerPeriod ?? 0);
    record.lastReply = kept.lastReply ?? grantReply(p, record, 0, 1);
  }
  p.credit.restore(state?.levelTokens ?? null, p.leases.boundTokensSum);
  p.credit.check(p.leases.boundTokensSum);
}
