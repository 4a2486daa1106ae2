/**
 * The sweep's recommendation: which lease mode, lease size or refresh
 * interval, and TTL to configure.
 *
 * Rule: among the tokenlease rows ('lease': chunk leases, 'rate': rate
 * leases) that kept the envelope (overAdmitted === 0) and reached the target
 * utilization, pick the cheapest: the fewest coordinator messages per 1,000
 * admissions (cost.ts: round-trips plus usage reports); ties go to chunk leases, then the smaller lease size or
 * shorter refresh interval, then the shorter TTL, then the smaller
 * allowance (the stricter promise), then usage reports off, then the
 * longer report interval. A row that exceeded the envelope is never
 * recommended, whatever else it achieved. Allowance and report rows exist
 * only when asked for (--allowances, --reports), and are weighed like any
 * other row.
 *
 * Usage reports: a report is a one-way publish (no reply, nothing waits on
 * it), cheaper than a round-trip, but still a message the coordinator
 * handles; the cost weighs it as a full round-trip (see cost.ts for why
 * that is conservative). When nothing qualifies, the reason says how close the sweep came and what
 * to change. Pure: the same rows give the same answer, and the returned row
 * is one of the given rows (same object), so callers can mark it.
 */
import { messagesPer1k } from './cost.js';
import { formatDurationMs } from './duration.js';
import { formatCount, formatFixed, formatPercent, wrapText } from './format.js';
import { isLeaseRow, isTokenleaseRow, type SweepRow } from './row.js';

/**
 * Recommendation — `row` is the chosen tokenlease row, or null when none
 * qualified; `reason` is one or more sentences saying why (and, when null,
 * what to try); `targetUtilization` is the fraction it was chosen against.
 */
export interface Recommendation {
  readonly row: SweepRow | null;
  readonly reason: string;
  readonly targetUtilization: number;
}

type LeaseRow = SweepRow & { readonly strategy: 'lease' | 'rate'; readonly ttlMs: number };

/** TERMINAL_COLUMNS — the width the recommendation is wrapped to for a terminal, characters. */
export const TERMINAL_COLUMNS = 78;

const pct = (fraction: number): string => `${formatPercent(fraction)}%`;
const reportsOf = (row: SweepRow): number => row.reportMs ?? 0;
const setting = (row: LeaseRow): string =>
  `${row.strategy === 'rate' ? `rate leases, refresh ${formatDurationMs(row.refreshMs ?? 0)}` : `lease ${formatCount(row.leaseSize ?? 0)} tokens`}, TTL ${formatDurationMs(row.ttlMs)}, allowance ${formatCount(row.allowance)}` +
  (reportsOf(row) > 0 ? `, usage reports every ${formatDurationMs(reportsOf(row))}` : '');

const capitalize = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

/** reportRank — reports off first (0), then longer intervals (fewer messages) before shorter ones. */
const reportRank = (row: LeaseRow): number => (reportsOf(row) === 0 ? 0 : 1 / reportsOf(row));

/** Fewest messages (round-trips and reports), then chunk leases, smaller lease or shorter refresh, shorter TTL, smaller allowance, reports off, longer report interval. */
function cheaper(a: LeaseRow, b: LeaseRow): number {
  const mode = (row: LeaseRow): number => (row.strategy === 'lease' ? 0 : 1);
  return (
    messagesPer1k(a) - messagesPer1k(b) ||
    mode(a) - mode(b) ||
    (a.leaseSize ?? 0) - (b.leaseSize ?? 0) ||
    (a.refreshMs ?? 0) - (b.refreshMs ?? 0) ||
    a.ttlMs - b.ttlMs ||
    a.allowance - b.allowance ||
    reportRank(a) - reportRank(b)
  );
}

/** Higher utilization, then the cheaper row. */
function fuller(a: LeaseRow, b: LeaseRow): number {
  return b.utilization - a.utilization || cheaper(a, b);
}

