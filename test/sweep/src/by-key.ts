/**
 * The per-key report (`--by-key [N]`): what a per-key limit would do to each
 * key of a trace, as a template pool (`rule:*`) gives every key a bucket of
 * its own.
 *
 * For the sweep's limit and each `--what-if` limit, every key's arrivals, in
 * time order, go through one exact bucket of capacity B refilled at r, full
 * at the key's first arrival (what-if.ts's exactBucketRun, the bucket of the
 * central baseline), each arrival decided at its time. Per key: arrivals,
 * tokens offered, admitted, denied (count and tokens) and the denied share;
 * per limit: keys limited at least once, denied calls and tokens, and the
 * top N keys by denied calls (ties by key, in code-unit order).
 *
 * Guarantees: deterministic for the same trace; memory is bounded by the
 * keys (at most TRACE_KEYS_MAX) and one index per arrival: the arrivals are
 * grouped by key once (a counting sort that keeps their order) and one
 * key's bucket lives at a time. Keys are the trace's names (hashed keys, or
 * an access log's keys hashed as they were read): the text table escapes
 * control characters, the HTML report escapes everything.
 */
import { formatRate } from '@tokenlease/shared';
import type { Arrival } from '@tokenlease/sim';
import { formatCount, formatPercent, textTable } from './format.js';
import type { TraceKeys } from './trace.js';
import { exactBucketRun, type WhatIfLimit } from './what-if.js';

/** BY_KEY_TOP_DEFAULT — keys `--by-key` lists when N is not given. */
export const BY_KEY_TOP_DEFAULT = 20;
/** BY_KEY_TOP_MAX — most keys `--by-key N` lists. */
export const BY_KEY_TOP_MAX = 1000;

/** KeyRow — one key under one limit. */
export interface KeyRow {
  readonly key: string;
  readonly arrivals: number;
  readonly offeredTokens: number;
  readonly admittedCount: number;
  readonly deniedCount: number;
  readonly deniedTokens: number;
  /** Denied requests as a fraction of the key's arrivals, in [0, 1]. */
  readonly deniedShare: number;
}

/** ByKeyLimit — every key under one per-key limit: totals over all keys, and the top keys by denied calls. */
export interface ByKeyLimit {
  readonly capacityTokens: number;
  /** The refill as typed on a command line, e.g. `500/s`. */
  readonly refill: string;
  /** Keys denied at least once. */
  readonly keysLimited: number;
  readonly offeredCount: number;
  readonly offeredTokens: number;
  readonly deniedCount: number;
  readonly deniedTokens: number;
  /** The top keys by denied calls (ties by key), at most ByKeyReport.top. */
  readonly top: readonly KeyRow[];
}

/** ByKeyReport — the per-key report: one entry per limit, the sweep's own first. */
export interface ByKeyReport {
  /** N: how many keys each limit lists. */
  readonly top: number;
  /** Distinct keys in the replayed arrivals. */
  readonly keys: number;
  /** Replayed arrivals without a key (in no key's bucket). */
  readonly arrivalsWithoutKey: number;
  readonly limits: readonly ByKeyLimit[];
}

/** KeyGroups — the arrivals grouped by key: key k's are `order[start[k]]` to `order[start[k + 1] - 1]`, in time order. */
interface KeyGroups {
  readonly order: Uint32Array;
  readonly start: Uint32Array;
}

function groupByKey(keys: TraceKeys): KeyGroups {
  const start = new Uint32Array(keys.names.length + 1);
  for (const k of keys.ofArrival) if (k >= 0) start[k + 1] = (start[k + 1] ?? 0) + 1;
  for (let k = 1; k < start.length; k += 1) start[k] = (start[k] ?? 0) + (start[k - 1] ?? 0);
  const next = start.slice(0, -1);
  const order = new Uint32Array(start[start.length - 1] ?? 0);
  keys.ofArrival.forEach((k, i) => {
    if (k < 0) return;
    order[next[k] ?? 0] = i;
    next[k] = (next[k] ?? 0) + 1;
  });
  return { order, start };
}

function* arrivalsOfKey(arrivals: readonly Arrival[], groups: KeyGroups, k: number): Generator<Arrival> {
  for (let at = groups.start[k] ?? 0; at < (groups.start[k + 1] ?? 0); at += 1) {
    const arrival = arrivals[groups.order[at] ?? 0];
    if (arrival !== undefined) yield arrival;
  }
}

