/**
 * The saturation part's report: servers' and clients' CPU per million
 * decisions kept apart, cores the servers kept busy, round-trips per
 * second, ratios to the baseline, each row judged by its own promise (B +
 * r·T, B + A + r·T, or N per W for a window system), the table and the
 * line naming who kept it.
 */
import { describe, expect, it } from 'vitest';
import type { EnvelopeReport, WindowReport } from '@tokenlease/shared/testing';
import type { SystemRun } from './fleet-run.js';
import { LatencyHistogram } from './latency.js';
import { saturationHeading, saturationLine, saturationRows, saturationTable } from './saturation-report.js';
import { BASELINE, SYSTEMS, WINDOW_BASELINE, WINDOW_SYSTEMS } from './systems.js';

const held = (ok: boolean): EnvelopeReport => ({
  admissions: 1,
  admittedTokens: 1,
  worstExcessTokens: ok ? -1 : 5,
  violations: ok ? 0 : 2,
  worstWindow: null,
  ok,
});
const windows = (ok: boolean): WindowReport => ({
  admissions: 1,
  admittedTokens: 1,
  fullestTokens: ok ? 2000 : 2004,
  fullest: null,
  violations: ok ? 0 : 1,
  ok,
});

function run(
  name: string,
  f: { decisions: number; roundTrips: number; clients: number; servers: number; envelope?: boolean; promise?: boolean; windows?: boolean },
): SystemRun {
  const system = [...SYSTEMS, ...WINDOW_SYSTEMS].find((s) => s.name === name);
  if (system === undefined) throw new Error(name);
  const latency = new LatencyHistogram();
  latency.record(1000);
  return {
    system,
    durationMs: 5000,
    decisions: f.decisions,
    admittedTokens: 12_000,
    shed: 0,
    errors: 0,
    roundTrips: f.roundTrips,
    latency,
    cpuSecondsClients: f.clients,
    cpuSecondsServers: f.servers,
    envelope: held(f.envelope ?? true),
    promise: held(f.promise ?? f.envelope ?? true),
    windows: windows(f.windows ?? false),
  };
}

const RUNS = [
  run(BASELINE, { decisions: 25_000_000, roundTrips: 400, clients: 9, servers: 0.5 }),
  run('tokenlease-allowance', { decisions: 25_000_000, roundTrips: 400, clients: 9, servers: 0.5, envelope: false, promise: true }),
  run('redis-lua', { decisions: 200_000, roundTrips: 200_000, clients: 5, servers: 3, envelope: false }),
  run(WINDOW_BASELINE, { decisions: 30_000_000, roundTrips: 200, clients: 9, servers: 0.2, envelope: false, windows: true }),
  run('redis-window-log', { decisions: 200_000, roundTrips: 200_000, clients: 5, servers: 3, windows: false }),
];

describe('saturationRows', () => {
  const rows = saturationRows(RUNS, 64);

  it('keeps the servers’ CPU per million decisions apart from the clients’', () => {
    expect(rows[0]).toMatchObject({
      table: 'saturation',
      system: BASELINE,
      inFlight: 64,
      decisionsPerSecond: 5_000_000,
      serverCpuSecondsPerMillionDecisions: 0.02,
      clientCpuSecondsPerMillionDecisions: 0.36,
      serverCores: 0.1,
      roundTripsPerSecond: 80,
      promise: 'B + r·T',
      keptPromise: true,
    });
    expect(rows[2]).toMatchObject({ serverCpuSecondsPerMillionDecisions: 15, clientCpuSecondsPerMillionDecisions: 25, serverCores: 0.6 });
    expect(rows[2]?.ratios.serverCpuSecondsPerMillionDecisions).toBe(750);
    expect(rows[2]?.ratios.decisionsPerSecond).toBe(0.008);
  });

  it('judges each row by its own promise', () => {
    expect(rows.map((r) => [r.system, r.promise, r.keptPromise])).toEqual([
      [BASELINE, 'B + r·T', true],
      ['tokenlease-allowance', 'B + A + r·T', true],
      ['redis-lua', 'B + r·T', false],
      [WINDOW_BASELINE, 'N per W', true],
      ['redis-window-log', 'N per W', false],
    ]);
  });

  it('needs the baseline', () => {
    expect(() => saturationRows(RUNS.slice(1), 64)).toThrow(BASELINE);
  });
});

describe('saturation text', () => {
  const rows = saturationRows(RUNS, 64);

  it('prints a heading, a table with ratios in parentheses, and who kept their promise', () => {
    expect(saturationHeading(rows, 4)).toContain('4 client processes');
    const table = saturationTable(rows);
    expect(table[0]).toContain('server CPU s per M decisions');
    expect(table).toHaveLength(2 + rows.length);
    expect(table[4]).toContain('(×750)');
    expect(saturationLine(rows)).toBe(
      'own promise over every window of the merged admission logs, at saturation: kept by tokenlease-chunk (B + r·T), tokenlease-allowance (B + A + r·T), tokenlease-window (2000 per 1 s); exceeded by redis-lua (B + r·T), redis-window-log (2000 per 1 s)',
    );
  });
});
