/**
 * Takeover: a pool as a new owner finds it in a durable store.
 *
 * Rules:
 * - No quiet period: the new owner knows the kept leases, treats each as
 *   live for a full TTL from the takeover and refills from the takeover on,
 *   so the owners' gap mints nothing.
 * - Its level is clipped so the kept credit fits B + A (a level above B is
 *   a smaller configuration's, or one that refill outran, not damage:
 *   clipping only lowers credit); a pool the store has no record of starts
 *   full (it has no lease anywhere).
 * - A kept rate lease may be full and keeps trickling at its rate until it
 *   renews or expires.
 * - A kept lease whose request was held when the store last heard of it
 *   answers a retry with a grant of nothing: the agent learns its balance
 *   and asks again.
 * - Such a pool records which leases change (pool-state.ts's ChangeLog),
 *   for the adapter to write before it sends the replies.
 * - Stored state is validated like a peer's message, against the pool's
 *   limits (`stateProblem`): a lease above B + A, a rate
 *   above the refill, a stored reply that does not match its lease or
 *   promises a longer TTL; and as a whole: the kept leases' bounds
 *   together above B + A. Their holders may spend every bound and a retry
 *   replays each kept grant, so leases that fit one by one but not
 *   together (twenty of 20 on a pool of 100) would let the fleet admit
 *   their sum; the level cannot make up for them, as it is only clipped.
 *   An honest owner never writes such a sum under one configuration
 *   (level + Σ bounds ≤ B + A is its invariant); after a reload that
 *   shrank the pool it may, and quarantine is then the safe side of the
 *   disagreement. Damaged state is not adopted: the pool starts
 *   empty and quiet for one TTL, exactly as after a restart in memory mode
 *   (whatever was really leased expires by then), and the damaged records
 *   are deleted by its first write.
 */
import type { PoolConfig } from './config.js';
import { rememberKept } from './grant-memo.js';
import { grantReply, type PoolParts } from './pool-parts.js';
import { ChangeLog, type PersistedLease, type PersistedPool } from './pool-state.js';

/** adoptKept — fills the fresh pool `p` (started at `takeoverUs`, no quiet period) with the store's `state` (null: none). */
export function adoptKept<R>(p: PoolParts<R>, takeoverUs: number, state: PersistedPool | null): void {
  p.changed = new ChangeLog();
  for (const kept of state?.leases ?? []) {
    const identity = kept.identity ?? null;
    const record = p.leases.adopt(kept.agentId, kept.secret, identity, kept.leaseId, kept.boundTokens, kept.lastSeq, takeoverUs + p.ttlUs);
    record.heldTokens = kept.boundTokens;
    record.accrualFromUs = takeoverUs;
    record.isRate = p.config.leaseMode === 'rate';
    p.leases.setRate(record, kept.ratePerPeriod ?? 0);
    if (kept.lastReply === null) grantReply(p, record, 0, 1);
    else rememberKept(record, kept.lastReply);
  }
  p.credit.restore(state?.levelTokens ?? null, p.leases.boundTokensSum);
  p.credit.settle(takeoverUs, p.leases.boundTokensSum);
}

/** quarantine — a pool whose stored state was damaged: it starts empty and quiet, and deletes the records of `agentIds`. */
export function quarantine<R>(p: PoolParts<R>, agentIds: readonly string[]): void {
  p.changed = new ChangeLog();
  for (const agentId of agentIds) p.changed.add(agentId);
}

/** stateProblem — why `state` cannot be a state of a pool of `config`, or null when it can. */
export function stateProblem(config: PoolConfig, state: PersistedPool): string | null {
  const creditTokensMax = config.capacity + config.allowance;
  if (state.leases.length > config.maxLeases) return `${state.leases.length} stored leases are more than maxLeases ${config.maxLeases}`;
  let boundTokensSum = 0;
  for (const lease of state.leases) {
    const problem = storedLeaseProblem(config, lease);
    if (problem !== null) return problem;
    // Each bound is at most B + A, so the sum stays exact while it is compared after every lease.
    boundTokensSum += lease.boundTokens;
    if (boundTokensSum > creditTokensMax)
      return `the stored leases hold more than capacity + allowance ${creditTokensMax} together (${state.leases.length} leases)`;
  }
  return null;
}

/** storedLeaseProblem — why one stored lease cannot be a lease of a pool of `config` on its own, or null when it can. */
function storedLeaseProblem(config: PoolConfig, lease: PersistedLease): string | null {
  const creditTokensMax = config.capacity + config.allowance;
  const of = `stored lease of agent ${JSON.stringify(lease.agentId)}`;
  if (lease.boundTokens > creditTokensMax) return `${of} holds ${lease.boundTokens} tokens, above capacity + allowance ${creditTokensMax}`;
  if ((lease.ratePerPeriod ?? 0) > config.refill.tokens) return `${of} has a rate above the refill`;
  const reply = lease.lastReply;
  if (reply === null) return null;
  if (reply.seq !== lease.lastSeq || reply.leaseId !== lease.leaseId) return `${of} keeps a reply to another request or lease`;
  // A report may have lowered the bound since the reply: the reply is checked against the pool, not the bound.
  if (reply.tokensGranted > reply.tokensHeld || reply.tokensHeld > creditTokensMax)
    return `${of} keeps a reply granting more than the pool holds`;
  if (reply.ttlMs > config.leaseTtlMs)
    return `${of} keeps a reply with a TTL of ${reply.ttlMs} ms, above the pool's ${config.leaseTtlMs} ms`;
  if (reply.rate !== undefined && (reply.rate.tokensPerPeriod > config.refill.tokens || reply.rate.capTokens > creditTokensMax)) {
    return `${of} keeps a reply with a rate or cap beyond the pool's`;
  }
  return null;
}
