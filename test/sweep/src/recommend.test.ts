import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messagesPer1k } from './cost.js';
import { describeRecommendation, recommend, recommendationHeadline, TERMINAL_COLUMNS } from './recommend.js';
import type { SweepRow } from './row.js';
import { sampleRateRows, sampleRow, sampleSweepRows } from './sample-rows.js';

/** A lease row with the fields that matter here; the rest from sampleRow. */
const lease = (leaseSize: number, ttlMs: number, utilization: number, roundTripsPer1k: number, extra: Partial<SweepRow> = {}): SweepRow =>
  sampleRow({ leaseSize, ttlMs, utilization, roundTripsPer1k, ...extra });
const central = (utilization: number, roundTripsPer1k = 1500): SweepRow =>
  sampleRow({ strategy: 'central', leaseSize: null, ttlMs: null, utilization, roundTripsPer1k });
const local = (utilization: number): SweepRow =>
  sampleRow({ strategy: 'local', leaseSize: null, ttlMs: null, utilization, roundTripsPer1k: 0 });
/** A rate-lease row renewed every `refreshMs`. */
const rate = (refreshMs: number, ttlMs: number, utilization: number, roundTripsPer1k: number, extra: Partial<SweepRow> = {}): SweepRow =>
  sampleRow({ strategy: 'rate', leaseSize: null, refreshMs, ttlMs, utilization, roundTripsPer1k, strandedTokens: null, ...extra });

const key = (row: SweepRow | null): string | null =>
  row === null
    ? null
    : `${row.strategy}/${row.leaseSize ?? row.refreshMs}/${row.ttlMs}/${row.allowance}${(row.reportMs ?? 0) > 0 ? `/reports ${row.reportMs}` : ''}`;

