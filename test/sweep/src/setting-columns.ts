/**
 * The first columns of the window and concurrency sweeps' tables: the
 * strategy, and a lease row's setting (lease size, TTL, usage reports);
 * a dash where a baseline has none.
 */
import { formatDurationMs } from './duration.js';
import { formatCount, formatFixed, type TableColumn } from './format.js';

/** SettingCells — what those columns read of a row. */
export interface SettingCells {
  readonly strategy: string;
  readonly leaseSize: number | null;
  readonly ttlMs: number | null;
  /** Usage-report interval, ms, 0 = off; null for baselines. */
  readonly reportMs: number | null;
  readonly reportsPer1k: number;
}

const NONE = '-';

/** settingColumns — strategy, lease, TTL and reports. */
export function settingColumns<R extends SettingCells>(): TableColumn<R>[] {
  return [
    { header: 'strategy', cell: (r) => r.strategy },
    { header: 'lease', cell: (r) => (r.leaseSize === null ? NONE : formatCount(r.leaseSize)) },
    { header: 'TTL', cell: (r) => (r.ttlMs === null ? NONE : formatDurationMs(r.ttlMs)) },
    { header: 'reports', cell: (r) => (r.reportMs === null ? NONE : r.reportMs === 0 ? 'off' : formatDurationMs(r.reportMs)) },
  ];
}

/** reportsColumn — usage reports per 1,000 admissions, where a row sends any. */
export function reportsColumn<R extends SettingCells>(): TableColumn<R> {
  return { header: 'rep/1k', cell: (r) => (r.reportMs === null || r.reportMs === 0 ? NONE : formatFixed(r.reportsPer1k, 1)) };
}
