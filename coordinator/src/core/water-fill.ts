/**
 * waterFill — weighted max-min fair division of `total` among claims.
 *
 * Every claimant gets at most its demand; what is left is divided in
 * proportion to the weights among those that want more, raising one
 * "water level" until the total is used or every demand is met (water-
 * filling). Claimants whose demand is met at the level keep what they asked
 * for; the rest each get level × weight.
 *
 * `round` turns each share into what the claimant is handed. The default,
 * Math.floor, gives whole numbers (the sum never exceeds `total`), and what
 * rounding leaves over passes to those served later (larger demands per
 * weight): the coordinator divides a rate in whole tokens per period this
 * way. `exactShares` (no rounding) gives the real-valued division, the fair
 * share the sweep measures fairness against.
 *
 * Edge cases: total ≤ 0 or no claims gives zeros; a demand ≤ 0 gets 0; a
 * weight ≤ 0 counts as 1.
 */
export interface Claim {
  readonly demand: number;
  readonly weight: number;
}

/** weightIn — a claim's weight in the division: a weight ≤ 0 counts as 1. */
export function weightIn(weight: number): number {
  return weight > 0 ? weight : 1;
}

/** exactShares — the `round` of waterFill that keeps each share as it is (a real number). */
export const exactShares = (share: number): number => share;

export function waterFill(claims: readonly Claim[], total: number, round: (share: number) => number = Math.floor): number[] {
  const shares = claims.map(() => 0);
  if (!(total > 0)) return shares;
  const open = claims.map((c, i) => ({ i, demand: Math.max(0, c.demand), weight: weightIn(c.weight) })).filter((c) => c.demand > 0);
  // Serve in order of demand per unit of weight: those below the level are met in full.
  open.sort((a, b) => a.demand / a.weight - b.demand / b.weight);
  let remaining = total;
  let weightLeft = open.reduce((sum, c) => sum + c.weight, 0);
  for (const c of open) {
    const level = remaining / weightLeft;
    // Never below 0, whatever floating point leaves of `remaining`.
    const share = Math.max(0, Math.min(c.demand, level * c.weight));
    shares[c.i] = round(share);
    remaining -= shares[c.i] as number;
    weightLeft -= c.weight;
  }
  return shares;
}