describe('recommend picks', () => {
  const cases: [string, SweepRow[], number, string | null][] = [
    [
      'the fewest round-trips among rows at the target',
      [lease(5, 2000, 0.999, 200), lease(10, 2000, 0.99, 100), lease(25, 2000, 0.87, 40)],
      0.97,
      'lease/10/2000/0',
    ],
    ['a row exactly at the target', [lease(10, 2000, 0.97, 100), lease(5, 2000, 0.999, 200)], 0.97, 'lease/10/2000/0'],
    ['not a row just below the target', [lease(10, 2000, 0.9699, 100), lease(5, 2000, 0.999, 200)], 0.97, 'lease/5/2000/0'],
    [
      'not a cheaper row that exceeded the envelope',
      [lease(50, 2000, 1, 20, { overAdmitted: 1 }), lease(10, 2000, 0.99, 100)],
      0.97,
      'lease/10/2000/0',
    ],
    ['the smaller lease on equal round-trips', [lease(20, 2000, 0.99, 50), lease(10, 2000, 0.99, 50)], 0.97, 'lease/10/2000/0'],
    ['the shorter TTL on equal round-trips and lease', [lease(10, 5000, 0.99, 50), lease(10, 1000, 0.99, 50)], 0.97, 'lease/10/1000/0'],
    [
      'the smaller allowance on a full tie',
      [lease(10, 1000, 0.99, 50, { allowance: 2000 }), lease(10, 1000, 0.99, 50)],
      0.97,
      'lease/10/1000/0',
    ],
    [
      'a row with an allowance when it is cheaper',
      [lease(25, 2000, 0.98, 40, { allowance: 2000 }), lease(10, 2000, 0.99, 100)],
      0.97,
      'lease/25/2000/2000',
    ],
    ['never a baseline, even a perfect one', [local(1), central(1, 0), lease(10, 2000, 0.98, 100)], 0.97, 'lease/10/2000/0'],
    ['a target of 1 only when reached', [lease(10, 2000, 1, 100), lease(5, 2000, 0.9999, 1)], 1, 'lease/10/2000/0'],
    ['the sample sweep: lease 25, TTL 5 s, allowance 2000', sampleSweepRows([0, 2000]), 0.97, 'lease/25/5000/2000'],
    ['the sample sweep, strict only: lease 10, TTL 5 s', sampleSweepRows([0]), 0.97, 'lease/10/5000/0'],
    [
      'a rate row when it is the cheapest at the target',
      [lease(10, 2000, 0.99, 100), rate(1000, 2000, 0.98, 25)],
      0.97,
      'rate/1000/2000/0',
    ],
    ['not a rate row below the target, however cheap', [lease(10, 2000, 0.99, 100), rate(1000, 2000, 0.95, 25)], 0.97, 'lease/10/2000/0'],
    [
      'not a rate row that exceeded the envelope',
      [lease(10, 2000, 0.99, 100), rate(1000, 2000, 0.99, 25, { overAdmitted: 2 })],
      0.97,
      'lease/10/2000/0',
    ],
    ['chunk leases on equal round-trips', [rate(500, 1000, 0.99, 50), lease(10, 2000, 0.99, 50)], 0.97, 'lease/10/2000/0'],
    [
      'the shorter refresh among rate rows on equal round-trips',
      [rate(1000, 2000, 0.99, 50), rate(500, 2000, 0.99, 50)],
      0.97,
      'rate/500/2000/0',
    ],
    [
      'the sample sweep with rate rows: still lease 10, TTL 5 s',
      [...sampleSweepRows([0]), ...sampleRateRows([0])],
      0.97,
      'lease/10/5000/0',
    ],
    ['the sample rate rows at a 90% target: refresh 2 s', [...sampleSweepRows([0]), ...sampleRateRows([0])], 0.9, 'rate/2000/5000/0'],
    [
      'a report row when it is the cheapest at the target, reports counted',
      [lease(50, 2000, 0.98, 60, { reportMs: 100 }), lease(10, 2000, 0.99, 100)],
      0.97,
      'lease/50/2000/0/reports 100',
    ],
    [
      'not a report row whose reports make it dearer',
      [lease(50, 2000, 0.98, 60, { reportMs: 100, reportsPer1k: 50 }), lease(10, 2000, 0.99, 100)],
      0.97,
      'lease/10/2000/0',
    ],
    [
      'not a report row below the target',
      [lease(50, 2000, 0.96, 60, { reportMs: 100 }), lease(10, 2000, 0.99, 100)],
      0.97,
      'lease/10/2000/0',
    ],
    [
      'not a report row that exceeded the envelope',
      [lease(50, 2000, 0.99, 60, { reportMs: 100, overAdmitted: 1 }), lease(10, 2000, 0.99, 100)],
      0.97,
      'lease/10/2000/0',
    ],
    ['reports off on a full tie', [lease(10, 2000, 0.99, 50, { reportMs: 100 }), lease(10, 2000, 0.99, 50)], 0.97, 'lease/10/2000/0'],
    [
      'the longer report interval on a full tie',
      [lease(10, 2000, 0.99, 50, { reportMs: 100 }), lease(10, 2000, 0.99, 50, { reportMs: 500 })],
      0.97,
      'lease/10/2000/0/reports 500',
    ],
    [
      'a strict report row over an allowance row on equal round-trips',
      [lease(50, 2000, 0.99, 50, { allowance: 500 }), lease(50, 2000, 0.99, 50, { reportMs: 100 })],
      0.97,
      'lease/50/2000/0/reports 100',
    ],
    ['nothing when no row reaches the target', [lease(25, 2000, 0.87, 40), lease(50, 2000, 0.49, 20)], 0.97, null],
    [
      'nothing when only envelope breakers reach it',
      [lease(10, 2000, 0.99, 100, { overAdmitted: 5 }), lease(50, 2000, 0.49, 20)],
      0.97,
      null,
    ],
    ['nothing without lease rows', [central(1), local(0.7)], 0.97, null],
    ['nothing from no rows', [], 0.97, null],
  ];
  it.each(cases)('%s', (_name, rows, target, expected) => {
    const rec = recommend(rows, target);
    expect(key(rec.row)).toBe(expected);
    expect(rec.targetUtilization).toBe(target);
    if (rec.row !== null) expect(rows).toContain(rec.row);
    expect(rec.reason.length).toBeGreaterThan(0);
  });
});

