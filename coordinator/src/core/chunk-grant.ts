/**
 * Chunk grants: a lease holds tokens moved out of the level, topped up on
 * renewal, with requests held while a worthwhile grant accrues.
 *
 * Rules:
 * - A renewal re-bases the lease on the agent's report: the bound becomes
 *   what the agent says is left of the lease it names (never more than the
 *   bound); a lease the agent does not name is one whose grant never
 *   reached it, so nothing of it can be spent.
 * - No crumbs: a request that cannot get its turn, `min(wanted,
 *   minGrantTokens × w)` for its class's weight w, is held (up to its hold
 *   time) and waiting agents are served in arrival order, a turn each
 *   while others wait (a backlog is split in proportion to the turns), so
 *   under contention agents' shares follow their weights. A held request
 *   whose hold ends gets what there is; one that may not wait gets nothing
 *   while others wait before it.
 * - No lease keeps more than its weighted share of B, `B × w / Σw` over the
 *   live leases, past its TTL while the pool is contended: renewed above
 *   that share, it is answered with no top-up and the time it has left,
 *   not extended, so it lapses and its tokens go round. Contended means a
 *   request waits now or waited within the last TTL (`contendedUntilUs`):
 *   a rule that looked only at the instant of each renewal let renewals
 *   that land between another agent's holds (many identities renewing
 *   often) keep the pool from it for good. Nor does a grant made at once
 *   while the pool is contended take a lease past that share: leases that
 *   lapsed and came back the moment nobody waited were served in full, and
 *   kept bursty agents beside them under their share. A grant cut short by
 *   that share is told to ask again when the pool stops counting as
 *   contended or in a quarter TTL, not when the level holds tokens (it
 *   does already).
 * - Concurrency pools (docs/design.md, "Concurrency pools"): a renewal that
 *   names its live lease tells its free and busy slots, so what it reports
 *   below the bound was free when sent and is not used after: it goes back
 *   to the level at once (anything else a lease drops cools for the hold
 *   bound). A lapse would hold a lease's slots back for that bound, so a
 *   lease above its share while contended is renewed with no top-up and
 *   told the most slots it may keep (`slotsMax`); its agent gives the rest
 *   back as their requests end. One still above its share the hold bound
 *   plus a TTL after it was first told is renewed no more, as a bucket's.
 */
import type { GrantBinding, LeaseRequest, Reply } from '@tokenlease/shared';
import { forgetGrant } from './grant-memo.js';
import type { LeaseRecord } from './lease-table.js';
import {
  contended,
  grantReply,
  grantTtlMs,
  leaseExpiryUs,
  markContended,
  retryAfterMs,
  shareTokens,
  timeLeftMs,
  weightOf,
  US_PER_MS,
  type PoolParts,
} from './pool-parts.js';

/** Delivery — a reply and the opaque target it goes to. */
export interface Delivery<R> {
  readonly to: R;
  readonly reply: Reply;
  /** For a grant: the request it answers, which a signature binds it to (the adapter signs, given a key). */
  readonly grantFor?: GrantBinding;
  /** True when `reply` is the original answer repeated to a retry (counted once by metrics). */
  readonly repeat?: boolean;
}

/** acquireChunk — renews `record` as `req` reports it, then grants, holds, or renews only. */
export function acquireChunk<R>(p: PoolParts<R>, req: LeaseRequest, record: LeaseRecord, to: R, nowUs: number, out: Delivery<R>[]): void {
  const named = p.leases.names(record, req.leaseId);
  const reportedTokens = named ? Math.min(record.boundTokens, req.tokensLeft) : 0;
  const freedSlots = named && p.config.concurrency !== null ? record.boundTokens - reportedTokens : 0;
  p.leases.setBound(record, reportedTokens);
  if (freedSlots > 0) p.credit.give(freedSlots, p.leases.boundTokensSum);
  renewChunk(p, req, record, to, nowUs, out);
  // Slots a renewal gave back go to the requests waiting for them now, not at the next tick.
  if (freedSlots > 0) serveWaiters(p, nowUs, out);
}

