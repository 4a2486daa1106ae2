/**
 * Fairness and latency figures of a sweep row.
 *
 * Both indices divide what was admitted in all, not what could have been:
 * they measure how fairly the fleet split what it admitted, apart from how
 * much that was (utilization says that). The fair division is the
 * coordinator's own water-filling (`waterFill`), without rounding.
 *
 * jain — Jain's index (Σx)²/(n·Σx²) of x_i = admitted_i / fairShare_i, where
 * fairShare is the max-min fair division (water-filling) of what was
 * admitted in all among the agents' offered demands. Agents with equal
 * demand must get equal tokens to score 1; an agent that wanted less than
 * its share is fair when it got what it wanted.
 */
import { exactShares, waterFill } from '@tokenlease/coordinator/internal';

/** Demand above the fair share by less than this fraction of it is rounding, not saturation. */
const SATURATION_TOLERANCE = 1e-9;

/**
 * weightedMaxMinShares — the weighted max-min fair division of `total`
 * among `demands`, real-valued: each gets at most its demand; the rest is
 * divided in proportion to `weights` (absent or ≤ 0: 1) among those that
 * want more.
 */
export function weightedMaxMinShares(demands: readonly number[], total: number, weights: readonly number[] = []): number[] {
  return waterFill(
    demands.map((demand, i) => ({ demand, weight: weights[i] ?? 1 })),
    total,
    exactShares,
  );
}

export function jain(admitted: readonly number[], offered: readonly number[]): number {
  const total = admitted.reduce((a, b) => a + b, 0);
  const fair = weightedMaxMinShares(offered, total);
  const xs = admitted.map((a, i) => ((fair[i] ?? 0) > 0 ? a / (fair[i] as number) : null)).filter((x): x is number => x !== null);
  if (xs.length === 0) return 1;
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (xs.length * squares);
}

/**
 * jainOverShare — Jain's index over x_i = admitted_i / weight_i among the
 * agents whose offered demand exceeds their weighted max-min fair share of
 * all that was admitted: max-min fairness gives those the same amount per
 * unit of weight, so 1 means they did get it. 1 when fewer than two agents
 * wanted more than their share (nothing to compare).
 */
export function jainOverShare(admitted: readonly number[], offered: readonly number[], weights: readonly number[] = []): number {
  const total = admitted.reduce((a, b) => a + b, 0);
  const fair = weightedMaxMinShares(offered, total, weights);
  const over = offered.flatMap((demand, i) => (demand > (fair[i] ?? 0) * (1 + SATURATION_TOLERANCE) ? [i] : []));
  if (over.length < 2) return 1;
  const xs = over.map((i) => (admitted[i] ?? 0) / ((weights[i] ?? 1) > 0 ? (weights[i] ?? 1) : 1));
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : Math.min(1, (sum * sum) / (xs.length * squares));
}

/** p99 — the 99th percentile of `values` (0 when empty). */
export function p99(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] as number;
}
