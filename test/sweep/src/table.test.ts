import { describe, expect, it } from 'vitest';
import { escapeHtml, formatCount, formatFixed, formatPercent, wrapText } from './format.js';
import { sweepRowProblem, utilizationOf, type SweepRow } from './row.js';
import { sampleRateRows, sampleRow, sampleSweepRows } from './sample-rows.js';
import { renderTable, renderTableHtml, sortSweepRows, TABLE_COLUMNS } from './table.js';

/** Column spans [start, end) read from the rule line under the header. */
function spans(rule: string): [number, number][] {
  const out: [number, number][] = [];
  for (const match of rule.matchAll(/-+/g)) out.push([match.index, match.index + match[0].length]);
  return out;
}

const rows = sampleSweepRows([0, 2000]);

describe('renderTable alignment', () => {
  const cases: [string, readonly SweepRow[], SweepRow | null][] = [
    ['sample rows', rows, null],
    ['sample rows with a mark', rows, rows[3] ?? null],
    ['one baseline', [sampleRow({ strategy: 'local', leaseSize: null, ttlMs: null })], null],
    [
      'huge numbers',
      [sampleRow({ admitted: 12_345_678_901, idealAdmitted: 12_345_678_901, roundTripsPer1k: 123_456.78 }), sampleRow({ leaseSize: 1 })],
      null,
    ],
    ['an over-admitting row', [sampleRow({ overAdmitted: 17 }), sampleRow({ leaseSize: 5 })], null],
  ];
  it.each(cases)('%s: every line has the same length and each column lines up', (_name, input, marked) => {
    const lines = renderTable(input, { marked })
      .split('\n')
      .slice(0, input.length + 2);
    const [header = '', rule = ''] = lines;
    expect(new Set(lines.map((line) => line.length)).size).toBe(1);
    const columns = spans(rule);
    expect(columns).toHaveLength(TABLE_COLUMNS.length);
    for (const line of [header, ...lines.slice(2)]) {
      columns.forEach(([start, end], i) => {
        const cell = line.slice(start, end);
        expect(cell.trim()).not.toBe('');
        if (TABLE_COLUMNS[i]?.align === 'right') expect(cell.endsWith(' ')).toBe(false);
        else expect(cell.startsWith(' ')).toBe(false);
        // Cells never run into their neighbours.
        expect(line.slice(end, end + 2).trim()).toBe('');
      });
    }
  });
});

