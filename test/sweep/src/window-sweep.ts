/**
 * The window sweep (`--window N/W`): every lease size × TTL × usage-report
 * interval of a strict sliding-window pool of N per W, simulated on the very
 * same arrivals as an exact central per-request sliding-window log (one
 * round-trip per request, the yardstick) and independent per-agent logs.
 *
 * Guarantees: every row, the baselines included, is checked with
 * checkWindows over its whole admission log, and carries the fullest
 * window it found; runWindowSweep throws when a tokenlease row broke a
 * simulator check or held more than N in some window. Utilization is what
 * a row admitted over what the central log admitted (tokens).
 */
import { checkWindows, type Admission } from '@tokenlease/shared/testing';
import { runSimulation, TAKE_TIMEOUT_MS_DEFAULT, windowPool, type SimConfig } from '@tokenlease/sim';
import { jain, p99 } from './fairness.js';
import { columnTable, formatCount, formatFixed, formatPercent, type TableColumn } from './format.js';
import { reportsColumn, settingColumns } from './setting-columns.js';
import { arrivalsOf, type SweepInput } from './run-sweep.js';
import { tokenleaseSettings } from './settings.js';
import { centralLog, localLogs, type LogOutcome } from './window-log.js';

/** SweepWindow — the pool a window sweep runs: at most `limitTokens` in every window of `windowMs`. */
export interface SweepWindow {
  readonly limitTokens: number;
  readonly windowMs: number;
}

/** WindowStrategy — tokenlease chunk leases, the central per-request log, or per-agent logs. */
export type WindowStrategy = 'lease' | 'central-log' | 'local-logs';

/** WindowRow — one row of a window sweep; ms and tokens (null: does not apply to a baseline). */
export interface WindowRow {
  readonly strategy: WindowStrategy;
  readonly leaseSize: number | null;
  readonly ttlMs: number | null;
  /** Usage-report interval (keeper reportMs), ms, 0 = off; null for baselines. */
  readonly reportMs: number | null;
  readonly admitted: number;
  /** Tokens the central per-request log admitted on the same arrivals. */
  readonly logAdmitted: number;
  /** admitted / logAdmitted (1 when the log admitted nothing). */
  readonly utilization: number;
  /** The most tokens any window of W held (checkWindows over the row's admissions); at most N. */
  readonly fullestWindowTokens: number;
  readonly limitTokens: number;
  readonly roundTripsPer1k: number;
  readonly reportsPer1k: number;
  readonly jain: number;
  readonly p99WaitMs: number;
  readonly denialRate: number;
  readonly requests: number;
}

interface Measured {
  readonly admissions: readonly Admission[];
  readonly perAgentAdmitted: readonly number[];
  readonly waitsMs: readonly number[];
  readonly roundTrips: number;
  readonly reports: number;
}

