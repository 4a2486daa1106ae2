/**
 * The sweep's plain-text table, and the column definitions the HTML report
 * shares with it.
 *
 * Guarantees: a header, a rule, one line per row, then footnotes; every
 * column has the width of its widest cell, text columns are left-aligned and
 * numeric columns right-aligned, two spaces apart, so the header, rule and
 * row lines all have the same length. Chunk-lease rows come first, then
 * rate-lease rows, each sorted by TTL, then lease size or refresh interval,
 * then allowance, then usage-report interval (so each lease size reads
 * strict, strict with reports, allowance, ...); baselines last (central,
 * then local). Cells are locale-independent; a missing lease size, refresh
 * interval, report interval or TTL prints `-`, reports off print `off`.
 */
import { messagesPer1k } from './cost.js';
import { escapeHtml, formatCount, formatFixed, formatPercent } from './format.js';
import { formatDurationMs } from './duration.js';
import { STRATEGIES, type SweepRow } from './row.js';

/** TableColumn — one column: its header, alignment and how a row prints in it. */
export interface TableColumn {
  readonly header: string;
  /** Longer explanation, with units, for tooltips and legends. */
  readonly title: string;
  readonly align: 'left' | 'right';
  readonly cell: (row: SweepRow) => string;
}

const NONE = '-';

/** TABLE_COLUMNS — the columns of the sweep table, in order. */
export const TABLE_COLUMNS: readonly TableColumn[] = [
  {
    header: 'strategy',
    title: 'lease = tokenlease, chunk leases; rate = tokenlease, rate leases; central = a round-trip per request; local = r/N per agent',
    align: 'left',
    cell: (r) => r.strategy,
  },
  {
    header: 'lease',
    title: 'maxLeaseTokens, tokens (chunk leases)',
    align: 'right',
    cell: (r) => (r.leaseSize === null ? NONE : formatCount(r.leaseSize)),
  },
  {
    header: 'refresh',
    title: "the agents' refresh interval (rate leases)",
    align: 'right',
    cell: (r) => (r.refreshMs === null ? NONE : formatDurationMs(r.refreshMs)),
  },
  { header: 'TTL', title: 'lease TTL', align: 'right', cell: (r) => (r.ttlMs === null ? NONE : formatDurationMs(r.ttlMs)) },
  { header: 'allowance', title: 'extra burst tokens beyond B (0 = strict)', align: 'right', cell: (r) => formatCount(r.allowance) },
  {
    header: 'reports',
    title: "the agents' usage-report interval (keeper reportMs; chunk leases; off = none)",
    align: 'right',
    cell: (r) => (r.reportMs === null ? NONE : r.reportMs === 0 ? 'off' : formatDurationMs(r.reportMs)),
  },
  { header: 'admitted', title: 'tokens admitted by the fleet', align: 'right', cell: (r) => formatCount(r.admitted) },
  {
    header: 'ideal',
    title: 'tokens one ideal shared bucket admits for the same arrivals',
    align: 'right',
    cell: (r) => formatCount(r.idealAdmitted),
  },
  { header: 'util %', title: 'admitted as a percentage of ideal', align: 'right', cell: (r) => formatPercent(r.utilization) },
  {
    header: 'over',
    title: 'worst excess over B + r·T in any window, tokens (0 = envelope held)',
    align: 'right',
    cell: (r) => formatCount(r.overAdmitted),
  },
  {
    header: 'RT/1k',
    title: 'coordinator round-trips (request attempts) per 1,000 admitted requests',
    align: 'right',
    cell: (r) => formatFixed(r.roundTripsPer1k, 1),
  },
  {
    header: 'rep/1k',
    title: 'one-way usage reports per 1,000 admitted requests (chunk leases with reports on); not in RT/1k',
    align: 'right',
    cell: (r) => (r.reportMs === null || r.reportMs === 0 ? NONE : formatFixed(r.reportsPer1k, 1)),
  },
  {
    header: 'msg/1k',
    title:
      'coordinator messages per 1,000 admitted requests: RT/1k + rep/1k, a report counted as a round-trip; the cost the recommendation minimizes',
    align: 'right',
    cell: (r) => formatFixed(messagesPer1k(r), 1),
  },
  {
    header: 'stranded',
    title: 'tokens leased and then lost at expiry or never used (not measured for rate leases)',
    align: 'right',
    cell: (r) => (r.strandedTokens === null ? NONE : formatCount(r.strandedTokens)),
  },
  {
    header: 'Jain',
    title: "Jain's fairness index over agents with equal demand, (0, 1]",
    align: 'right',
    cell: (r) => formatFixed(r.jain, 3),
  },
  {
    header: 'Jain>share',
    title: "Jain's index over the agents whose demand exceeds their max-min fair share (they should get equal amounts), (0, 1]",
    align: 'right',
    cell: (r) => formatFixed(r.jainOverShare, 3),
  },
  { header: 'p99 wait ms', title: 'p99 wait of take() calls, ms', align: 'right', cell: (r) => formatFixed(r.p99WaitMs, 1) },
  {
    header: 'denied %',
    title: 'denied requests as a percentage of offered requests',
    align: 'right',
    cell: (r) => formatPercent(r.denialRate),
  },
];

