/**
 * Fairness and latency figures of a sweep row.
 *
 * jain — Jain's index (Σx)²/(n·Σx²) of x_i = admitted_i / fairShare_i, where
 * fairShare is the max-min fair division (water-filling) of what was
 * admitted in all among the agents' offered demands. Agents with equal
 * demand must get equal tokens to score 1; an agent that wanted less than
 * its share is fair when it got what it wanted.
 */
export function maxMinShares(demands: readonly number[], total: number): number[] {
  const shares = demands.map(() => 0);
  let remaining = total;
  let open = demands.map((d, i) => ({ d, i })).filter((x) => x.d > 0);
  while (open.length > 0 && remaining > 1e-9) {
    const each = remaining / open.length;
    const satisfied = open.filter((x) => x.d - (shares[x.i] ?? 0) <= each);
    if (satisfied.length === 0) {
      for (const x of open) shares[x.i] = (shares[x.i] ?? 0) + each;
      break;
    }
    for (const x of satisfied) {
      remaining -= x.d - (shares[x.i] ?? 0);
      shares[x.i] = x.d;
    }
    open = open.filter((x) => !satisfied.includes(x));
  }
  return shares;
}

export function jain(admitted: readonly number[], offered: readonly number[]): number {
  const total = admitted.reduce((a, b) => a + b, 0);
  const fair = maxMinShares(offered, total);
  const xs = admitted.map((a, i) => ((fair[i] ?? 0) > 0 ? a / (fair[i] as number) : null)).filter((x): x is number => x !== null);
  if (xs.length === 0) return 1;
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (xs.length * squares);
}

/** p99 — the 99th percentile of `values` (0 when empty). */
export function p99(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] as number;
}
