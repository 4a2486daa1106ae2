/**
 * Chaos checks over the merged logs of a run.
 *
 * expiryViolations: every admission must spend from a lease the coordinator
 * still counted: at a time before (latest grant of that lease at or before
 * the admission) + TTL, on the host monotonic clock both sides log.
 * recoveryMs: how long after an instant the fleet again admitted at least
 * `share` of the refill rate over a 500 ms window.
 */
import type { LoggedAdmission } from '@tokenlease/harness/fleet';
import type { Grant } from './chaos-fleet.js';

export function expiryViolations(admissions: readonly LoggedAdmission[], grants: readonly Grant[]): string[] {
  const byLease = new Map<string, Grant[]>();
  for (const g of grants) {
    const list = byLease.get(g.leaseId) ?? [];
    list.push(g);
    byLease.set(g.leaseId, list);
  }
  for (const list of byLease.values()) list.sort((a, b) => a.tUs - b.tUs);
  const problems: string[] = [];
  for (const a of admissions) {
    const list = byLease.get(a.leaseId) ?? [];
    let latest: Grant | undefined;
    for (const g of list) if (g.tUs <= a.tUs) latest = g;
    if (latest === undefined || a.tUs >= latest.tUs + latest.ttlMs * 1000) {
      problems.push(
        `admission at ${a.tUs} µs from lease ${a.leaseId}: ${latest === undefined ? 'no grant logged before it' : `granted at ${latest.tUs} µs, expired at ${latest.tUs + latest.ttlMs * 1000} µs`}`,
      );
    }
  }
  return problems;
}

const WINDOW_US = 500_000;
const US_PER_S = 1_000_000;

/**
 * recoveryMs — whole ms from `fromUs` until the first window of WINDOW_US
 * admitting `share` of the refill starts; null if none does.
 */
export function recoveryMs(admissions: readonly LoggedAdmission[], fromUs: number, refillPerSecond: number, share = 0.9): number | null {
  const after = admissions.filter((a) => a.tUs >= fromUs);
  const needed = (share * refillPerSecond * WINDOW_US) / US_PER_S;
  let start = 0;
  let sum = 0;
  for (let end = 0; end < after.length; end += 1) {
    const e = after[end] as LoggedAdmission;
    sum += e.cost;
    while ((after[start] as LoggedAdmission).tUs < e.tUs - WINDOW_US) {
      sum -= (after[start] as LoggedAdmission).cost;
      start += 1;
    }
    if (sum >= needed) return Math.max(0, Math.round(((after[start] as LoggedAdmission).tUs - fromUs) / 1000));
  }
  return null;
}
