/**
 * The envelope check every fleet test ends with: for every window [t_i, t_j]
 * bounded by admission timestamps, admitted cost ≤ B + r·(t_j − t_i).
 *
 * Exact: times are whole microseconds of the host monotonic clock (the one
 * the coordinator refills by), arithmetic is BigInt in the pool's units.
 * Linear time: with prefix sums S, the condition is
 *   (S_j·u − ρ·t_j) − (S_{i−1}·u − ρ·t_i) ≤ B·u   for all i ≤ j,
 * so a running minimum of the subtracted term finds the worst window.
 */
import type { Rate } from '@tokenlease/shared';

export interface Admission {
  /** Host monotonic clock, whole µs. */
  readonly tUs: number;
  readonly cost: number;
}

export interface EnvelopeReport {
  readonly admissions: number;
  readonly admittedTokens: number;
  /** Largest (admitted − (B + r·T)) over all windows, in tokens; ≤ 0 means the envelope held. */
  readonly worstExcessTokens: number;
  /** Admissions that end at least one window over the envelope (0 when it held). */
  readonly violations: number;
  readonly worstWindow: { readonly fromUs: number; readonly toUs: number; readonly admittedTokens: number } | null;
  readonly ok: boolean;
}

export function checkEnvelope(admissions: readonly Admission[], capacity: number, rate: Rate): EnvelopeReport {
  const sorted = [...admissions].sort((a, b) => a.tUs - b.tUs);
  const periodUs = BigInt(rate.periodMs) * 1000n;
  const rho = BigInt(rate.tokens);
  const bound = BigInt(capacity) * periodUs;
  const t0 = sorted.length > 0 ? BigInt((sorted[0] as Admission).tUs) : 0n;
  let prefix = 0n;
  let minTerm: bigint | null = null;
  let minIndex = 0;
  let worst: bigint | null = null;
  let worstFrom = 0;
  let worstTo = 0;
  let violations = 0;
  const prefixAt: bigint[] = [];
  for (let j = 0; j < sorted.length; j += 1) {
    const a = sorted[j] as Admission;
    const t = BigInt(a.tUs) - t0;
    const term = prefix * periodUs - rho * t;
    if (minTerm === null || term < minTerm) {
      minTerm = term;
      minIndex = j;
    }
    prefixAt.push(prefix);
    prefix += BigInt(a.cost);
    const excess = prefix * periodUs - rho * t - minTerm - bound;
    if (excess > 0n) violations += 1;
    if (worst === null || excess > worst) {
      worst = excess;
      worstFrom = minIndex;
      worstTo = j;
    }
  }
  const from = sorted[worstFrom];
  const to = sorted[worstTo];
  const windowTokens = worst === null ? 0 : Number(prefixAfter(prefixAt, sorted, worstTo) - (prefixAt[worstFrom] ?? 0n));
  const worstExcessTokens = worst === null ? -capacity : Number(worst) / Number(periodUs);
  return {
    admissions: sorted.length,
    admittedTokens: Number(prefix),
    worstExcessTokens,
    violations,
    worstWindow: from && to ? { fromUs: from.tUs, toUs: to.tUs, admittedTokens: windowTokens } : null,
    ok: worst === null || worst <= 0n,
  };
}

function prefixAfter(prefixAt: readonly bigint[], sorted: readonly Admission[], j: number): bigint {
  return (prefixAt[j] ?? 0n) + BigInt((sorted[j] as Admission).cost);
}

/**
 * worstWindowRatio — the largest admitted / (B + r·T) over all windows
 * bounded by admission timestamps (1 means a window used the whole
 * envelope; above 1 is a violation). Found by bisection on the ratio λ:
 * some window exceeds λ·(B + r·T) iff max_j (S_j − λρt_j) − min_{i≤j}
 * (S_{i−1} − λρt_i) > λB. A figure to report; `checkEnvelope` is the exact test.
 */
export function worstWindowRatio(admissions: readonly Admission[], capacity: number, rate: Rate): number {
  const sorted = [...admissions].sort((a, b) => a.tUs - b.tUs);
  if (sorted.length === 0) return 0;
  const t0 = (sorted[0] as Admission).tUs;
  const perUs = rate.tokens / (rate.periodMs * 1000);
  const exceeds = (lambda: number): boolean => {
    let prefix = 0;
    let minTerm = Infinity;
    for (const a of sorted) {
      const t = a.tUs - t0;
      minTerm = Math.min(minTerm, prefix - lambda * perUs * t);
      prefix += a.cost;
      if (prefix - lambda * perUs * t - minTerm > lambda * capacity) return true;
    }
    return false;
  };
  let lo = 0;
  let hi = 1;
  while (exceeds(hi)) hi *= 2;
  for (let i = 0; i < 40; i += 1) {
    const mid = (lo + hi) / 2;
    if (exceeds(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}
