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
 *   `claim + ⌊σ · weight⌋`: O(n) expected every n/16 renewals, O(1)
 *   amortized per renewal.
 * - The level is found by selection, not by sorting: a pivot's level
 *   splits the claims still undecided into those met at it and those cut
 *   to it, and only one side is looked at again. Pivots are drawn by a
 *   generator of the pool's own (the same requests give the same shares,
 *   and no client can choose demands that make every split lopsided).
 *   The claims are laid out in typed arrays shared by every pool (the
 *   computation is synchronous), so a recomputation allocates nothing,
 *   and read from the lease table's dense columns of demands and weights,
 *   not from each lease record (which, with many leases, would miss the
 *   cache once per lease).
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
  /** xorshift32 state of this pool's pivots (never 0). */
  private pivotState = 0x9e3779b9;

  /** shareOf — `record`'s share of `assignable` tokens per period of `periodMs` among the live `leases`' demands. */
  shareOf(leases: LeaseTable, record: LeaseRecord, assignable: number, periodMs: number): number {
    if (leases.size <= EXACT_LEASES_MAX) return fairShareOf([...leases.all()], record, assignable, periodMs);
    this.renewalsSince += 1;
    if (this.renewalsSince >= leases.size / RECOMPUTE_DIVISOR || assignable !== this.assignableAt) {
      this.recompute(leases, assignable, periodMs);
      this.renewalsSince = 0;
      this.assignableAt = assignable;
    }
    const claim = claimOf(record.demandPerSecond, periodMs);
    if (this.levelPerWeight === Infinity) return claim + Math.floor(this.leftPerWeight * weightIn(record.weight));
    return Math.max(0, Math.min(claim, Math.floor(this.levelPerWeight * record.weight)));
  }

  /**
   * recompute — the water level per unit of weight at which the leases'
   * claims fill `assignable` (Infinity: all are met), and what the claims
   * then leave per unit of weight of all leases (0 unless all are met).
   */
  private recompute(leases: LeaseTable, assignable: number, periodMs: number): void {
    const columns = leases.demandColumns();
    const n = columns.count;
    if (scratch.ratio.length < n) scratch = makeScratch(Math.max(n, 2 * scratch.ratio.length));
    const { ratio, demand, weight } = scratch;
    let count = 0;
    let weightsAll = 0;
    for (let slot = 0; slot < n; slot += 1) {
      const d = claimOf(columns.demandPerSecond[slot] as number, periodMs);
      const w = weightIn(columns.weight[slot] as number);
      weightsAll += w;
      if (d <= 0) continue;
      ratio[count] = d / w;
      demand[count] = d;
      weight[count] = w;
      count += 1;
    }
    // [lo, hi) holds the claims still undecided; metDemand: the claims met below the level; cutWeight: those cut to it.
    let lo = 0;
    let hi = count;
    let metDemand = 0;
    let cutWeight = 0;
    while (lo < hi) {
      const pivot = ratio[lo + (this.nextPivot() % (hi - lo))] as number;
      // Three-way partition of [lo, hi): below the pivot's level, at it, above it.
      let lt = lo;
      let gt = hi;
      let i = lo;
      let belowDemand = 0;
      let atDemand = 0;
      let atWeight = 0;
      let aboveWeight = 0;
      while (i < gt) {
        const r = ratio[i] as number;
        if (r < pivot) {
          belowDemand += demand[i] as number;
          swap(lt, i);
          lt += 1;
          i += 1;
        } else if (r > pivot) {
          gt -= 1;
          aboveWeight += weight[i] as number;
          swap(i, gt);
        } else {
          atDemand += demand[i] as number;
          atWeight += weight[i] as number;
          i += 1;
        }
      }
      // At the pivot's level every claim at or below it is met and every one above is cut to it.
      const filled = metDemand + belowDemand + atDemand + pivot * (cutWeight + aboveWeight);
      if (filled >= assignable) {
        // The level is at or below the pivot's: the claims at it and above are cut.
        cutWeight += atWeight + aboveWeight;
        hi = lt;
      } else {
        metDemand += belowDemand + atDemand;
        lo = gt;
      }
    }
    if (cutWeight > 0) {
      this.levelPerWeight = (assignable - metDemand) / cutWeight;
      this.leftPerWeight = 0;
    } else {
      this.levelPerWeight = Infinity;
      this.leftPerWeight = weightsAll > 0 ? Math.max(0, assignable - metDemand) / weightsAll : 0;
    }
  }

  private nextPivot(): number {
    let x = this.pivotState;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.pivotState = x >>> 0;
    return this.pivotState;
  }
}

interface Scratch {
  readonly ratio: Float64Array;
  readonly demand: Float64Array;
  readonly weight: Float64Array;
}

function makeScratch(size: number): Scratch {
  return { ratio: new Float64Array(size), demand: new Float64Array(size), weight: new Float64Array(size) };
}

/** The claims of the pool being recomputed: one set for every pool, grown to the largest fleet seen. */
let scratch: Scratch = makeScratch(1024);

/** swap — exchanges claims `a` and `b` of the scratch arrays. */
function swap(a: number, b: number): void {
  const { ratio, demand, weight } = scratch;
  const r = ratio[a] as number;
  ratio[a] = ratio[b] as number;
  ratio[b] = r;
  const d = demand[a] as number;
  demand[a] = demand[b] as number;
  demand[b] = d;
  const w = weight[a] as number;
  weight[a] = weight[b] as number;
  weight[b] = w;
}