/** renewChunk — `record`, re-based on `req`'s report: grants, holds, or renews only. */
function renewChunk<R>(p: PoolParts<R>, req: LeaseRequest, record: LeaseRecord, to: R, nowUs: number, out: Delivery<R>[]): void {
  p.leases.setWeight(record, weightOf(p, req));
  p.leases.setDemand(record, req.demandPerSecond);
  record.lastSeq = req.seq;
  forgetGrant(record);
  p.changed?.add(req.agentId);
  const wantTokens = Math.max(0, Math.min(req.tokensWanted, p.config.maxLeaseTokens - record.boundTokens));
  if (contended(p, nowUs) && record.boundTokens > shareTokens(p, record)) {
    if (p.config.concurrency !== null && shedsInTime(p, record, nowUs)) shedSlots(p, record, wantTokens > 0, to, nowUs, out);
    else renewUnextended(p, record, wantTokens > 0, to, nowUs, out);
    return;
  }
  record.shedSinceUs = 0;
  p.leases.extend(record, leaseExpiryUs(p, nowUs));
  // A hold ends no later than the lease it renews (a relay's leases end with its upstream lease).
  const holdUs = Math.min(Math.min(req.holdMs, p.config.maxHoldMs) * US_PER_MS, p.credit.leaseEndUs - nowUs);
  const thresholdTokens = Math.min(wantTokens, p.config.minGrantTokens * record.weight);
  if (wantTokens === 0 || (p.waiters.size === 0 && (holdUs === 0 || p.credit.has(thresholdTokens)))) {
    grant(p, record, wantTokens, to, nowUs, out, contended(p, nowUs) ? shareTokens(p, record) - record.boundTokens : Infinity);
  } else if (holdUs === 0) {
    // It may not wait and others are waiting first: renew only, and say when to ask again.
    markContended(p, nowUs);
    grant(p, record, wantTokens, to, nowUs, out, 0);
  } else {
    markContended(p, nowUs);
    p.waiters.push({ record, wantTokens, thresholdTokens, to, deadlineUs: nowUs + holdUs, heldAtUs: nowUs });
  }
}

/** serveWaiters — grants turns to the head of the queue while the level holds one, then answers holds that ended. */
export function serveWaiters<R>(p: PoolParts<R>, nowUs: number, out: Delivery<R>[]): void {
  for (let head = p.waiters.head(); head !== undefined && p.credit.has(head.thresholdTokens); head = p.waiters.head()) {
    p.waiters.remove(head.record.agentId);
    markContended(p, nowUs);
    p.tally.held(nowUs - head.heldAtUs);
    // With others still waiting, a turn is its threshold; a lone waiter
    // (or one at the back) takes what it wants of what there is.
    const tokensMax = p.waiters.size > 0 ? Math.max(head.thresholdTokens, fairRest(p, head.thresholdTokens)) : Infinity;
    grant(p, head.record, head.wantTokens, head.to, nowUs, out, tokensMax, head.heldAtUs);
  }
  for (const w of p.waiters.takeDue(nowUs)) {
    markContended(p, nowUs);
    p.tally.held(nowUs - w.heldAtUs);
    grant(p, w.record, w.wantTokens, w.to, nowUs, out, Infinity, w.heldAtUs);
  }
}

/**
 * grant — moves up to `wantTokens` (at most `tokensMax`) from the level into
 * `record` and replies; `receivedUs`: when the request arrived (a held one's
 * TTL under a relay's upstream lease counts from then).
 */
