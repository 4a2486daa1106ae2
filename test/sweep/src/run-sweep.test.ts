/**
 * runSweep end to end on a small fleet: every combination (chunk and rate
 * leases) and both baselines see the same arrivals, none exceeds the
 * envelope, and the figures relate the way leasing promises (bigger leases
 * or longer refresh intervals, fewer round-trips; local buckets strand
 * capacity under skew); usage reports run on chunk rows only.
 */
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { messagesPer1k } from './cost.js';
import { sweepRowProblem, type SweepRow } from './row.js';
import { runSweep } from './run-sweep.js';

describe('runSweep', () => {
  const rows = runSweep({
    agents: 8,
    capacityTokens: 200,
    refill: makeRate(400, 1000),
    workload: { name: 'zipf', load: 1.5, exponent: 1 },
    leaseSizesTokens: [2, 10, 25],
    ttlsMs: [500, 2000],
    allowancesTokens: [0],
    leaseModes: ['chunk', 'rate'],
    refreshesMs: [250, 1000],
    reportsMs: [0],
    latencyUs: 1000,
    durationMs: 10_000,
    seed: 99,
  });
  const leases = rows.filter((r) => r.strategy === 'lease');

  const rates = rows.filter((r) => r.strategy === 'rate');

  it('returns a row per combination, then the two baselines, each sound', () => {
    expect(rows.map((r) => `${r.strategy}:${r.leaseSize ?? r.refreshMs}:${r.ttlMs}`)).toEqual([
      'lease:2:500',
      'lease:10:500',
      'lease:25:500',
      'lease:2:2000',
      'lease:10:2000',
      'lease:25:2000',
      // Refresh 250 ms runs with both TTLs (≥ 500 ms); 1 s only with 2 s.
      'rate:250:500',
      'rate:250:2000',
      'rate:1000:2000',
      'central:null:null',
      'local:null:null',
    ]);
    expect(rows.map(sweepRowProblem)).toEqual(rows.map(() => null));
  });

  it('compares every strategy on identical arrivals', () => {
    expect(new Set(rows.map((r) => r.requests)).size).toBe(1);
    expect(new Set(rows.map((r) => r.idealAdmitted)).size).toBe(1);
  });

  it('never exceeds the envelope', () => {
    for (const row of rows) expect(row.overAdmitted, `${row.strategy} ${row.leaseSize} ${row.ttlMs}`).toBe(0);
  });

  it('trades round-trips for lease size, and beats independent local buckets under skew', () => {
    for (const ttl of [500, 2000]) {
      const byTtl = leases.filter((r) => r.ttlMs === ttl);
      expect(byTtl[0]!.roundTripsPer1k).toBeGreaterThan(byTtl[2]!.roundTripsPer1k);
    }
    const local = rows.find((r) => r.strategy === 'local')!;
    const central = rows.find((r) => r.strategy === 'central')!;
    expect(central.roundTripsPer1k).toBeGreaterThan(1000);
    for (const row of leases) {
      expect(row.utilization).toBeGreaterThan(local.utilization);
      expect(row.utilization).toBeLessThanOrEqual(1.001);
    }
  });

  it('renews rate leases about once per refresh interval, far less often than small chunks', () => {
    const [fast, , slow] = rates;
    expect(fast!.roundTripsPer1k).toBeGreaterThan(2 * slow!.roundTripsPer1k);
    for (const row of rates) expect(row.roundTripsPer1k).toBeLessThan(leases[0]!.roundTripsPer1k / 2);
    // 8 agents renewing once a second, at under 600 admissions a second.
    expect(slow!.roundTripsPer1k).toBeGreaterThan(8);
    expect(slow!.roundTripsPer1k).toBeLessThan(40);
  });
});

describe('runSweep with usage reports', () => {
  const rows = runSweep({
    agents: 8,
    capacityTokens: 200,
    refill: makeRate(400, 1000),
    workload: { name: 'zipf', load: 1.5, exponent: 1 },
    leaseSizesTokens: [50],
    ttlsMs: [2000],
    allowancesTokens: [0],
    leaseModes: ['chunk', 'rate'],
    refreshesMs: [1000],
    reportsMs: [0, 100],
    latencyUs: 1000,
    durationMs: 10_000,
    seed: 99,
  });

  it('runs each chunk setting once per report interval, rate rows and baselines without', () => {
    expect(rows.map((r) => `${r.strategy}:${r.leaseSize ?? r.refreshMs}:${r.reportMs}`)).toEqual([
      'lease:50:0',
      'lease:50:100',
      'rate:1000:null',
      'central:null:null',
      'local:null:null',
    ]);
    expect(rows.map(sweepRowProblem)).toEqual(rows.map(() => null));
    for (const row of rows) expect(row.overAdmitted).toBe(0);
  });

  it('counts the reports in rep/1k, apart from the round-trips in RT/1k, and adds them up in the cost', () => {
    const [off, on, ...others] = rows as [SweepRow, SweepRow, ...SweepRow[]];
    const admissions = on.requests * (1 - on.denialRate);
    // At most one report per agent per 100 ms: 8 agents × (10 s + warm-up), per 1,000 admissions;
    // busy agents report most intervals (about 70 per 1,000 here).
    expect(on.reportsPer1k).toBeGreaterThan(20);
    expect(on.reportsPer1k).toBeLessThan((1000 * 8 * 120) / admissions);
    for (const row of [off, ...others]) expect(row.reportsPer1k, `${row.strategy} ${row.reportMs}`).toBe(0);
    // Reports only lower the bounds of leases: the round-trips stay those of the same setting without
    // reports (within a few per 1,000), far from round-trips + reports.
    expect(Math.abs(on.roundTripsPer1k - off.roundTripsPer1k)).toBeLessThan(on.reportsPer1k / 4);
    expect(messagesPer1k(on)).toBe(on.roundTripsPer1k + on.reportsPer1k);
    expect(messagesPer1k(off)).toBe(off.roundTripsPer1k);
  });
});
