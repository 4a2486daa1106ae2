/**
 * waterFill — weighted max-min fair division of `total` among claims.
 *
 * Every claimant gets at most its demand; what is left is divided in
 * proportion to the weights among those that want more, raising one
 * "water level" until the total is used or every demand is met (water-
 * filling). Claimants whose demand is met at the level keep what they asked
 * for; the rest each get level × weight. Results are whole numbers (rounded
 * down, so the sum never exceeds `total`); what rounding leaves over passes
 * to those served later (larger demands per weight).
 *
 * Edge cases: total ≤ 0 or no claims gives zeros; a demand ≤ 0 gets 0; a
 * weight ≤ 0 counts as 1.
 */
export interface Claim {
  readonly demand: number;
  readonly weight: number;
}

export function waterFill(claims: readonly Claim[], total: number): number[] {
  const shares = claims.map(() => 0);
  if (!(total > 0)) return shares;
  const open = claims.map((c, i) => ({ i, demand: Math.max(0, c.demand), weight: c.weight > 0 ? c.weight : 1 })).filter((c) => c.demand > 0);
  // Serve in order of demand per unit of weight: those below the level are met in full.
  open.sort((a, b) => a.demand / a.weight - b.demand / b.weight);
  let remaining = total;
  let weightLeft = open.reduce((sum, c) => sum + c.weight, 0);
  for (const c of open) {
    const level = remaining / weightLeft;
    const share = Math.min(c.demand, level * c.weight);
    shares[c.i] = Math.floor(share);
    remaining -= shares[c.i] as number;
    weightLeft -= c.weight;
  }
  return shares;
}
