/**
 * The comparison's window rows: figures judged against N per W (the
 * fullest window, not B + r·T), the ideal N·⌈T/W⌉, ratios to the window
 * baseline, the Markdown table and the window line.
 */
import { describe, expect, it } from 'vitest';
import type { WindowReport } from '@tokenlease/shared/testing';
import type { SystemRun } from './fleet-run.js';
import { LatencyHistogram } from './latency.js';
import { WINDOW, WINDOW_BASELINE, WINDOW_SYSTEMS } from './systems.js';
import { windowIdealTokens, windowLine, windowRows, windowTable } from './window-report.js';

function windows(fullestTokens: number, violations: number): WindowReport {
  return { admissions: 1, admittedTokens: 1, fullestTokens, fullest: null, violations, ok: violations === 0 };
}

function run(
  name: string,
  fields: { admitted: number; roundTrips: number; latencyNs: number; fullest: number; violations: number },
): SystemRun {
  const system = WINDOW_SYSTEMS.find((s) => s.name === name);
  if (system === undefined) throw new Error(name);
  const latency = new LatencyHistogram();
  latency.record(fields.latencyNs);
  const envelope = { admissions: 1, admittedTokens: 1, worstExcessTokens: -1, violations: 0, worstWindow: null, ok: true };
  return {
    system,
    durationMs: 10_000,
    decisions: 80_000,
    admittedTokens: fields.admitted,
    shed: 0,
    errors: 0,
    roundTrips: fields.roundTrips,
    latency,
    cpuSecondsClients: 1,
    cpuSecondsServers: 1,
    envelope,
    promise: envelope,
    windows: windows(fields.fullest, fields.violations),
  };
}

const RUNS = [
  run(WINDOW_BASELINE, { admitted: 16_000, roundTrips: 400, latencyNs: 100, fullest: 2000, violations: 0 }),
  run('redis-window-log', { admitted: 20_000, roundTrips: 80_000, latencyNs: 200_000, fullest: 2006, violations: 4 }),
];

describe('windowRows', () => {
  const rows = windowRows(RUNS);

  it('judges each row by its fullest window against N, and admitted against N·⌈T/W⌉', () => {
    expect(windowIdealTokens(10_000)).toBe(WINDOW.limitTokens * 10);
    expect(windowIdealTokens(2500)).toBe(WINDOW.limitTokens * 3);
    expect(rows[0]).toMatchObject({
      table: 'window',
      system: WINDOW_BASELINE,
      limitTokens: WINDOW.limitTokens,
      windowMs: WINDOW.windowMs,
      decisionsPerSecond: 8000,
      roundTripsPer1000Admissions: 25,
      idealTokens: 20_000,
      admittedOfIdeal: 0.8,
      fullestWindowTokens: 2000,
      overAdmittedTokens: 0,
      keptWindows: true,
    });
    expect(rows[1]).toMatchObject({ fullestWindowTokens: 2006, overAdmittedTokens: 6, windowViolations: 4, keptWindows: false });
    expect(rows[1]?.ratios).toMatchObject({ admittedOfIdeal: 1.25, roundTripsPer1000Admissions: 160, overAdmittedTokens: null });
  });

  it('needs a baseline run', () => {
    expect(() => windowRows(RUNS.slice(1))).toThrow(WINDOW_BASELINE);
  });

  it('prints the table and says who kept N per W', () => {
    const table = windowTable(rows);
    expect(table).toHaveLength(2 + RUNS.length);
    expect(table[2]).toBe('| tokenlease window pool, chunk leases | 8,000 | 0.101 | 0.101 | 25 | 25 | 0.8 | 2,000 | 0 |');
    expect(table[3]).toContain('| 1 (×1.25) | 2,006 (×1) | 6 (×–) |');
    expect(windowLine(rows)).toBe(
      'N per W (2000 per 1 s) over every window of the merged admission logs: kept by tokenlease-window; exceeded by redis-window-log (by 6 tokens, 4 admissions over)',
    );
  });
});