const compareNullable = (a: number | null, b: number | null): number => (a ?? 0) - (b ?? 0);

/**
 * sortSweepRows — a sorted copy in STRATEGIES order (lease, rate, central,
 * local), each by TTL, lease size, refresh interval, allowance, report interval.
 */
export function sortSweepRows(rows: readonly SweepRow[]): SweepRow[] {
  return [...rows].sort(
    (a, b) =>
      STRATEGIES.indexOf(a.strategy) - STRATEGIES.indexOf(b.strategy) ||
      compareNullable(a.ttlMs, b.ttlMs) ||
      compareNullable(a.leaseSize, b.leaseSize) ||
      compareNullable(a.refreshMs, b.refreshMs) ||
      a.allowance - b.allowance ||
      compareNullable(a.reportMs, b.reportMs),
  );
}

/** TableOptions — `marked`: a row (by identity) to flag with `*`, e.g. the recommendation. */
export interface TableOptions {
  readonly marked?: SweepRow | null;
}

/**
 * renderTable — the rows as an aligned plain-text table (no trailing
 * newline). With `options.marked` a leading `*` column flags that row and a
 * footnote explains it; rows with `overAdmitted > 0` get a `!` there and a
 * footnote too. No rows: the header and `(no rows)`.
 */
export function renderTable(rows: readonly SweepRow[], options: TableOptions = {}): string {
  const sorted = sortSweepRows(rows);
  const marked = options.marked ?? null;
  const anyOver = sorted.some((row) => row.overAdmitted > 0);
  const withMarks = marked !== null || anyOver;
  const markOf = (row: SweepRow): string => (row === marked ? '*' : row.overAdmitted > 0 ? '!' : ' ');
  const body = sorted.map((row) => TABLE_COLUMNS.map((column) => column.cell(row)));
  const widths = TABLE_COLUMNS.map((column, i) => Math.max(column.header.length, ...body.map((cells) => (cells[i] ?? '').length)));
  const line = (cells: readonly string[], mark: string): string => {
    const padded = cells.map((cell, i) => {
      const width = widths[i] ?? 0;
      return TABLE_COLUMNS[i]?.align === 'left' ? cell.padEnd(width) : cell.padStart(width);
    });
    return (withMarks ? `${mark} ` : '') + padded.join('  ');
  };
  const lines = [
    line(
      TABLE_COLUMNS.map((c) => c.header),
      ' ',
    ),
    line(
      widths.map((w) => '-'.repeat(w)),
      ' ',
    ),
  ];
  sorted.forEach((row, i) => lines.push(line(body[i] ?? [], markOf(row))));
  if (sorted.length === 0) lines.push('(no rows)');
  if (marked !== null && sorted.includes(marked)) lines.push('* recommended');
  if (anyOver) lines.push('! exceeded the envelope B + A + r·T (over > 0): never acceptable');
  return lines.join('\n');
}

/**
 * renderTableHtml — the same table as an HTML `<table>` (all text escaped);
 * the `marked` row gets class `recommended`, rows with `overAdmitted > 0`
 * class `over`, and headers carry their explanation as a tooltip.
 */
export function renderTableHtml(rows: readonly SweepRow[], options: TableOptions = {}): string {
  const marked = options.marked ?? null;
  const head = TABLE_COLUMNS.map((c) => `<th class="${c.align}" title="${escapeHtml(c.title)}">${escapeHtml(c.header)}</th>`).join('');
  const body = sortSweepRows(rows).map((row) => {
    const classes = [row === marked ? 'recommended' : '', row.overAdmitted > 0 ? 'over' : ''].filter((c) => c !== '');
    const cls = classes.length > 0 ? ` class="${classes.join(' ')}"` : '';
    const cells = TABLE_COLUMNS.map((c) => `<td class="${c.align}">${escapeHtml(c.cell(row))}</td>`).join('');
    return `<tr${cls}>${cells}</tr>`;
  });
  if (body.length === 0) body.push(`<tr><td colspan="${TABLE_COLUMNS.length}">no rows</td></tr>`);
  return `<table class="rows">\n<thead><tr>${head}</tr></thead>\n<tbody>\n${body.join('\n')}\n</tbody>\n</table>`;
}