/**
 * byKey — the per-key report of `arrivals` (the replay, in time order) whose
 * keys are `keys`, under each of `limits` (the sweep's own first), listing
 * the `top` keys of each by denied calls.
 */
export function byKey(arrivals: readonly Arrival[], keys: TraceKeys, limits: readonly WhatIfLimit[], top: number): ByKeyReport {
  const groups = groupByKey(keys);
  const firstUs = (k: number): number => arrivals[groups.order[groups.start[k] ?? 0] ?? 0]?.tUs ?? 0;
  const report = (limit: WhatIfLimit): ByKeyLimit => {
    const rows: KeyRow[] = keys.names.map((key, k) => {
      const run = exactBucketRun(arrivalsOfKey(arrivals, groups, k), limit, firstUs(k));
      const deniedCount = run.offeredCount - run.admittedCount;
      return {
        key,
        arrivals: run.offeredCount,
        offeredTokens: run.offeredTokens,
        admittedCount: run.admittedCount,
        deniedCount,
        deniedTokens: run.offeredTokens - run.admittedTokens,
        deniedShare: run.offeredCount === 0 ? 0 : deniedCount / run.offeredCount,
      };
    });
    const sum = (of: (row: KeyRow) => number): number => rows.reduce((total, row) => total + of(row), 0);
    return {
      capacityTokens: limit.capacityTokens,
      refill: formatRate(limit.refill),
      keysLimited: rows.filter((row) => row.deniedCount > 0).length,
      offeredCount: groups.order.length,
      offeredTokens: sum((row) => row.offeredTokens),
      deniedCount: sum((row) => row.deniedCount),
      deniedTokens: sum((row) => row.deniedTokens),
      top: rows.sort((a, b) => b.deniedCount - a.deniedCount || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).slice(0, top),
    };
  };
  return { top, keys: keys.names.length, arrivalsWithoutKey: arrivals.length - groups.order.length, limits: limits.map(report) };
}

/** BY_KEY_COLUMNS — the per-key table's columns and what each means (the text, the HTML report and docs/trace-format.md). */
export const BY_KEY_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['key', 'the key as the trace names it (a hashed key: the pool name `rule:digest`)'],
  ['arrivals', 'requests of the key in the trace'],
  ['offered', 'tokens those requests asked for'],
  ['admitted', 'requests the key’s own bucket admits'],
  ['denied', 'requests the key’s own bucket denies'],
  ['denied tokens', 'tokens of the denied requests'],
  ['denied %', 'denied requests, % of the key’s arrivals'],
];

/** byKeyCells — one key's row as text cells in BY_KEY_COLUMNS order (the key as is: each output escapes it its own way). */
export function byKeyCells(row: KeyRow): string[] {
  return [
    row.key,
    formatCount(row.arrivals),
    formatCount(row.offeredTokens),
    formatCount(row.admittedCount),
    formatCount(row.deniedCount),
    formatCount(row.deniedTokens),
    formatPercent(row.deniedShare),
  ];
}

/** byKeyHeadline — one limit's totals in a line. */
export function byKeyHeadline(limit: ByKeyLimit, report: ByKeyReport): string {
  return (
    `B=${limit.capacityTokens}, r=${limit.refill} per key: ${formatCount(limit.keysLimited)} of ${formatCount(report.keys)} keys ` +
    `limited at least once, ${formatCount(limit.deniedCount)} of ${formatCount(limit.offeredCount)} calls denied ` +
    `(${formatCount(limit.deniedTokens)} tokens)`
  );
}

/** printable — `text` with control characters as \u escapes, so a hostile key cannot drive a terminal. */
const printable = (text: string): string =>
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is escaped here
  text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** renderByKey — the per-key report as plain text: what it is, then for each limit its totals and its top keys. */
export function renderByKey(report: ByKeyReport): string {
  const lines = [
    `by key: each key through its own exact bucket at each limit (full at the key's first arrival), top ${report.top} keys by denied calls` +
      (report.arrivalsWithoutKey > 0 ? `; ${formatCount(report.arrivalsWithoutKey)} arrivals without a key are in none` : ''),
  ];
  for (const limit of report.limits) {
    const rows = limit.top.map((row) => {
      const cells = byKeyCells(row);
      return [printable(cells[0] ?? ''), ...cells.slice(1)];
    });
    lines.push('', byKeyHeadline(limit, report), ...textTable([BY_KEY_COLUMNS.map(([name]) => name), ...rows]));
  }
  return lines.join('\n');
}
