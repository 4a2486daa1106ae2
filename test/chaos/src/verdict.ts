/**
 * rowProblems — why a chaos row fails, one line each (empty when it passes):
 * the fault must be verified, the envelope and lease lifetimes kept, a
 * stranded lease reclaimed within one TTL plus the coordinator's tick slack
 * and a status poll, a failed-over pool granting again within one lease TTL
 * plus one ownership TTL, a killed relay's agents admitting no more after
 * its kill than it held from the root, and the full admission rate must
 * come back. For a concurrency pool (`cut-slot-holder`) the envelope is the
 * limit in flight (the worst window is the peak over the limit), the cut
 * holder's slots must come back within SLOTS_BACK_BOUND_MS, and it must
 * hold slots again after the restore.
 *
 * One row is expected to break the envelope: `redis-primary-failover-
 * unconfirmed` loses acknowledged grants on purpose (replica confirmation
 * off, redis-scenarios.ts), and fails when the check finds no window over
 * it, since then either the loss did not happen or the check missed it.
 */
import { OWNERSHIP_TTL_MS } from './chaos-fleet.js';
import { CHAOS_POOL, type ScenarioRow } from './run-scenario.js';
import { SLOTS_BACK_BOUND_MS } from './slot-scenario.js';

export const RECLAIM_BOUND_MS = CHAOS_POOL.leaseTtlMs + 400;
export const TAKEOVER_BOUND_MS = CHAOS_POOL.leaseTtlMs + OWNERSHIP_TTL_MS;
/**
 * CUT_TAKEOVER_BOUND_MS — from cutting the owner off the store to the other
 * coordinator's first grant: the owner's last renewal may have landed just
 * before the cut (one ownership TTL), then the kept leases' TTL, plus one
 * store command timeout (1 s) for the standby's claim round.
 */
export const CUT_TAKEOVER_BOUND_MS = CHAOS_POOL.leaseTtlMs + OWNERSHIP_TTL_MS + 1000;
/**
 * NATS_CUT_TAKEOVER_BOUND_MS — from cutting the owner off NATS to the other
 * coordinator's first grant: the bound above, where the cut owner's silence
 * must also span two heartbeats (a third of the ownership TTL each) before
 * it steps out and releases what it owns.
 */
export const NATS_CUT_TAKEOVER_BOUND_MS = CUT_TAKEOVER_BOUND_MS + 2 * Math.ceil(OWNERSHIP_TTL_MS / 3);
const CUT_TAKEOVER_BOUNDS = new Map<string, number>([
  ['cut-coordinator-redis', CUT_TAKEOVER_BOUND_MS],
  ['cut-coordinator-nats', NATS_CUT_TAKEOVER_BOUND_MS],
  ['one-way-coordinator-nats', NATS_CUT_TAKEOVER_BOUND_MS],
]);
/** The scenario whose lost writes must show as admissions over the envelope. */
export const EXPECTS_OVER_ADMISSION = 'redis-primary-failover-unconfirmed';

export function rowProblems(r: ScenarioRow): string[] {
  if (r.notRun !== null) return [`${r.scenario}: NOT RUN: ${r.notRun}`];
  const problems: string[] = [];
  if (!r.faultVerified) problems.push(`${r.scenario}: the fault was not verified (${r.note})`);
  if (r.scenario === EXPECTS_OVER_ADMISSION) {
    if (r.envelopeViolations === 0 || r.worstWindowRatio <= 1)
      problems.push(
        `${r.scenario}: grants lost with the primary were expected to over-admit, but no window exceeded the envelope (${r.note})`,
      );
  } else if (r.envelopeViolations > 0 || r.worstWindowRatio > 1)
    problems.push(`${r.scenario}: ${r.envelopeViolations} admissions over the envelope (worst window ${r.worstWindowRatio})`);
  if (r.expiryViolations > 0) problems.push(`${r.scenario}: ${r.expiryViolations} admissions spent a lease after its expiry (${r.note})`);
  if (r.reclaimMs !== null && r.reclaimMs > RECLAIM_BOUND_MS)
    problems.push(`${r.scenario}: stranded lease reclaimed after ${r.reclaimMs} ms, bound ${RECLAIM_BOUND_MS} ms`);
  if (r.strandedTokens !== null && (r.heldTokens === null || r.strandedTokens > r.heldTokens))
    problems.push(
      `${r.scenario}: the killed relay's agents admitted ${r.strandedTokens} tokens after the kill, more than the ${r.heldTokens ?? '?'} it held`,
    );
  if (r.scenario === 'failover-coordinator' && (r.takeoverMs === null || r.takeoverMs > TAKEOVER_BOUND_MS))
    problems.push(`${r.scenario}: first grant after the owner's kill took ${r.takeoverMs ?? 'forever'} ms, bound ${TAKEOVER_BOUND_MS} ms`);
  if (r.strayGrants !== null && r.strayGrants > 0)
    problems.push(
      `${r.scenario}: the faulted coordinator granted ${r.strayGrants} times when it could no longer be the only owner granting`,
    );
  const cutBound = CUT_TAKEOVER_BOUNDS.get(r.scenario);
  if (cutBound !== undefined && (r.takeoverMs === null || r.takeoverMs > cutBound))
    problems.push(
      `${r.scenario}: first grant by the other coordinator after the cut took ${r.takeoverMs ?? 'forever'} ms, bound ${cutBound} ms`,
    );
  if (r.scenario === 'cut-slot-holder') {
    if (r.slotsBackMs === null || r.slotsBackMs > SLOTS_BACK_BOUND_MS)
      problems.push(
        `${r.scenario}: the cut holder's slots came back after ${r.slotsBackMs ?? 'forever'} ms, bound ${SLOTS_BACK_BOUND_MS} ms`,
      );
    if (r.recoveryMs === null) problems.push(`${r.scenario}: the cut holder never held a slot again after the restore`);
  } else if (r.scenario !== 'churn-agents' && r.recoveryMs === null)
    problems.push(`${r.scenario}: the admission rate never came back to 90% of r`);
  return problems;
}
