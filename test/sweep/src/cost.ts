/**
 * The sweep's cost of a setting: the messages the coordinator handles per
 * 1,000 admissions, round-trips (request attempts, row.roundTripsPer1k)
 * plus one-way usage reports (row.reportsPer1k). The simulator counts the
 * two apart; the cost adds them, weighing a report like a round-trip. A
 * report is cheaper (no reply, nothing waits on it), so the weighing is
 * conservative: a setting with reports that wins at full weight also wins
 * at any lighter one.
 *
 * One function for everything that ranks or plots settings by what they
 * cost: the table's `msg/1k` column, the second chart of each pair in the
 * HTML report, and the recommendation, which picks the cheapest setting
 * that reaches the target.
 */
import type { SweepRow } from './row.js';

/** COST_NAME — what the cost counts, in words (charts and legends). */
export const COST_NAME = 'coordinator messages (round-trips + usage reports) per 1,000 admissions';

/** messagesPer1k — round-trips plus one-way usage reports per 1,000 admitted requests (≥ 0; equal to roundTripsPer1k with reports off). */
export function messagesPer1k(row: SweepRow): number {
  return row.roundTripsPer1k + row.reportsPer1k;
}
