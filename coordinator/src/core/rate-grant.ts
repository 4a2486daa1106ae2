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
 */
import { assertInvariant, type LeaseGrant, type LeaseRequest } from '@tokenlease/shared';
import { bindingOf, type Delivery } from './chunk-grant.js';
import type { LeaseRecord } from './lease-table.js';
import { grantReply, retryAfterMs, weightOf, type PoolParts } from './pool-parts.js';
import { decideRateGrant, heldAt } from './rate-lease.js';

/** acquireRate — re-bases `record` on `req`, decides its rate, cap and top-up, commits them and replies. */
export function acquireRate<R>(p: PoolParts<R>, req: LeaseRequest, record: LeaseRecord, to: R, nowUs: number, out: Delivery<R>[]): void {
  const held = req.leaseId === record.leaseId ? Math.min(heldAt(record, nowUs, p.periodUs), req.tokensLeft) : 0;
  p.leases.setRate(record, 0);
  p.leases.setWeight(record, weightOf(p, req));
  record.heldTokens = held;
  record.accrualFromUs = nowUs;
  record.lastSeq = req.seq;
  p.leases.setDemand(record, req.demandPerSecond);
  p.leases.extend(record, nowUs + p.ttlUs);
  p.changed?.add(req.agentId);
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
  p.credit.take(d.topUp);
  assertInvariant(
    d.capTokens >= held + d.topUp,
    `pool ${p.config.name}: no room for the ${held + d.topUp} tokens lease ${record.leaseId} holds`,
  );
  p.leases.setBound(record, d.capTokens);
  p.leases.setRate(record, d.ratePerPeriod);
  record.heldTokens = held + d.topUp;
  const base = grantReply(p, record, d.topUp, d.missingTokens > 0 ? retryAfterMs(p, d.missingTokens, nowUs) : 0);
  const rate = { tokensPerPeriod: d.ratePerPeriod, periodMs: p.config.refill.periodMs, capTokens: d.capTokens };
  const reply: LeaseGrant = { ...base, tokensHeld: held + d.topUp, rate };
  record.lastReply = reply;
  out.push({ to, reply, grantFor: bindingOf(p, record) });
}