describe('renderTable content', () => {
  it('has the agreed headers in order', () => {
    expect(TABLE_COLUMNS.map((c) => c.header)).toEqual([
      'strategy',
      'lease',
      'refresh',
      'TTL',
      'allowance',
      'reports',
      'admitted',
      'ideal',
      'util %',
      'over',
      'RT/1k',
      'rep/1k',
      'msg/1k',
      'stranded',
      'Jain',
      'Jain>share',
      'p99 wait ms',
      'denied %',
    ]);
  });

  const cells = (row: SweepRow): string[] => TABLE_COLUMNS.map((c) => c.cell(row));
  const cases: [string, SweepRow, string[]][] = [
    [
      'a lease row',
      sampleRow({
        leaseSize: 10,
        ttlMs: 2000,
        allowance: 2000,
        admitted: 60_440,
        idealAdmitted: 60_500,
        utilization: 0.99901,
        overAdmitted: 0,
        roundTripsPer1k: 100.04,
        strandedTokens: 1234,
        jain: 0.98765,
        jainOverShare: 0.99951,
        p99WaitMs: 3.25,
        denialRate: 0.3287,
      }),
      [
        'lease',
        '10',
        '-',
        '2s',
        '2,000',
        'off',
        '60,440',
        '60,500',
        '99.9',
        '0',
        '100.0',
        '-',
        '100.0',
        '1,234',
        '0.988',
        '1.000',
        '3.3',
        '32.9',
      ],
    ],
    [
      'a baseline',
      sampleRow({
        strategy: 'central',
        leaseSize: null,
        ttlMs: null,
        utilization: 1,
        roundTripsPer1k: 1490.6,
        jain: 1,
        jainOverShare: 0.7194,
        p99WaitMs: 0,
        denialRate: 0,
      }),
      [
        'central',
        '-',
        '-',
        '-',
        '0',
        '-',
        '60,440',
        '60,500',
        '100.0',
        '0',
        '1,490.6',
        '-',
        '1,490.6',
        '40',
        '1.000',
        '0.719',
        '0.0',
        '0.0',
      ],
    ],
    [
      'a rate row',
      sampleRow({
        strategy: 'rate',
        leaseSize: null,
        refreshMs: 500,
        ttlMs: 1000,
        utilization: 0.9412,
        roundTripsPer1k: 41.23,
        strandedTokens: null,
        jainOverShare: 0.9987,
      }),
      ['rate', '-', '500ms', '1s', '0', '-', '60,440', '60,500', '94.1', '0', '41.2', '-', '41.2', '-', '0.980', '0.999'],
    ],
    ['a sub-second TTL', sampleRow({ ttlMs: 250 }), ['lease', '10', '-', '250ms']],
    ['a fractional TTL', sampleRow({ ttlMs: 1500 }), ['lease', '10', '-', '1.5s']],
    [
      'a fractional refresh',
      sampleRow({ strategy: 'rate', leaseSize: null, refreshMs: 1500, strandedTokens: null }),
      ['rate', '-', '1.5s', '2s'],
    ],
    [
      'a broken number',
      sampleRow({ roundTripsPer1k: Number.NaN }),
      ['lease', '10', '-', '2s', '0', 'off', '60,440', '60,500', '99.9', '0', 'n/a'],
    ],
    ['a row with usage reports', sampleRow({ reportMs: 100 }), ['lease', '10', '-', '2s', '0', '100ms']],
    [
      'a row with usage reports: counted apart, and added up in the cost',
      sampleRow({ reportMs: 100, roundTripsPer1k: 60.04, reportsPer1k: 77.04 }),
      ['lease', '10', '-', '2s', '0', '100ms', '60,440', '60,500', '99.9', '0', '60.0', '77.0', '137.1'],
    ],
    ['a row with slow usage reports', sampleRow({ reportMs: 1500 }), ['lease', '10', '-', '2s', '0', '1.5s']],
  ];
  it.each(cases)('%s', (_name, row, expected) => {
    expect(cells(row).slice(0, expected.length)).toEqual(expected);
  });

  it('sorts lease rows by TTL then lease size, baselines last', () => {
    const order = sortSweepRows(rows).map((r) => `${r.strategy}/${r.ttlMs ?? '-'}/${r.leaseSize ?? '-'}/${r.allowance}`);
    const leaseKeys = sortSweepRows(rows)
      .filter((r) => r.strategy === 'lease')
      .map((r) => [r.ttlMs ?? 0, r.leaseSize ?? 0, r.allowance]);
    const sortedKeys = [...leaseKeys].sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0) || (a[1] ?? 0) - (b[1] ?? 0) || (a[2] ?? 0) - (b[2] ?? 0));
    expect(leaseKeys).toEqual(sortedKeys);
    expect(order.slice(0, 2)).toEqual(['lease/1000/5/0', 'lease/1000/5/2000']);
    expect(order.slice(-2)).toEqual(['central/-/-/0', 'local/-/-/0']);
    expect(
      renderTable(rows)
        .split('\n')
        .slice(-2)
        .map((line) => line.split(/\s+/)[0]),
    ).toEqual(['central', 'local']);
  });

  it('sorts chunk-lease rows first, then rate rows by TTL and refresh interval, then baselines', () => {
    const order = sortSweepRows([...sampleRateRows([0]), ...sampleSweepRows([0])]).map(
      (r) => `${r.strategy}/${r.ttlMs ?? '-'}/${r.leaseSize ?? r.refreshMs ?? '-'}`,
    );
    expect(order.slice(0, 2)).toEqual(['lease/1000/5', 'lease/1000/10']);
    expect(order.filter((key) => key.startsWith('rate'))).toEqual([
      'rate/1000/250',
      'rate/1000/500',
      'rate/2000/250',
      'rate/2000/500',
      'rate/2000/1000',
      'rate/5000/250',
      'rate/5000/500',
      'rate/5000/1000',
      'rate/5000/2000',
    ]);
    expect(order.indexOf('rate/1000/250')).toBe(15);
    expect(order.slice(-2)).toEqual(['central/-/-', 'local/-/-']);
  });

  it('puts strict, strict with reports, allowance, allowance with reports side by side for each lease size', () => {
    const input = [
      sampleRow({ allowance: 500, reportMs: 100 }),
      sampleRow({ leaseSize: 5 }),
      sampleRow({ allowance: 500 }),
      sampleRow({ reportMs: 100 }),
      sampleRow(),
    ];
    expect(sortSweepRows(input).map((r) => `${r.leaseSize}/${r.allowance}/${r.reportMs}`)).toEqual([
      '5/0/0',
      '10/0/0',
      '10/0/100',
      '10/500/0',
      '10/500/100',
    ]);
  });

  it('shows usage reports per 1,000 apart from round-trips, only for rows with reports on', () => {
    const table = renderTable([sampleRow(), sampleRow({ reportMs: 100, reportsPer1k: 77.04 })]);
    expect(table).toContain('rep/1k');
    expect(table).toContain('77.0');
    const lines = table.split('\n');
    expect(lines.find((l) => l.includes('100ms'))).toContain('77.0');
    expect(
      lines
        .find((l) => l.includes(' off '))
        ?.trimEnd()
        .split(/ +/),
    ).toContain('-');
  });

  it('does not reorder its input', () => {
    const input = [...rows];
    renderTable(input);
    expect(input).toEqual(rows);
  });

  it('marks the given row and over-admitting rows, with footnotes', () => {
    const chosen = sampleRow({ leaseSize: 25 });
    const over = sampleRow({ leaseSize: 50, overAdmitted: 3 });
    const text = renderTable([sampleRow(), chosen, over], { marked: chosen });
    const lines = text.split('\n');
    expect(lines.filter((line) => line.startsWith('* lease'))).toHaveLength(1);
    expect(lines.find((line) => line.startsWith('* '))).toContain(' 25 ');
    expect(lines.find((line) => line.startsWith('! '))).toContain(' 50 ');
    expect(text).toContain('* recommended');
    expect(text).toContain('! exceeded the envelope');
  });

  it('has no marker column when nothing is marked', () => {
    expect(renderTable([sampleRow()]).startsWith('strategy')).toBe(true);
  });

  it('says so when there are no rows', () => {
    expect(renderTable([]).split('\n')).toEqual([expect.stringContaining('strategy'), expect.stringMatching(/^-+/), '(no rows)']);
  });
});

