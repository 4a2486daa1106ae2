/**
 * What if: how many requests a candidate limit would deny on the sweep's
 * arrivals, so an operator can size a limit before shadowing it
 * (`--what-if B@RATE,...`).
 *
 * Each candidate is one ideal central bucket of capacity B refilled at r
 * (shared's ExactBucket, starting full, no latency, no leases) deciding
 * every request as a Limiter would: a try at its arrival, a take waiting
 * in FIFO order up to its timeout (SharedBucket). Tokenlease at that limit
 * denies somewhat more than this (the sweep's utilization column says how
 * much): it is the floor, what the limit itself costs the workload.
 *
 * Guarantees: `parseWhatIf` returns candidates in the order given without
 * duplicates, each with a capacity and rate the exact arithmetic can hold,
 * or throws a SweepArgsError naming `--what-if`; `whatIf` is deterministic
 * for the same arrivals.
 */
import { formatRate, parseRate, tokenScale, type Rate } from '@tokenlease/shared';
import type { Arrival } from '@tokenlease/sim';
import { SweepArgsError } from './args-error.js';
import { formatCount, formatFixed, textTable } from './format.js';
import { SharedBucket } from './shared-bucket.js';

/** WhatIfLimit — a candidate limit: capacity B (tokens) and refill r. */
export interface WhatIfLimit {
  readonly capacityTokens: number;
  readonly refill: Rate;
}

/** WhatIfRow — what the ideal central bucket at one limit denied of the arrivals. */
export interface WhatIfRow {
  readonly capacityTokens: number;
  /** The refill as typed on a command line, e.g. `500/s`. */
  readonly refill: string;
  readonly offeredCount: number;
  readonly offeredTokens: number;
  readonly deniedCount: number;
  readonly deniedTokens: number;
  /** Denied requests per 1,000 offered. */
  readonly deniedPer1k: number;
}

/** WHAT_IF_MAX — most candidates one `--what-if` names. */
export const WHAT_IF_MAX = 20;
const CAPACITY_MAX = 1_000_000_000;

/** parseWhatIf — the candidates of `--what-if` text like `300@500/s,1000@2000/s`. */
export function parseWhatIf(text: string): WhatIfLimit[] {
  const items = text.split(',');
  if (text === '' || items.length > WHAT_IF_MAX) {
    throw new SweepArgsError('--what-if', `needs 1 to ${WHAT_IF_MAX} limits B@RATE separated by commas, like 300@500/s,1000@2000/s`);
  }
  const out: WhatIfLimit[] = [];
  for (const item of items) {
    const match = /^(\d+)@(.+)$/.exec(item);
    const capacityTokens = match === null ? Number.NaN : Number(match[1]);
    if (match === null || !Number.isSafeInteger(capacityTokens) || capacityTokens < 1 || capacityTokens > CAPACITY_MAX) {
      throw new SweepArgsError('--what-if', `${JSON.stringify(item)} is not a limit B@RATE with B in [1, ${CAPACITY_MAX}], like 300@500/s`);
    }
    let refill: Rate;
    try {
      refill = parseRate(match[2] as string);
      tokenScale(capacityTokens, refill);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new SweepArgsError('--what-if', `${JSON.stringify(item)}: ${detail}`);
    }
    if (!out.some((o) => o.capacityTokens === capacityTokens && formatRate(o.refill) === formatRate(refill)))
      out.push({ capacityTokens, refill });
  }
  return out;
}

/** formatWhatIf — `--what-if` text that parses back to `limits`. */
export function formatWhatIf(limits: readonly WhatIfLimit[]): string {
  return limits.map((l) => `${l.capacityTokens}@${formatRate(l.refill)}`).join(',');
}

/** BucketRun — what one exact bucket admitted of the requests offered to it. */
export interface BucketRun {
  readonly offeredCount: number;
  readonly offeredTokens: number;
  readonly admittedCount: number;
  readonly admittedTokens: number;
}

/**
 * exactBucketRun — `arrivals` (in time order) offered to one ideal bucket at
 * `limit` (SharedBucket: full at `startUs`, each try decided at its arrival,
 * each take waiting in FIFO order up to its timeout): the one bucket the
 * what-if rows and the per-key report (by-key.ts) both replay.
 */
export function exactBucketRun(arrivals: Iterable<Arrival>, limit: WhatIfLimit, startUs: number): BucketRun {
  const bucket = new SharedBucket(limit.capacityTokens, limit.refill, startUs);
  let offeredCount = 0;
  let offeredTokens = 0;
  let admittedCount = 0;
  let admittedTokens = 0;
  for (const a of arrivals) {
    offeredCount += 1;
    offeredTokens += a.cost;
    bucket.offer(a.cost, a.tUs, a.waitMs * 1000, () => {
      admittedCount += 1;
      admittedTokens += a.cost;
    });
  }
  bucket.finish();
  return { offeredCount, offeredTokens, admittedCount, admittedTokens };
}

/** whatIf — for each limit, what an ideal central bucket at it (full at time 0) denies of `arrivals` (in time order). */
export function whatIf(arrivals: readonly Arrival[], limits: readonly WhatIfLimit[]): WhatIfRow[] {
  return limits.map((limit) => {
    const run = exactBucketRun(arrivals, limit, 0);
    const deniedCount = run.offeredCount - run.admittedCount;
    return {
      capacityTokens: limit.capacityTokens,
      refill: formatRate(limit.refill),
      offeredCount: run.offeredCount,
      offeredTokens: run.offeredTokens,
      deniedCount,
      deniedTokens: run.offeredTokens - run.admittedTokens,
      deniedPer1k: run.offeredCount === 0 ? 0 : (1000 * deniedCount) / run.offeredCount,
    };
  });
}

/** WHAT_IF_COLUMNS — the what-if table's columns and what each means (the table, the HTML report and docs/lease-sizing.md use these). */
export const WHAT_IF_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['limit', 'the candidate capacity B and refill r'],
  ['offered', 'requests offered (the same arrivals as every row of the sweep)'],
  ['denied', 'requests an ideal central bucket at that limit denies'],
  ['den/1k', 'denied requests per 1,000 offered'],
  ['denied tokens', 'tokens of the denied requests'],
];

/** whatIfCells — one row of the what-if table, as text cells in WHAT_IF_COLUMNS order. */
export function whatIfCells(row: WhatIfRow): string[] {
  return [
    `B=${row.capacityTokens}, r=${row.refill}`,
    formatCount(row.offeredCount),
    formatCount(row.deniedCount),
    formatFixed(row.deniedPer1k, 1),
    formatCount(row.deniedTokens),
  ];
}

/** renderWhatIf — the what-if rows as a plain-text table, with a line saying what it is. */
export function renderWhatIf(rows: readonly WhatIfRow[]): string {
  const lines = textTable([WHAT_IF_COLUMNS.map(([name]) => name), ...rows.map(whatIfCells)]);
  return ['what if: an ideal central bucket at each limit, on the same arrivals (the sweep’s own limit first)', ...lines].join('\n');
}
