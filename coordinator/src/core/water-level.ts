/**
 * WaterLevel: a rate lease's weighted max-min fair share of the assignable
 * refill, at a cost per renewal that does not grow with the fleet.
 *
 * Rules:
 * - Up to EXACT_LEASES_MAX live leases, every share is computed exactly by
 *   water-filling all of them (water-fill.ts).
 * - Above that, the water level λ (the share per unit of weight of every
 *   lease whose claim is not met) and, when all are met, what the claims
 *   leave per unit of weight (σ) are recomputed over all leases once every
 *   `n / RECOMPUTE_DIVISOR` renewals (or when the assignable total
 *   changes), and a lease's share is `min(claim, ⌊λ · weight⌋)`, or
 *   `claim + ⌊σ · weight⌋`: O(n log n) every n/16 renewals, O(log n)
 *   amortized per renewal.
 * - A stale λ can only misjudge fairness, never credit: the pool clips
 *   every rate to what the other leases leave unassigned (rate-lease.ts).
 */
import type { LeaseRecord, LeaseTable } from './lease-table.js';
import { claimOf, fairShareOf } from './rate-lease.js';
import { weightIn } from './water-fill.js';

/** EXACT_LEASES_MAX — up to this many live leases, shares are exact. */
export const EXACT_LEASES_MAX = 64;
/** RECOMPUTE_DIVISOR — above EXACT_LEASES_MAX, λ is recomputed every n / RECOMPUTE_DIVISOR renewals. */
export const RECOMPUTE_DIVISOR = 16;

export class WaterLevel {
  private levelPerWeight = Infinity;
  private leftPerWeight = 0;
  private renewalsSince = Infinity;
  private assignableAt = -1;

  /** shareOf — `record`'s share of `assignable` tokens per period of `periodMs` among the live `leases`' demands. */
  shareOf(leases: LeaseTable, record: LeaseRecord, assignable: number, periodMs: number): number {
    if (leases.size <= EXACT_LEASES_MAX) return fairShareOf([...leases.all()], record, assignable, periodMs);
    this.renewalsSince += 1;
    if (this.renewalsSince >= leases.size / RECOMPUTE_DIVISOR || assignable !== this.assignableAt) {
      const level = levelOf(leases, assignable, periodMs);
      this.levelPerWeight = level.levelPerWeight;
      this.leftPerWeight = level.leftPerWeight;
      this.renewalsSince = 0;
      this.assignableAt = assignable;
    }
    const claim = claimOf(record.demandPerSecond, periodMs);
    if (this.levelPerWeight === Infinity) return claim + Math.floor(this.leftPerWeight * weightIn(record.weight));
    return Math.max(0, Math.min(claim, Math.floor(this.levelPerWeight * record.weight)));
  }
}

/**
 * levelOf — the water level per unit of weight at which the leases' claims
 * fill `assignable` (Infinity: all met), and what the claims then leave per
 * unit of weight of all leases (0 unless all are met).
 */
function levelOf(leases: LeaseTable, assignable: number, periodMs: number): { levelPerWeight: number; leftPerWeight: number } {
  const claims: { demand: number; weight: number }[] = [];
  let weightsAll = 0;
  for (const l of leases.all()) {
    const demand = claimOf(l.demandPerSecond, periodMs);
    weightsAll += weightIn(l.weight);
    if (demand > 0) claims.push({ demand, weight: weightIn(l.weight) });
  }
  claims.sort((a, b) => a.demand / a.weight - b.demand / b.weight);
  let remaining = assignable;
  let weightLeft = claims.reduce((sum, c) => sum + c.weight, 0);
  for (const c of claims) {
    const level = remaining / weightLeft;
    if (c.demand > level * c.weight) return { levelPerWeight: level, leftPerWeight: 0 };
    remaining -= c.demand;
    weightLeft -= c.weight;
  }
  return { levelPerWeight: Infinity, leftPerWeight: weightsAll > 0 ? Math.max(0, remaining) / weightsAll : 0 };
}