export function grant<R>(
  p: PoolParts<R>,
  record: LeaseRecord,
  wantTokens: number,
  to: R,
  nowUs: number,
  out: Delivery<R>[],
  tokensMax = Infinity,
  receivedUs = nowUs,
): void {
  const levelTokens = p.credit.levelTokens;
  const tokensGranted = Math.min(wantTokens, tokensMax, levelTokens);
  p.credit.take(tokensGranted);
  p.leases.setBound(record, record.boundTokens + tokensGranted);
  p.leases.extend(record, leaseExpiryUs(p, nowUs, receivedUs));
  const shareCut = tokensMax < Math.min(wantTokens, levelTokens);
  const retryMs = tokensGranted >= wantTokens ? 0 : shareCut ? shareRetryMs(p, nowUs) : retryAfterMs(p, wantTokens - tokensGranted, nowUs);
  const reply = grantReply(p, record, tokensGranted, retryMs, grantTtlMs(p, receivedUs));
  p.changed?.add(record.agentId);
  out.push({ to, reply, grantFor: bindingOf(p, record) });
  p.credit.check(p.leases.boundTokensSum);
}

/**
 * shareRetryMs — when a grant cut short by its share, not by the level, is
 * to ask again: once the pool no longer counts as contended, or a quarter
 * TTL, whichever comes first (shares change as leases come and go). Not
 * when the level holds tokens: it does, and told so its agent would ask
 * again every millisecond.
 */
function shareRetryMs<R>(p: PoolParts<R>, nowUs: number): number {
  const contendedMs = Math.ceil((p.contendedUntilUs - nowUs) / US_PER_MS);
  return Math.max(1, Math.min(contendedMs, Math.ceil(p.config.leaseTtlMs / 4)));
}

/** renewUnextended — answers a renewal with no top-up and the lease's own time left (at least 1 ms); `short`: it wanted more. */
function renewUnextended<R>(p: PoolParts<R>, record: LeaseRecord, short: boolean, to: R, nowUs: number, out: Delivery<R>[]): void {
  const ttlMs = timeLeftMs(p, record, nowUs);
  const reply = grantReply(p, record, 0, short ? ttlMs : 0, ttlMs);
  out.push({ to, reply, grantFor: bindingOf(p, record) });
}

/** shedsInTime — whether a concurrency pool's `record`, above its share, is still within its time to shed (first told now, or within the hold bound plus a TTL). */
function shedsInTime<R>(p: PoolParts<R>, record: LeaseRecord, nowUs: number): boolean {
  if (record.shedSinceUs === 0) record.shedSinceUs = nowUs;
  const graceUs = ((p.config.concurrency?.maxHoldMs ?? 0) + p.config.leaseTtlMs) * US_PER_MS;
  return nowUs - record.shedSinceUs <= graceUs;
}

/** shedSlots — renews a concurrency pool's `record` above its share: extended, no top-up, told the most slots it may keep; `short`: it wanted more. */
function shedSlots<R>(p: PoolParts<R>, record: LeaseRecord, short: boolean, to: R, nowUs: number, out: Delivery<R>[]): void {
  markContended(p, nowUs);
  p.leases.extend(record, leaseExpiryUs(p, nowUs));
  const retryMs = short ? Math.max(1, Math.ceil(p.config.leaseTtlMs / 4)) : 0;
  const reply = grantReply(p, record, 0, retryMs, grantTtlMs(p, nowUs), shareTokens(p, record));
  p.changed?.add(record.agentId);
  out.push({ to, reply, grantFor: bindingOf(p, record) });
}

/**
 * fairRest — the head's part when what there is exceeds every waiter's
 * turn: the level divided in proportion to the waiters' turns (its own
 * included), so a backlog is shared by weight rather than first come.
 */
function fairRest<R>(p: PoolParts<R>, headTurnTokens: number): number {
  const turns = p.waiters.turnsTokens + headTurnTokens;
  return Math.floor((p.credit.levelTokens * headTurnTokens) / turns);
}

/** bindingOf — the request a grant to `record` answers, for its signature: the lease's agent and the pool. */
export function bindingOf<R>(p: PoolParts<R>, record: LeaseRecord): GrantBinding {
  return { agentId: record.agentId, pool: p.config.name };
}