describe('renderTableHtml', () => {
  it('has one row per input row, classes for the marked and over rows, and escapes text', () => {
    const chosen = sampleRow({ leaseSize: 25 });
    const html = renderTableHtml([sampleRow(), chosen, sampleRow({ overAdmitted: 2 })], { marked: chosen });
    expect(html.match(/<tr/g)).toHaveLength(4);
    expect(html.match(/class="recommended"/g)).toHaveLength(1);
    expect(html.match(/class="over"/g)).toHaveLength(1);
    expect(html).toContain('title="Jain&#39;s fairness index');
  });
});

describe('formatting helpers', () => {
  const cases: [string, string, string][] = [
    ['formatCount', formatCount(0), '0'],
    ['formatCount', formatCount(999), '999'],
    ['formatCount', formatCount(1000), '1,000'],
    ['formatCount', formatCount(1_234_567.6), '1,234,568'],
    ['formatCount', formatCount(-1234), '-1,234'],
    ['formatCount', formatCount(-0.2), '0'],
    ['formatCount', formatCount(Number.POSITIVE_INFINITY), 'n/a'],
    ['formatFixed', formatFixed(1234.56, 1), '1,234.6'],
    ['formatFixed', formatFixed(0.98765, 3), '0.988'],
    ['formatFixed', formatFixed(-0.01, 1), '0.0'],
    ['formatFixed', formatFixed(Number.NaN, 1), 'n/a'],
    ['formatPercent', formatPercent(0.9987), '99.9'],
    ['formatPercent', formatPercent(1.01), '101.0'],
    ['formatPercent', formatPercent(0), '0.0'],
    ['escapeHtml', escapeHtml(`<script>"x" & 'y'</script>`), '&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;'],
    ['wrapText', wrapText('aa bb cc dd', '> ', 7).join('|'), '> aa bb|> cc dd'],
    ['wrapText', wrapText('averyveryverylongword x', '', 5).join('|'), 'averyveryverylongword|x'],
  ];
  it.each(cases)('%s → %j', (_name, actual, expected) => {
    expect(actual).toBe(expected);
  });
});