describe('recommend explains', () => {
  const cases: [string, SweepRow[], number, string[]][] = [
    [
      'a choice: numbers and the central cost',
      [lease(10, 2000, 0.999, 100), central(0.998, 1490.6)],
      0.97,
      ['Lease 10 tokens, TTL 2s, allowance 0', '99.9%', 'target 97.0%', '100.0 round-trips', 'fewest of the 1 setting(s)', 'costs 1,490.6'],
    ],
    [
      'excluded envelope breakers',
      [lease(10, 2000, 0.99, 100), lease(50, 2000, 1, 10, { overAdmitted: 3 })],
      0.97,
      ['1 lease setting(s) exceeded the envelope', 'report it with the seed'],
    ],
    [
      'no candidate: best utilization and what to change',
      [lease(10, 2000, 0.9, 100), lease(25, 2000, 0.8, 40), lease(10, 1000, 0.85, 110)],
      0.97,
      [
        'No lease setting reached 97.0%',
        'the best was 90.0% (lease 10 tokens, TTL 2s, allowance 0)',
        'smaller ones (below 10 tokens',
        'larger allowance',
        'longest TTL tried (2s)',
      ],
    ],
    ['no candidate: shortest TTL best', [lease(10, 1000, 0.9, 100), lease(10, 5000, 0.8, 40)], 0.97, ['shortest TTL tried (1s) did best']],
    [
      'no candidate: a middle TTL best',
      [lease(10, 1000, 0.8, 100), lease(10, 2000, 0.9, 100), lease(10, 5000, 0.8, 40)],
      0.97,
      ['TTLs near 2s did best'],
    ],
    ['no candidate: one TTL tried', [lease(10, 2000, 0.9, 100)], 0.97, ['Try other TTLs than 2s']],
    [
      'no candidate: the target is beyond even the central bucket',
      [lease(10, 2000, 0.9, 100), central(0.95)],
      0.97,
      ['central) reaches only 95.0%', 'lower --target-utilization'],
    ],
    [
      'no candidate: every row broke the envelope',
      [lease(10, 2000, 0.99, 100, { overAdmitted: 4 }), lease(5, 2000, 0.99, 200, { overAdmitted: 9 })],
      0.97,
      ['Every one of the 2 lease setting(s) exceeded the envelope', 'worst by 9 tokens', 'bug'],
    ],
    ['no lease rows', [central(1)], 0.97, ['no lease rows']],
    [
      'a report choice: its interval, and its reports',
      [lease(50, 2000, 0.98, 60, { reportMs: 100, reportsPer1k: 75 })],
      0.97,
      [
        'Lease 50 tokens, TTL 2s, allowance 0, usage reports every 100ms admits 98.0%',
        '135.0 coordinator messages per 1,000 admissions (60.0 round-trips and 75.0 one-way usage reports)',
        'a usage report counted as a round-trip',
      ],
    ],
    [
      'reports weigh like round-trips',
      [lease(250, 2000, 0.99, 50, { reportMs: 100, reportsPer1k: 80 }), lease(50, 2000, 0.99, 80)],
      0.97,
      ['Lease 50 tokens', '80.0 round-trips'],
    ],
    ['no candidate and no reports tried: try them', [lease(50, 2000, 0.8, 40)], 0.97, ['--reports 100ms']],
    [
      'a rate choice',
      [rate(1000, 2000, 0.98, 21.5), lease(10, 2000, 0.99, 100)],
      0.97,
      ['Rate leases, refresh 1s, TTL 2s, allowance 0 admits 98.0%', '21.5 round-trips', 'fewest of the 2 setting(s)'],
    ],
    [
      'no candidate: rate best at the shortest refresh',
      [rate(250, 1000, 0.95, 80), rate(1000, 2000, 0.93, 20), lease(10, 2000, 0.9, 100)],
      0.97,
      [
        'the best was 95.0% (rate leases, refresh 250ms, TTL 1s, allowance 0)',
        'shortest refresh interval tried (250ms)',
        'larger allowance',
      ],
    ],
  ];
  it.each(cases)('%s', (_name, rows, target, fragments) => {
    const reason = recommend(rows, target).reason;
    for (const fragment of fragments) expect(reason).toContain(fragment);
  });

  it('does not suggest usage reports when some were tried', () => {
    expect(recommend([lease(50, 2000, 0.8, 40), lease(50, 2000, 0.85, 60, { reportMs: 100 })], 0.97).reason).not.toContain('--reports');
  });

  it.each([0, -0.5, 1.01, Number.NaN])('refuses target %s', (target) => {
    expect(() => recommend([], target)).toThrow(RangeError);
  });
});

