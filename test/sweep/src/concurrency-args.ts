/**
 * `--concurrency N/D` and `--service S` of the sweep: a concurrency pool of
 * at most N requests in flight, each holding its slot at most D, whose
 * requests are served in S on average (exponential service times).
 *
 * Guarantees: `parseConcurrency` returns whole slots N in [1, 10^6] (the
 * coordinator's limit) and a hold bound D of whole milliseconds in
 * [1 ms, 1 h]; `parseServiceMs` a mean service time of whole milliseconds in
 * [1 ms, 1 h]; each throws a SweepArgsError naming its flag and the accepted
 * form. `formatConcurrency` prints what `parseConcurrency` reads back.
 */
import { SweepArgsError } from './args-error.js';
import { formatDurationUs, parseDurationUs } from './duration.js';

/** SweepConcurrency — the pool a concurrency sweep runs, and how long its requests take. */
export interface SweepConcurrency {
  readonly limit: number;
  readonly maxHoldMs: number;
  /** Mean service time, ms (exponential). */
  readonly serviceMs: number;
}

const LIMIT_MAX = 1_000_000;
const MS_MAX = 3_600_000;
const FORM = 'use <limit>/<hold bound> like 50/2s or 8/500ms';

/** wholeMs — a duration of whole milliseconds in [1 ms, 1 h], or null. */
function wholeMs(text: string): number | null {
  const us = parseDurationUs(text);
  return us !== null && us % 1000 === 0 && us >= 1000 && us <= MS_MAX * 1000 ? us / 1000 : null;
}

/** parseConcurrency — `--concurrency`'s value as a limit and a hold bound. */
export function parseConcurrency(text: string): Omit<SweepConcurrency, 'serviceMs'> {
  const match = /^(\d+)\/(.+)$/.exec(text);
  if (match === null) throw new SweepArgsError('--concurrency', `${JSON.stringify(text)} is not a concurrency limit; ${FORM}`);
  const limit = Number(match[1]);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIMIT_MAX) {
    throw new SweepArgsError(
      '--concurrency',
      `${JSON.stringify(match[1])} is not a number of slots; use a whole number in [1, ${LIMIT_MAX}]`,
    );
  }
  const maxHoldMs = wholeMs(match[2] ?? '');
  if (maxHoldMs === null) {
    throw new SweepArgsError(
      '--concurrency',
      `${JSON.stringify(match[2])} is not a hold bound of whole milliseconds in [1ms, ${formatDurationUs(MS_MAX * 1000)}]; ${FORM}`,
    );
  }
  return { limit, maxHoldMs };
}

/** parseServiceMs — `--service`'s mean service time. */
export function parseServiceMs(text: string): number {
  const ms = wholeMs(text);
  if (ms === null) {
    throw new SweepArgsError(
      '--service',
      `${JSON.stringify(text)} is not a mean service time of whole milliseconds in [1ms, ${formatDurationUs(MS_MAX * 1000)}]; use a duration like 50ms or 1.2s`,
    );
  }
  return ms;
}

/** formatConcurrency — `N/D` as `parseConcurrency` reads it, D printed as a duration. */
export function formatConcurrency(c: Pick<SweepConcurrency, 'limit' | 'maxHoldMs'>): string {
  return `${c.limit}/${formatDurationUs(c.maxHoldMs * 1000)}`;
}
