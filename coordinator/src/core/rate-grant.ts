/**
 * Rate grants (`leaseMode: 'rate'`): every acquire re-bases the lease on
 * the agent's report and gives it a rate, a cap and a top-up.
 *
 * Rules (why the envelope holds: rate-lease.ts):
 * - The lease stopped accruing when the agent sent; it holds the least of
 *   what it could have accrued and what the agent reports.
 * - Its rate is its weighted max-min fair share (water-level.ts) of the
 *   refill among the live leases' reported demands, within what the other
 *   leases leave unassigned; none in the quiet period, when leases of a
 *   previous incarnation may still spend.
 * - Its cap is in proportion to that rate (its share of B), and its top-up
 *   comes from the level, of which each renewal may take its weight's part.
 * - Caps share B as chunk leases do (chunk-grant.ts): while the pool is
 *   contended, a lease that holds more than its weighted share of B,
 *   `B × w / Σw`, is frozen (no rate, no top-up, its cap what it holds)
 *   and not extended, so it lapses and its room goes round. Contended
 *   here means a grant's cap was cut below what its rate calls for within
 *   the last TTL: without the rule, leases that never spend and renew
 *   often keep their full caps, and an agent whose lease lapsed gets a
 *   fair rate with a cap of 0 (nothing to spend) for good.
 */
import { invariantBroken, type LeaseRequest } from '@tokenlease/shared';
import { bindingOf, type Delivery } from './chunk-grant.js';
import type { LeaseRecord } from './lease-table.js';
import { contended, markContended, rateGrantReply, retryAfterMs, shareTokens, timeLeftMs, weightOf, type PoolParts } from './pool-parts.js';
import { decideRateGrant, heldAt } from './rate-lease.js';

/** acquireRate — re-bases `record` on `req`, decides its rate, cap and top-up, commits them and replies. */
export function acquireRate<R>(p: PoolParts<R>, req: LeaseRequest, record: LeaseRecord, to: R, nowUs: number, out: Delivery<R>[]): void {
  const held = p.leases.names(record, req.leaseId) ? Math.min(heldAt(record, nowUs, p.periodUs), req.tokensLeft) : 0;
  p.leases.setRate(record, 0);
  p.leases.setWeight(record, weightOf(p, req));
  record.heldTokens = held;
  record.accrualFromUs = nowUs;
  record.lastSeq = req.seq;
  p.leases.setDemand(record, req.demandPerSecond);
  p.changed?.add(req.agentId);
  if (contended(p, nowUs) && held > shareTokens(p, record)) {
    renewFrozen(p, record, req.tokensWanted > 0, to, nowUs, out);
    return;
  }
  p.leases.extend(record, nowUs + p.ttlUs);
  const otherBoundsTokens = p.leases.boundTokensSum - record.boundTokens;
  const levelShare = Math.floor((p.credit.levelTokens * record.weight) / p.leases.weightsSum);
  const quiet = nowUs < p.quietUntilUs;
  const input = {
    held,
    tokensWanted: req.tokensWanted,
    levelTokens: levelShare,
    otherRates: p.leases.ratePerPeriodSum,
    share: (assignable: number): number => (quiet ? 0 : p.waterLevel.shareOf(p.leases, record, assignable, p.config.refill.periodMs)),
  };
  // What B + A leaves for this lease's cap beside the level (after the top-up) and the other bounds.
  const capRoom = (topUp: number): number =>
    Math.floor((p.credit.ceilingUnits - p.credit.levelUnits + topUp * p.scale.unitsPerToken) / p.scale.unitsPerToken) - otherBoundsTokens;
  const d = decideRateGrant(p.config, input, capRoom);
  if (d.capShort) markContended(p, nowUs);
  p.credit.take(d.topUp);
  if (!(d.capTokens >= held + d.topUp))
    invariantBroken(`pool ${p.config.name}: no room for the ${held + d.topUp} tokens lease ${record.leaseId} holds`);
  p.leases.setBound(record, d.capTokens);
  p.leases.setRate(record, d.ratePerPeriod);
  record.heldTokens = held + d.topUp;
  const retryMs = d.missingTokens > 0 ? retryAfterMs(p, d.missingTokens, nowUs) : 0;
  const reply = rateGrantReply(p, record, d.topUp, retryMs, p.config.leaseTtlMs, held + d.topUp, d.ratePerPeriod, d.capTokens);
  out.push({ to, reply, grantFor: bindingOf(p, record) });
}

/**
 * renewFrozen — answers a renewal of a lease above its share while the pool
 * is contended: no rate, no top-up, its cap cut to what it holds, and the
 * lease's own time left (at least 1 ms), not extended; `short`: it wanted more.
 */
function renewFrozen<R>(p: PoolParts<R>, record: LeaseRecord, short: boolean, to: R, nowUs: number, out: Delivery<R>[]): void {
  p.leases.setBound(record, record.heldTokens);
  const ttlMs = timeLeftMs(p, record, nowUs);
  const reply = rateGrantReply(p, record, 0, short ? ttlMs : 0, ttlMs, record.heldTokens, 0, record.heldTokens);
  out.push({ to, reply, grantFor: bindingOf(p, record) });
}