describe('describeRecommendation', () => {
  const cases: [string, SweepRow[], string][] = [
    ['a strict choice', [lease(10, 2000, 0.99, 100)], 'Recommendation: maxLeaseTokens: 10, leaseTtlMs: 2000.'],
    [
      'a choice with an allowance',
      [lease(25, 5000, 0.99, 40, { allowance: 2000 })],
      'Recommendation: maxLeaseTokens: 25, leaseTtlMs: 5000, allowance: 2000.',
    ],
    [
      'rate leases',
      [rate(1000, 2000, 0.99, 20)],
      'Recommendation: leaseMode: rate, leaseTtlMs: 2000, maxLeaseTokens: the capacity; agents refreshMs: 1000.',
    ],
    [
      'rate leases with an allowance',
      [rate(500, 5000, 0.99, 20, { allowance: 100 })],
      'Recommendation: leaseMode: rate, leaseTtlMs: 5000, maxLeaseTokens: the capacity, allowance: 100; agents refreshMs: 500.',
    ],
    [
      'usage reports',
      [lease(50, 2000, 0.99, 60, { reportMs: 100 })],
      'Recommendation: maxLeaseTokens: 50, leaseTtlMs: 2000; agents reportMs: 100.',
    ],
    [
      'usage reports with an allowance',
      [lease(50, 2000, 0.99, 60, { reportMs: 250, allowance: 500 })],
      'Recommendation: maxLeaseTokens: 50, leaseTtlMs: 2000, allowance: 500; agents reportMs: 250.',
    ],
    ['none', [lease(25, 5000, 0.5, 40)], 'No recommendation.'],
  ];
  it.each(cases)('%s', (_name, rows, headline) => {
    const rec = recommend(rows, 0.97);
    const text = describeRecommendation(rec);
    expect(recommendationHeadline(rec)).toBe(headline);
    expect(text.replace(/\n/g, ' ').startsWith(headline)).toBe(true);
    expect(text.replace(/\n/g, ' ')).toContain(rec.reason);
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(TERMINAL_COLUMNS);
  });
});

describe('recommend (property)', () => {
  const row = fc.record({
    strategy: fc.constantFrom('lease' as const, 'lease' as const, 'rate' as const, 'central' as const, 'local' as const),
    leaseSize: fc.constantFrom(5, 10, 25),
    refreshMs: fc.constantFrom(250, 1000),
    ttlMs: fc.constantFrom(1000, 2000),
    allowance: fc.constantFrom(0, 2000),
    reportMs: fc.constantFrom(0, 0, 100, 500),
    utilization: fc.constantFrom(0.5, 0.96, 0.97, 0.99, 1),
    roundTripsPer1k: fc.constantFrom(10, 40, 100, 1000),
    reportsPer1k: fc.constantFrom(20, 80),
    overAdmitted: fc.constantFrom(0, 0, 0, 7),
  });
  it('returns a qualifying row no other qualifying row beats, or null only when none qualifies', () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 30 }), (specs) => {
        const rows = specs.map((s) =>
          s.strategy === 'lease'
            ? sampleRow({ ...s, refreshMs: null, reportsPer1k: s.reportMs === 0 ? 0 : s.reportsPer1k })
            : s.strategy === 'rate'
              ? sampleRow({ ...s, leaseSize: null, reportMs: null, reportsPer1k: 0 })
              : sampleRow({ ...s, leaseSize: null, refreshMs: null, ttlMs: null, reportMs: null, reportsPer1k: 0 }),
        );
        const ok = (r: SweepRow): boolean =>
          (r.strategy === 'lease' || r.strategy === 'rate') && r.overAdmitted === 0 && r.utilization >= 0.97;
        const chosen = recommend(rows, 0.97).row;
        if (chosen === null) {
          expect(rows.some(ok)).toBe(false);
          return;
        }
        expect(ok(chosen)).toBe(true);
        const reportRank = (r: SweepRow): number => ((r.reportMs ?? 0) === 0 ? 0 : 1 / (r.reportMs ?? 1));
        const rank = (r: SweepRow): number[] => [
          messagesPer1k(r),
          r.strategy === 'lease' ? 0 : 1,
          r.leaseSize ?? 0,
          r.refreshMs ?? 0,
          r.ttlMs ?? 0,
          r.allowance,
          reportRank(r),
        ];
        for (const other of rows.filter(ok)) {
          const [a, b] = [rank(other), rank(chosen)];
          const i = a.findIndex((v, j) => v !== b[j]);
          if (i >= 0) expect(a[i]).toBeGreaterThan(b[i] ?? 0);
        }
      }),
    );
  });
});
