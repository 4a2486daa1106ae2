/**
 * The one row shape of the lease-size sweep: every combination of lease size,
 * TTL, allowance and usage-report interval (chunk leases), every refresh interval, TTL and
 * allowance (rate leases), and each baseline, produces exactly one SweepRow.
 *
 * Guarantees: the fields below are the whole contract between the simulator
 * (which fills rows) and the presentation (table, recommendation, HTML),
 * which read nothing else. `sweepRowProblem` states the invariants a row must
 * satisfy, so a broken simulator shows up as a clear message rather than as a
 * strange chart. Token counts are whole tokens; times are milliseconds.
 */

/**
 * Strategy — how the fleet limits: `lease` is tokenlease with chunk leases
 * (leaseMode 'chunk'); `rate` tokenlease with rate (trickle) leases
 * (leaseMode 'rate'); `central` a round-trip per request to one exact
 * bucket; `local` independent buckets of r/N per agent, no coordination.
 */
export type Strategy = 'lease' | 'rate' | 'central' | 'local';

/** STRATEGIES — every strategy, in the order tables and charts list them. */
export const STRATEGIES: readonly Strategy[] = ['lease', 'rate', 'central', 'local'];

/** STRATEGY_DESCRIPTIONS — one-line explanations of each strategy, for legends. */
export const STRATEGY_DESCRIPTIONS: Readonly<Record<Strategy, string>> = {
  lease: 'tokenlease, chunk leases: agents spend leased chunks locally',
  rate: 'tokenlease, rate leases: agents accrue a fair share of the refill, renewing once per refresh interval',
  central: 'a round-trip per request to one exact bucket',
  local: 'independent buckets of r/N per agent, no coordination',
};

/**
 * SweepRow — what one simulated run measured. Baselines have `leaseSize`,
 * `refreshMs`, `ttlMs` and `reportMs` null and `allowance` 0; rate rows have
 * `leaseSize` and `reportMs` null (their leases are capped by their share
 * of B; usage reports apply to chunk leases only).
 */
export interface SweepRow {
  /** 'lease' = tokenlease, chunk leases; 'rate' = tokenlease, rate leases; 'central' = a round-trip per request to one exact bucket; 'local' = independent buckets of r/N per agent. */
  readonly strategy: Strategy;
  /** maxLeaseTokens for 'lease', tokens; null otherwise. */
  readonly leaseSize: number | null;
  /** The agents' refresh interval (keeper refreshMs) for 'rate', ms; null otherwise. */
  readonly refreshMs: number | null;
  /** Lease TTL for 'lease' and 'rate', ms; null for baselines. */
  readonly ttlMs: number | null;
  /** Extra burst tokens allowed beyond B (0 = strict), tokens; baselines 0. */
  readonly allowance: number;
  /** The agents' usage-report interval (keeper reportMs) for 'lease', ms, 0 = off; null otherwise. */
  readonly reportMs: number | null;
  /** Tokens admitted by the fleet. */
  readonly admitted: number;
  /** Tokens one ideal shared bucket admits for the same arrivals. */
  readonly idealAdmitted: number;
  /** admitted / idealAdmitted, a fraction (1 when idealAdmitted is 0); may pass 1 when allowance > 0. */
  readonly utilization: number;
  /** Worst excess of admitted over B + r·T in any window, tokens; 0 when the envelope held. */
  readonly overAdmitted: number;
  /** Coordinator round-trips (request attempts) per 1,000 admitted requests; usage reports are not among them (reportsPer1k). */
  readonly roundTripsPer1k: number;
  /** One-way usage reports per 1,000 admitted requests (0 with reports off, and for rate rows and baselines). */
  readonly reportsPer1k: number;
  /** Tokens leased and then lost at expiry or never used; null for 'rate' (what a rate lease accrues is not counted). */
  readonly strandedTokens: number | null;
  /** Jain's fairness index over agents with equal demand, in (0, 1]. */
  readonly jain: number;
  /**
   * Jain's index over the tokens admitted to the agents whose offered demand
   * exceeds their max-min fair share of all admitted (under max-min fairness
   * those get equal amounts), in (0, 1]; 1 when fewer than two such agents.
   */
  readonly jainOverShare: number;
  /** p99 wait of take() calls, ms. */
  readonly p99WaitMs: number;
  /** Denied requests / offered requests, a fraction in [0, 1]. */
  readonly denialRate: number;
  /** Offered requests. */
  readonly requests: number;
}

/**
 * utilizationOf — `admitted / idealAdmitted` as SweepRow defines it: 1 when
 * `idealAdmitted` is 0 (nothing could be admitted, nothing was missed).
 */
