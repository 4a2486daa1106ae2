/**
 * The comparison's report: figures from a run, ratios to the baseline
 * (null where the baseline's figure is 0), the Markdown table and the
 * envelope line; and the latency histogram the figures come from.
 */
import { describe, expect, it } from 'vitest';
import type { EnvelopeReport } from '@tokenlease/shared/testing';
import type { SystemRun } from './fleet-run.js';
import { LatencyHistogram } from './latency.js';
import { envelopeLine, fleetRows, fleetTable, formatNumber, ratio } from './report.js';
import { BASELINE, SYSTEMS } from './systems.js';

function envelope(worstExcessTokens: number): EnvelopeReport {
  return {
    admissions: 1,
    admittedTokens: 1,
    worstExcessTokens,
    violations: worstExcessTokens > 0 ? 3 : 0,
    worstWindow: null,
    ok: worstExcessTokens <= 0,
  };
}

function run(
  name: string,
  fields: { decisions: number; admitted: number; roundTrips: number; cpu: number; latencyNs: number; excess: number },
): SystemRun {
  const system = SYSTEMS.find((s) => s.name === name);
  if (system === undefined) throw new Error(name);
  const latency = new LatencyHistogram();
  latency.record(fields.latencyNs);
  return {
    system,
    durationMs: 10_000,
    decisions: fields.decisions,
    admittedTokens: fields.admitted,
    shed: 0,
    errors: 0,
    roundTrips: fields.roundTrips,
    latency,
    cpuSecondsClients: fields.cpu / 2,
    cpuSecondsServers: fields.cpu / 2,
    envelope: envelope(fields.excess),
    promise: envelope(fields.excess),
    windows: { admissions: 1, admittedTokens: 1, fullestTokens: 3999, fullest: null, violations: 1, ok: false },
  };
}

const RUNS = [
  run(BASELINE, { decisions: 80_000, admitted: 20_000, roundTrips: 400, cpu: 2, latencyNs: 100, excess: -50 }),
  run('redis-lua', { decisions: 80_000, admitted: 22_000, roundTrips: 80_000, cpu: 8, latencyNs: 200_000, excess: 12.5 }),
  run('local-buckets', { decisions: 80_000, admitted: 16_000, roundTrips: 0, cpu: 1, latencyNs: 100, excess: -1 }),
];

describe('fleetRows', () => {
  const rows = fleetRows(RUNS);

  it('computes each figure from the run (ideal B + r·T = 2000 + 2000·10)', () => {
    expect(rows[0]).toMatchObject({
      table: 'fleet',
      system: BASELINE,
      decisionsPerSecond: 8000,
      cpuSecondsPerMillionDecisions: 25,
      roundTripsPer1000Admissions: 20,
      idealTokens: 22_000,
      admittedOfIdeal: 0.9091,
      overAdmittedTokens: 0,
      keptEnvelope: true,
      fullestWindowTokens: 3999,
    });
    expect(rows[0]?.latencyP50Us).toBeCloseTo(0.1, 2);
  });

  it('takes every ratio against the baseline, null where the baseline is 0', () => {
    expect(rows[0]?.ratios).toMatchObject({ decisionsPerSecond: 1, cpuSecondsPerMillionDecisions: 1, overAdmittedTokens: null });
    expect(rows[1]?.ratios).toMatchObject({ cpuSecondsPerMillionDecisions: 4, roundTripsPer1000Admissions: 181.8, admittedOfIdeal: 1.1 });
    expect(rows[1]?.ratios.latencyP50Us).toBeGreaterThan(1900);
    expect(rows[1]).toMatchObject({ overAdmittedTokens: 12.5, keptEnvelope: false, envelopeViolations: 3 });
    expect(rows[2]?.ratios.roundTripsPer1000Admissions).toBe(0);
  });

  it('needs a baseline run', () => {
    expect(() => fleetRows(RUNS.slice(1))).toThrow(BASELINE);
  });
});

describe('fleetTable and envelopeLine', () => {
  const rows = fleetRows(RUNS);

  it('prints a Markdown table: the baseline plain, the others with their ratios', () => {
    const table = fleetTable(rows);
    expect(table).toHaveLength(2 + RUNS.length);
    expect(table[1]).toMatch(/^\|( --- \|)+$/);
    expect(table[2]).toBe('| tokenlease chunk leases (strict) | 8,000 | 0.101 | 0.101 | 25 | 20 | 0.909 | 0 |');
    expect(table[3]).toContain('| 100 (×4) | 3,636 (×182) | 1 (×1.1) | 12.5 (×–) |');
  });

  it('says who kept the envelope and by how much the others exceeded it', () => {
    expect(envelopeLine(rows)).toBe(
      'envelope B + r·T over every window of the merged admission logs: kept by tokenlease-chunk, local-buckets; exceeded by redis-lua (by 12.5 tokens)',
    );
  });

  it.each<[number | null, string]>([
    [null, '–'],
    [Number.NaN, '–'],
    [0, '0'],
    [0.012345, '0.0123'],
    [99.94, '99.9'],
    [1234.5, '1,235'],
  ])('formatNumber(%s) = %s', (x, text) => {
    expect(formatNumber(x)).toBe(text);
  });

  it('ratio is null for a zero or missing baseline', () => {
    expect([ratio(5, 0), ratio(Number.NaN, 2), ratio(3, 2)]).toEqual([null, null, 1.5]);
  });
});

describe('LatencyHistogram', () => {
  it('reports quantiles within one bucket (4.4 %) and merges by adding counts', () => {
    const a = new LatencyHistogram();
    for (let ns = 1; ns <= 1000; ns += 1) a.record(ns * 1000);
    const b = new LatencyHistogram();
    b.add(a.sparse());
    b.add(a.sparse());
    expect(b.count).toBe(2000);
    for (const [q, ns] of [
      [0.5, 500_000],
      [0.99, 990_000],
      [1, 1_000_000],
    ] as const) {
      expect(Math.abs(b.quantileNs(q) / ns - 1)).toBeLessThan(0.045);
    }
  });

  it('is NaN when empty, and refuses a bucket out of range', () => {
    expect(new LatencyHistogram().quantileNs(0.5)).toBeNaN();
    expect(() => new LatencyHistogram().add([[10_000, 1]])).toThrow('out of range');
  });
});