/** runWindowSweep — a row per chunk setting of `input` (tokenleaseSettings' order, allowance 0), then central-log and local-logs. */
export function runWindowSweep(input: SweepInput, window: SweepWindow, onRow: (row: WindowRow) => void = () => {}): WindowRow[] {
  const workload = arrivalsOf(input);
  const windowUs = window.windowMs * 1000;
  const perAgentOffered = Array.from({ length: input.agents }, () => 0);
  let takes = 0;
  for (const a of workload.arrivals) {
    perAgentOffered[a.agent] = (perAgentOffered[a.agent] ?? 0) + a.cost;
    if (a.waitMs > 0) takes += 1;
  }
  const takeTimeoutMs = input.workload.takeTimeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT;
  const network = { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 };
  const central = centralLog(workload, input.agents, window.limitTokens, windowUs, network, input.seed);
  const logAdmitted = central.admissions.reduce((sum, a) => sum + a.cost, 0);
  const rowOf = (strategy: WindowStrategy, setting: Pick<WindowRow, 'leaseSize' | 'ttlMs' | 'reportMs'>, m: Measured): WindowRow => {
    const check = checkWindows(m.admissions, window.limitTokens, windowUs);
    const count = m.admissions.length;
    const timeouts = Math.max(0, takes - m.waitsMs.length);
    return {
      strategy,
      ...setting,
      admitted: check.admittedTokens,
      logAdmitted,
      utilization: logAdmitted === 0 ? 1 : check.admittedTokens / logAdmitted,
      fullestWindowTokens: check.fullestTokens,
      limitTokens: window.limitTokens,
      roundTripsPer1k: count === 0 ? 0 : (1000 * m.roundTrips) / count,
      reportsPer1k: count === 0 ? 0 : (1000 * m.reports) / count,
      jain: jain(m.perAgentAdmitted, perAgentOffered),
      p99WaitMs: p99([...m.waitsMs, ...Array.from({ length: timeouts }, () => takeTimeoutMs)]),
      denialRate: workload.arrivals.length === 0 ? 0 : (workload.arrivals.length - count) / workload.arrivals.length,
      requests: workload.arrivals.length,
    };
  };
  const rows: WindowRow[] = [];
  const add = (row: WindowRow): void => {
    rows.push(row);
    onRow(row);
  };
  const chunk = { ...input, leaseModes: ['chunk' as const], allowancesTokens: [0] };
  for (const setting of tokenleaseSettings(chunk)) {
    const reportMs = setting.reportMs ?? 0;
    const config: SimConfig = {
      seed: input.seed,
      agents: input.agents,
      durationUs: input.durationMs * 1000,
      pool: windowPool(window.limitTokens, window.windowMs, { leaseTtlMs: setting.ttlMs, maxLeaseTokens: setting.leaseSize ?? 1 }),
      workload: input.workload,
      network,
      partitions: [],
      faults: [],
      driftMax: 0,
      keeper: reportMs > 0 ? { reportMs } : {},
      recordAdmissions: true,
    };
    const r = runSimulation(config);
    const what = `lease ${setting.leaseSize}, TTL ${setting.ttlMs} ms, reports every ${reportMs} ms`;
    if (r.violations.length > 0) throw new Error(`${what} broke a check: ${r.violations[0]}`);
    const row = rowOf('lease', { leaseSize: setting.leaseSize, ttlMs: setting.ttlMs, reportMs }, { ...r, waitsMs: r.takeWaitsMs });
    if (row.fullestWindowTokens > window.limitTokens)
      throw new Error(`${what} held ${row.fullestWindowTokens} in a window, over ${window.limitTokens}`);
    add(row);
  }
  const baseline = { leaseSize: null, ttlMs: null, reportMs: null };
  const fromLog = (o: LogOutcome): Measured => ({ ...o, reports: 0 });
  add(rowOf('central-log', baseline, fromLog(central)));
  add(rowOf('local-logs', baseline, fromLog(localLogs(workload, input.agents, window.limitTokens, windowUs))));
  return rows;
}

const COLUMNS: readonly TableColumn<WindowRow>[] = [
  ...settingColumns<WindowRow>(),
  { header: 'admitted', cell: (r) => formatCount(r.admitted) },
  { header: 'log', cell: (r) => formatCount(r.logAdmitted) },
  { header: 'util %', cell: (r) => formatPercent(r.utilization) },
  { header: 'fullest/N', cell: (r) => `${formatCount(r.fullestWindowTokens)}/${formatCount(r.limitTokens)}` },
  { header: 'RT/1k', cell: (r) => formatFixed(r.roundTripsPer1k, 1) },
  reportsColumn<WindowRow>(),
  { header: 'Jain', cell: (r) => formatFixed(r.jain, 3) },
  { header: 'p99 wait ms', cell: (r) => formatFixed(r.p99WaitMs, 1) },
  { header: 'denied %', cell: (r) => formatPercent(r.denialRate) },
];

/** renderWindowTable — the rows as an aligned plain-text table, in the order given, with a footnote on the columns. */
export function renderWindowTable(rows: readonly WindowRow[]): string {
  return [
    ...columnTable(COLUMNS, rows),
    'util %: admitted / what the central per-request sliding-window log admits on the same arrivals (log);',
    'fullest/N: the most tokens any window of W held (checkWindows over every admission); RT/1k: round-trips per 1,000 admissions.',
  ].join('\n');
}
