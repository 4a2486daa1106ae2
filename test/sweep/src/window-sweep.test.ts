/**
 * The window sweep end to end on a small fleet, and its baseline, the exact
 * sliding-window log: every row faces the same arrivals, none holds more
 * than N in any window of W, the central log is the yardstick (utilization
 * 1, a round-trip per request), and the figures relate the way leasing
 * promises (smaller leases, better utilization and more round-trips).
 */
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { checkWindows, type Admission } from '@tokenlease/shared/testing';
import { SlidingLog } from './window-log.js';
import { renderWindowTable, runWindowSweep } from './window-sweep.js';

describe('SlidingLog', () => {
  it('admits at most N in every window of W, tries at once, takes as soon as the oldest admission leaves the window', () => {
    const log = new SlidingLog(3, 1000);
    const admitted: Admission[] = [];
    const offer = (tUs: number, waitUs: number, cost = 1): void =>
      log.offer(cost, tUs, waitUs, (at) => void admitted.push({ tUs: at, cost }));
    offer(0, 0);
    offer(100, 0);
    offer(200, 0, 2); // 1 + 1 + 2 > 3: denied
    offer(300, 0);
    offer(400, 0); // full: denied
    offer(500, 700); // waits until 0 leaves the window, at 1000
    offer(600, 100); // gives up at 700
    offer(1100, 0); // 100 left at 1100: admitted
    log.finish();
    expect(admitted).toEqual([
      { tUs: 0, cost: 1 },
      { tUs: 100, cost: 1 },
      { tUs: 300, cost: 1 },
      { tUs: 1000, cost: 1 },
      { tUs: 1100, cost: 1 },
    ]);
    expect(checkWindows(admitted, 3, 1000).fullestTokens).toBe(3);
  });
});

describe('runWindowSweep', () => {
  const window = { limitTokens: 100, windowMs: 1000 };
  const rows = runWindowSweep(
    {
      agents: 8,
      capacityTokens: 100,
      refill: makeRate(100, 1000),
      workload: { name: 'zipf', load: 1.5, exponent: 1 },
      leaseSizesTokens: [2, 25],
      ttlsMs: [1000],
      allowancesTokens: [0],
      leaseModes: ['chunk'],
      refreshesMs: [1000],
      reportsMs: [0, 100],
      latencyUs: 1000,
      durationMs: 10_000,
      seed: 99,
    },
    window,
  );
  const leases = rows.filter((r) => r.strategy === 'lease');
  const central = rows.find((r) => r.strategy === 'central-log');

  it('returns a row per lease size and report interval, then the two logs', () => {
    expect(rows.map((r) => `${r.strategy}:${r.leaseSize}:${r.ttlMs}:${r.reportMs}`)).toEqual([
      'lease:2:1000:0',
      'lease:2:1000:100',
      'lease:25:1000:0',
      'lease:25:1000:100',
      'central-log:null:null:null',
      'local-logs:null:null:null',
    ]);
  });

  it('holds every row, baselines included, to at most N in every window of W, on identical arrivals', () => {
    expect(new Set(rows.map((r) => r.requests)).size).toBe(1);
    for (const row of rows) {
      expect(row.fullestWindowTokens, `${row.strategy} ${row.leaseSize}`).toBeLessThanOrEqual(100);
      expect(row.admitted).toBeGreaterThan(0);
    }
    // The central log fills windows to the limit: the demand saturates it.
    expect(central?.fullestWindowTokens).toBe(100);
  });

  it('measures utilization against the central per-request log, which pays a round-trip per request', () => {
    expect(central?.utilization).toBe(1);
    expect(central?.roundTripsPer1k).toBeGreaterThan(1000);
    for (const row of rows) expect(row.logAdmitted).toBe(central?.admitted);
    for (const row of leases) {
      expect(row.utilization).toBeGreaterThan(0.3);
      expect(row.utilization).toBeLessThanOrEqual(1.05);
      expect(row.roundTripsPer1k).toBeLessThan(central?.roundTripsPer1k ?? 0);
    }
  });

  it('trades utilization for round-trips with the lease size, and reports let spent tokens cool sooner', () => {
    const [small, smallReports, big, bigReports] = leases as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
    expect(small.utilization).toBeGreaterThan(big.utilization);
    expect(small.roundTripsPer1k).toBeGreaterThan(big.roundTripsPer1k);
    expect(bigReports.utilization).toBeGreaterThan(big.utilization);
    expect(bigReports.reportsPer1k).toBeGreaterThan(0);
    expect(smallReports.reportsPer1k).toBeGreaterThan(0);
  });

  it('prints a table with the fullest window of each row against N', () => {
    const table = renderWindowTable(rows).split('\n');
    expect(table[0]).toMatch(/^strategy\s+lease\s+TTL\s+reports\s+admitted\s+log\s+util %\s+fullest\/N\s+RT\/1k/);
    expect(table.filter((line) => / \d+\/100 /.test(line))).toHaveLength(rows.length);
  });
});
