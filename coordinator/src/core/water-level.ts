/**
 * WaterLevel: a rate lease's weighted max-min fair share of the assignable
 * refill, at a cost per renewal that does not grow with the fleet.
 *
 * Rules:
 * - Up to EXACT_LEASES_MAX live leases, every share is computed exactly by
 *   water-filling all of them (water-fill.ts).
 * - Above that, the water level λ (the share per unit of weight of every
 *   lease whose demand is not met) is recomputed over all leases once
 *   every `n / RECOMPUTE_DIVISOR` renewals (or when the assignable total
 *   changes), and a lease's share is `min(demand, ⌊λ · weight⌋)`: O(n log n)
 *   every n/16 renewals, O(log n) amortized per renewal.
 * - A stale λ can only misjudge fairness, never credit: the pool clips
 *   every rate to what the other leases leave unassigned (rate-lease.ts).
 */
import type { LeaseRecord, LeaseTable } from './lease-table.js';
import { fairShareOf } from './rate-lease.js';

/** EXACT_LEASES_MAX — up to this many live leases, shares are exact. */
export const EXACT_LEASES_MAX = 64;
/** RECOMPUTE_DIVISOR — above EXACT_LEASES_MAX, λ is recomputed every n / RECOMPUTE_DIVISOR renewals. */
export const RECOMPUTE_DIVISOR = 16;
const MS_PER_S = 1000;

export class WaterLevel {
  private levelPerWeight = Infinity;
  private renewalsSince = Infinity;
  private assignableAt = -1;

  /** shareOf — `record`'s share of `assignable` tokens per period of `periodMs` among the live `leases`' demands. */
  shareOf(leases: LeaseTable, record: LeaseRecord, assignable: number, periodMs: number): number {
    if (leases.size <= EXACT_LEASES_MAX) return fairShareOf([...leases.all()], record, assignable, periodMs);
    this.renewalsSince += 1;
    if (this.renewalsSince >= leases.size / RECOMPUTE_DIVISOR || assignable !== this.assignableAt) {
      this.levelPerWeight = levelOf(leases, assignable, periodMs);
      this.renewalsSince = 0;
      this.assignableAt = assignable;
    }
    const demand = Math.ceil((record.demandPerSecond * periodMs) / MS_PER_S);
    return Math.max(0, Math.min(demand, Math.floor(this.levelPerWeight * record.weight)));
  }
}

/** levelOf — the water level per unit of weight at which the leases' demands fill `assignable` (Infinity: all met). */
function levelOf(leases: LeaseTable, assignable: number, periodMs: number): number {
  const claims: { demand: number; weight: number }[] = [];
  for (const l of leases.all()) {
    const demand = Math.ceil((l.demandPerSecond * periodMs) / MS_PER_S);
    if (demand > 0) claims.push({ demand, weight: l.weight > 0 ? l.weight : 1 });
  }
  claims.sort((a, b) => a.demand / a.weight - b.demand / b.weight);
  let remaining = assignable;
  let weightLeft = claims.reduce((sum, c) => sum + c.weight, 0);
  for (const c of claims) {
    const level = remaining / weightLeft;
    if (c.demand > level * c.weight) return level;
    remaining -= c.demand;
    weightLeft -= c.weight;
  }
  return Infinity;
}
