/**
 * Made-up sweep rows for tests and for previewing the report before the
 * simulator exists. The numbers only imitate the shape the sweep table of docs/lease-sizing.md shows
 * for 20 agents at 1.5× the refill rate (B = 500): small leases reach the
 * ideal bucket at more round-trips, large strict leases collapse, a large
 * allowance recovers part of it. They are not measurements.
 *
 * Guarantees: deterministic (no randomness), every row passes
 * sweepRowProblem, and the lease rows come out of order on purpose so that
 * sorting is exercised. Rate rows (`sampleRateRows`) imitate what the
 * simulator measured for rate leases: a few percent short of the ideal, at
 * a cost in round-trips that falls with the refresh interval.
 */
import { utilizationOf, type SweepRow } from './row.js';
import { tokenleaseSettings } from './settings.js';

/** SAMPLE_IDEAL_TOKENS — `idealAdmitted` of every sample row, tokens (60 s at 1000/s plus B). */
export const SAMPLE_IDEAL_TOKENS = 60_500;

const STRICT_UTILIZATION: Readonly<Record<number, number>> = { 5: 0.999, 10: 0.999, 25: 0.87, 50: 0.49, 100: 0.31 };
const ALLOWANCE_UTILIZATION: Readonly<Record<number, number>> = { 5: 1.01, 10: 1.01, 25: 1.0, 50: 0.93, 100: 0.74 };

/**
 * sampleRow — one made-up row; `overrides` replaces any field (counts in
 * tokens, times in ms). `reportMs` defaults to 0 (off) for a lease row and
 * null for the other strategies.
 */
export function sampleRow(overrides: Partial<SweepRow> = {}): SweepRow {
  return {
    strategy: 'lease',
    leaseSize: 10,
    refreshMs: null,
    ttlMs: 2000,
    allowance: 0,
    reportMs: (overrides.strategy ?? 'lease') === 'lease' ? 0 : null,
    admitted: 60_440,
    idealAdmitted: SAMPLE_IDEAL_TOKENS,
    utilization: utilizationOf(60_440, SAMPLE_IDEAL_TOKENS),
    overAdmitted: 0,
    roundTripsPer1k: 100,
    reportsPer1k: 0,
    strandedTokens: 40,
    jain: 0.98,
    jainOverShare: 0.99,
    p99WaitMs: 3.2,
    denialRate: 0.33,
    requests: 90_000,
    ...overrides,
  };
}

/**
 * sampleSweepRows — lease rows for every size in {5, 10, 25, 50, 100} × TTL
 * in {1 s, 2 s, 5 s} × each of `allowances` (tokens), plus a central and a
 * local baseline. Longer TTLs cost a little utilization and save a few
 * round-trips.
 */
export function sampleSweepRows(allowances: readonly number[] = [0]): SweepRow[] {
  const rows: SweepRow[] = [];
  for (const allowance of allowances) {
    for (const ttlMs of [5000, 1000, 2000]) {
      for (const leaseSize of [100, 5, 25, 10, 50]) {
        const base = (allowance === 0 ? STRICT_UTILIZATION : ALLOWANCE_UTILIZATION)[leaseSize] ?? 1;
        const utilization = Math.max(0.05, base - (ttlMs / 1000 - 1) * 0.004 * Math.log10(leaseSize));
        const admitted = Math.round(utilization * SAMPLE_IDEAL_TOKENS);
        rows.push(
          sampleRow({
            leaseSize,
            ttlMs,
            allowance,
            admitted,
            utilization: utilizationOf(admitted, SAMPLE_IDEAL_TOKENS),
            roundTripsPer1k: (1000 / leaseSize) * (1 + 1000 / (ttlMs * 10)),
            strandedTokens: Math.round(leaseSize * 20 * (1 - utilization) + ttlMs / 100),
            jain: Math.min(1, 0.6 + 0.4 * utilization),
            p99WaitMs: 2 + leaseSize / 10 + ttlMs / 1000,
            denialRate: 1 - admitted / 90_000,
          }),
        );
      }
    }
  }
  const baseline = (strategy: 'central' | 'local', admitted: number, roundTripsPer1k: number): SweepRow =>
    sampleRow({
      strategy,
      leaseSize: null,
      ttlMs: null,
      allowance: 0,
      admitted,
      utilization: utilizationOf(admitted, SAMPLE_IDEAL_TOKENS),
      roundTripsPer1k,
      strandedTokens: 0,
      jain: strategy === 'central' ? 0.99 : 0.71,
      p99WaitMs: strategy === 'central' ? 2.1 : 0,
      denialRate: 1 - admitted / 90_000,
    });
  rows.push(baseline('local', 43_100, 0), baseline('central', 60_380, 1490.6));
  return rows;
}

/**
 * sampleRateRows — made-up rate-lease rows for every refresh interval in
 * {250 ms, 500 ms, 1 s, 2 s} with each TTL of {1 s, 2 s, 5 s} at least twice
 * it, for each of `allowances`, longest refresh first (out of order).
 */
export function sampleRateRows(allowances: readonly number[] = [0]): SweepRow[] {
  const settings = tokenleaseSettings({
    allowancesTokens: allowances,
    ttlsMs: [1000, 2000, 5000],
    leaseSizesTokens: [],
    leaseModes: ['rate'],
    refreshesMs: [250, 500, 1000, 2000],
    reportsMs: [0],
  });
  return settings.reverse().map((setting) => {
    const refreshMs = setting.refreshMs ?? 1000;
    const utilization = 0.95 - refreshMs / 100_000;
    const admitted = Math.round(utilization * SAMPLE_IDEAL_TOKENS);
    return sampleRow({
      ...setting,
      strategy: 'rate',
      admitted,
      utilization: utilizationOf(admitted, SAMPLE_IDEAL_TOKENS),
      roundTripsPer1k: 20_000 / refreshMs + 1,
      strandedTokens: null,
      jain: 0.97,
      jainOverShare: 0.995,
      p99WaitMs: 200,
      denialRate: 1 - admitted / 90_000,
    });
  });
}