/**
 * recommend — the cheapest tokenlease ('lease' or 'rate') row with `overAdmitted === 0` and
 * `utilization ≥ targetUtilization` (a fraction in (0, 1]; other values
 * throw a RangeError), or `{ row: null }` with a reason. Baseline rows are
 * only used to explain the answer. No rows: `row` null.
 */
export function recommend(rows: readonly SweepRow[], targetUtilization: number): Recommendation {
  if (!(targetUtilization > 0 && targetUtilization <= 1)) {
    throw new RangeError(`recommend: targetUtilization must be a fraction in (0, 1], got ${targetUtilization}`);
  }
  const leaseRows: LeaseRow[] = rows.filter(isTokenleaseRow);
  const safe = leaseRows.filter((row) => row.overAdmitted === 0);
  const excluded = leaseRows.length - safe.length;
  const candidates = safe.filter((row) => row.utilization >= targetUtilization).sort(cheaper);
  const chosen = candidates[0];
  const central = rows.find((row) => row.strategy === 'central');
  const done = (row: SweepRow | null, sentences: readonly string[]): Recommendation => ({
    row,
    reason: sentences.filter((s) => s !== '').join(' '),
    targetUtilization,
  });
  const excludedNote =
    excluded === 0
      ? ''
      : `${excluded} lease setting(s) exceeded the envelope B + A + r·T and were excluded; that should never happen, so report it with the seed.`;

  if (chosen !== undefined) {
    const centralNote =
      central === undefined ? '' : `; a round-trip per request (central) costs ${formatFixed(central.roundTripsPer1k, 1)}`;
    const cost =
      reportsOf(chosen) > 0
        ? `${formatFixed(messagesPer1k(chosen), 1)} coordinator messages per 1,000 admissions (${formatFixed(chosen.roundTripsPer1k, 1)} round-trips and ${formatFixed(chosen.reportsPer1k, 1)} one-way usage reports)`
        : `${formatFixed(chosen.roundTripsPer1k, 1)} round-trips per 1,000 admissions`;
    return done(chosen, [
      `${capitalize(setting(chosen))} admits ${pct(chosen.utilization)} of what one ideal bucket admits (target ${pct(targetUtilization)})` +
        ` with ${cost}, the fewest of the` +
        ` ${candidates.length} setting(s) that reach the target without exceeding the envelope (a usage report counted as a round-trip)${centralNote}.`,
      excludedNote,
    ]);
  }
  if (leaseRows.length === 0) return done(null, ['The sweep produced no lease rows to choose from.']);
  if (safe.length === 0) {
    const worst = Math.max(...leaseRows.map((row) => row.overAdmitted));
    return done(null, [
      `Every one of the ${leaseRows.length} lease setting(s) exceeded the envelope B + A + r·T (worst by ${formatCount(worst)} tokens), so none can be recommended.`,
      'That is a bug in the coordinator, agent or simulator: report it with the seed.',
    ]);
  }
  const best = [...safe].sort(fuller)[0];
  if (best === undefined) return done(null, ['No lease setting kept the envelope.']);
  return done(null, [
    `No lease setting reached ${pct(targetUtilization)} utilization without exceeding the envelope;` +
      ` the best was ${pct(best.utilization)} (${setting(best)}).`,
    ...suggestions(best, safe, central, targetUtilization),
    excludedNote,
  ]);
}