describe('sweepRowProblem', () => {
  it('accepts every sample row', () => {
    const rows = [...sampleSweepRows([0, 2000]), ...sampleRateRows([0, 2000])];
    expect(rows.map(sweepRowProblem)).toEqual(rows.map(() => null));
  });

  const cases: [string, Partial<SweepRow>, string][] = [
    ['a negative count', { admitted: -1 }, 'admitted must be a finite number'],
    ['NaN round-trips', { roundTripsPer1k: Number.NaN }, 'roundTripsPer1k'],
    ['a lease row without a size', { leaseSize: null }, 'leaseSize ≥ 1'],
    ['a lease row without a TTL', { ttlMs: null }, 'ttlMs > 0'],
    ['a baseline with a lease size', { strategy: 'central', ttlMs: null }, 'central baseline has leaseSize, refreshMs and ttlMs null'],
    ['a lease row with a refresh interval', { refreshMs: 500 }, 'lease row has refreshMs null'],
    ['a rate row without a refresh interval', { strategy: 'rate', leaseSize: null, strandedTokens: null }, 'rate row needs refreshMs > 0'],
    ['a rate row with a lease size', { strategy: 'rate', refreshMs: 500, strandedTokens: null }, 'rate row has leaseSize null'],
    [
      'a rate row without a TTL',
      { strategy: 'rate', leaseSize: null, refreshMs: 500, ttlMs: null, strandedTokens: null },
      'rate row needs ttlMs > 0',
    ],
    [
      'a rate row with stranded tokens',
      { strategy: 'rate', leaseSize: null, refreshMs: 500 },
      'strandedTokens must be null for a rate row',
    ],
    ['a lease row without stranded tokens', { strandedTokens: null }, 'strandedTokens must be a finite number ≥ 0'],
    ['a jainOverShare above 1', { jainOverShare: 1.01 }, 'jainOverShare must be in (0, 1]'],
    ['a Jain index of 0', { jain: 0 }, 'jain must be in (0, 1]'],
    ['a denial rate above 1', { denialRate: 1.5 }, 'denialRate must be in [0, 1]'],
    ['a lease row without a report interval', { reportMs: null }, 'lease row needs reportMs ≥ 0'],
    ['a lease row with a negative report interval', { reportMs: -1 }, 'lease row needs reportMs ≥ 0'],
    [
      'a rate row with a report interval',
      { strategy: 'rate', leaseSize: null, refreshMs: 500, strandedTokens: null, reportMs: 100 },
      'rate row has reportMs null',
    ],
    ['a baseline with a report interval', { strategy: 'local', leaseSize: null, ttlMs: null, reportMs: 0 }, 'local row has reportMs null'],
  ];
  it.each(cases)('reports %s', (_name, overrides, message) => {
    expect(sweepRowProblem(sampleRow(overrides))).toContain(message);
  });

  it.each([
    [0, 0, 1],
    [5, 10, 0.5],
    [12, 10, 1.2],
  ])('utilizationOf(%d, %d) = %d', (admitted, ideal, expected) => {
    expect(utilizationOf(admitted, ideal)).toBe(expected);
  });
});