export function utilizationOf(admitted: number, idealAdmitted: number): number {
  return idealAdmitted === 0 ? 1 : admitted / idealAdmitted;
}

/** isLeaseRow — true for a tokenlease chunk-lease row, whose `leaseSize` and `ttlMs` are then numbers. */
export function isLeaseRow(
  row: SweepRow,
): row is SweepRow & { readonly strategy: 'lease'; readonly leaseSize: number; readonly ttlMs: number } {
  return row.strategy === 'lease' && row.leaseSize !== null && row.ttlMs !== null;
}

/** isRateRow — true for a tokenlease rate-lease row, whose `refreshMs` and `ttlMs` are then numbers. */
export function isRateRow(
  row: SweepRow,
): row is SweepRow & { readonly strategy: 'rate'; readonly refreshMs: number; readonly ttlMs: number } {
  return row.strategy === 'rate' && row.refreshMs !== null && row.ttlMs !== null;
}

/** isTokenleaseRow — a chunk-lease or rate-lease row (a setting one could configure), as opposed to a baseline. */
export function isTokenleaseRow(row: SweepRow): row is SweepRow & { readonly strategy: 'lease' | 'rate'; readonly ttlMs: number } {
  return isLeaseRow(row) || isRateRow(row);
}

const nonNegative = (value: number): boolean => Number.isFinite(value) && value >= 0;

/**
 * sweepRowProblem — what is wrong with a row, or null when it is sound:
 * counts finite and non-negative, `leaseSize`/`ttlMs` positive for 'lease',
 * `reportMs` ≥ 0 for 'lease' and null otherwise,
 * `refreshMs`/`ttlMs` positive for 'rate', the others null (all three for
 * baselines), `strandedTokens` null for 'rate' only, `jain` and
 * `jainOverShare` in (0, 1], `denialRate` in [0, 1].
 */
export function sweepRowProblem(row: SweepRow): string | null {
  const counts = [
    'admitted',
    'idealAdmitted',
    'utilization',
    'overAdmitted',
    'roundTripsPer1k',
    'reportsPer1k',
    'p99WaitMs',
    'requests',
  ] as const;
  for (const field of counts) {
    if (!nonNegative(row[field])) return `${field} must be a finite number ≥ 0, got ${row[field]}`;
  }
  if (row.strategy === 'rate' ? row.strandedTokens !== null : !nonNegative(row.strandedTokens ?? Number.NaN)) {
    return `strandedTokens must be ${row.strategy === 'rate' ? 'null for a rate row' : 'a finite number ≥ 0'}, got ${row.strandedTokens}`;
  }
  if (row.strategy === 'lease') {
    if (row.leaseSize === null || !(row.leaseSize >= 1)) return `a lease row needs leaseSize ≥ 1, got ${row.leaseSize}`;
    if (row.reportMs === null || !nonNegative(row.reportMs)) return `a lease row needs reportMs ≥ 0 (0 = off), got ${row.reportMs}`;
    if (row.ttlMs === null || !(row.ttlMs > 0)) return `a lease row needs ttlMs > 0, got ${row.ttlMs}`;
    if (row.refreshMs !== null) return `a lease row has refreshMs null, got ${row.refreshMs}`;
  } else if (row.strategy === 'rate') {
    if (row.refreshMs === null || !(row.refreshMs > 0)) return `a rate row needs refreshMs > 0, got ${row.refreshMs}`;
    if (row.ttlMs === null || !(row.ttlMs > 0)) return `a rate row needs ttlMs > 0, got ${row.ttlMs}`;
    if (row.leaseSize !== null) return `a rate row has leaseSize null, got ${row.leaseSize}`;
  } else if (row.leaseSize !== null || row.ttlMs !== null || row.refreshMs !== null) {
    return `a ${row.strategy} baseline has leaseSize, refreshMs and ttlMs null`;
  }
  if (row.strategy !== 'lease' && row.reportMs !== null)
    return `a ${row.strategy} row has reportMs null (usage reports are for chunk leases), got ${row.reportMs}`;
  if (!nonNegative(row.allowance)) return `allowance must be ≥ 0, got ${row.allowance}`;
  if (!(row.jain > 0 && row.jain <= 1)) return `jain must be in (0, 1], got ${row.jain}`;
  if (!(row.jainOverShare > 0 && row.jainOverShare <= 1)) return `jainOverShare must be in (0, 1], got ${row.jainOverShare}`;
  if (!(row.denialRate >= 0 && row.denialRate <= 1)) return `denialRate must be in [0, 1], got ${row.denialRate}`;
  return null;
}