/** What to change when no row reached the target, judged from where the best row sits in the sweep. */
function suggestions(best: LeaseRow, safe: readonly LeaseRow[], central: SweepRow | undefined, target: number): string[] {
  const same = safe.filter((row) => row.strategy === best.strategy);
  const out: string[] = [];
  if (central !== undefined && central.utilization < target) {
    out.push(
      `Even a round-trip per request (central) reaches only ${pct(central.utilization)} on this workload and latency,` +
        ' so the target may be out of reach: consider a lower --target-utilization.',
    );
  }
  const ttls = [...new Set(same.map((row) => row.ttlMs))].sort((a, b) => a - b);
  const allowances = [...new Set(safe.map((row) => row.allowance))].sort((a, b) => a - b);
  if (isLeaseRow(best)) {
    const sizes = [...new Set(same.filter(isLeaseRow).map((row) => row.leaseSize))].sort((a, b) => a - b);
    const smallestSize = sizes[0] ?? best.leaseSize;
    if (best.leaseSize === smallestSize && smallestSize > 1) {
      out.push(
        `Utilization was highest at the smallest lease size tried, so try smaller ones (below ${formatCount(smallestSize)} tokens, about B / active agents or less).`,
      );
    }
    if (!safe.some((row) => reportsOf(row) > 0)) {
      out.push(
        'Try usage reports (--reports 100ms): agents tell the coordinator what is left of a lease, so bounds of partly spent leases stop holding back the refill.',
      );
    }
  } else {
    const refreshes = [...new Set(same.map((row) => row.refreshMs ?? 0))].sort((a, b) => a - b);
    if (best.refreshMs === refreshes[0])
      out.push(
        `Rate leases did best at the shortest refresh interval tried (${formatDurationMs(refreshes[0] ?? 0)}): try shorter ones (--refreshes).`,
      );
  }
  const largestAllowance = allowances[allowances.length - 1] ?? 0;
  out.push(
    `Try a larger allowance (--allowances; largest tried ${formatCount(largestAllowance)}): it lets more leased tokens be in flight,` +
      ' at the price of a wider promise B + A + r·T.',
  );
  const shortest = ttls[0] ?? best.ttlMs;
  const longest = ttls[ttls.length - 1] ?? best.ttlMs;
  if (ttls.length === 1) {
    out.push(`Try other TTLs than ${formatDurationMs(best.ttlMs)} (--ttls).`);
  } else if (best.ttlMs === shortest) {
    out.push(`The shortest TTL tried (${formatDurationMs(shortest)}) did best: try shorter ones, which strand fewer tokens.`);
  } else if (best.ttlMs === longest) {
    out.push(`The longest TTL tried (${formatDurationMs(longest)}) did best: try longer ones.`);
  } else {
    out.push(`TTLs near ${formatDurationMs(best.ttlMs)} did best; try values between its neighbours.`);
  }
  return out;
}

/**
 * recommendationHeadline — the first sentence of a recommendation: the pool
 * fields to configure (`maxLeaseTokens: 10, leaseTtlMs: 2000`, or for rate
 * leases `leaseMode: rate, leaseTtlMs: 2000`, maxLeaseTokens as large as the
 * capacity (as the sweep ran them) and the agents' `refreshMs`,
 * plus `allowance` when above 0 and the agents' `reportMs` when reports
 * are on), or `No recommendation.`
 */
export function recommendationHeadline(rec: Recommendation): string {
  const row = rec.row;
  if (row === null || row.ttlMs === null) return 'No recommendation.';
  const allowance = row.allowance > 0 ? `, allowance: ${row.allowance}` : '';
  if (row.strategy === 'rate' && row.refreshMs !== null) {
    return `Recommendation: leaseMode: rate, leaseTtlMs: ${row.ttlMs}, maxLeaseTokens: the capacity${allowance}; agents refreshMs: ${row.refreshMs}.`;
  }
  if (row.leaseSize === null) return 'No recommendation.';
  const reports = reportsOf(row) > 0 ? `; agents reportMs: ${reportsOf(row)}` : '';
  return `Recommendation: maxLeaseTokens: ${row.leaseSize}, leaseTtlMs: ${row.ttlMs}${allowance}${reports}.`;
}

/**
 * describeRecommendation — one paragraph for the terminal, wrapped at
 * TERMINAL_COLUMNS: the headline (the pool fields to configure) and the
 * reason, or that there is none and what to try instead. No trailing
 * newline.
 */
export function describeRecommendation(rec: Recommendation): string {
  return wrapText(`${recommendationHeadline(rec)} ${rec.reason}`, '', TERMINAL_COLUMNS).join('\n');
}
