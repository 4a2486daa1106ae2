/**
 * The sweep's HTML report: one self-contained page.
 *
 * Guarantees: the page has no external resource, no script and no URL at
 * all (it opens from file:// with no server and no network); every string
 * that came from outside (arguments, rows, reason, generatedBy) is escaped.
 * It shows the parameters and a replay command, the recommendation, then for
 * each allowance that has tokenlease rows a pair of charts for chunk leases
 * (utilization, and the cost the recommendation minimizes: coordinator
 * messages per 1,000 admissions, round-trips plus usage reports (cost.ts),
 * against lease size; one line per TTL and usage-report interval, baselines
 * as dashed labelled reference lines) and a pair for rate leases (the same
 * against the refresh interval), then the full table, the `--what-if` rows
 * and the per-key report's top keys (`--by-key`), whose key text is a
 * trace's and escaped like the rest. The x axis is logarithmic when its
 * values span more than a factor 10.
 */
import { formatRate } from '@tokenlease/shared';
import { demandLabel, sweepArgsToArgv, type SweepArgs } from './args.js';
import { renderLineChart, seriesStyle, type ChartSeries, type ReferenceLine } from './chart.js';
import { COST_NAME, messagesPer1k } from './cost.js';
import { formatDurationMs, formatDurationUs } from './duration.js';
import { escapeHtml, formatCount, formatFixed, formatPercent } from './format.js';
import { recommendationHeadline, type Recommendation } from './recommend.js';
import { isLeaseRow, isRateRow, STRATEGY_DESCRIPTIONS, type SweepRow } from './row.js';
import { renderTableHtml, TABLE_COLUMNS } from './table.js';
import { formatTraceFields } from './trace-fields.js';
import { KEY_SECRET_ENV } from './trace-key-hash.js';
import { BY_KEY_COLUMNS, byKeyCells, byKeyHeadline, type ByKeyReport } from './by-key.js';
import { WHAT_IF_COLUMNS, whatIfCells, type WhatIfRow } from './what-if.js';

/** HtmlReportInput — what the report shows; `generatedBy` names the tool and version (free text, escaped). */
export interface HtmlReportInput {
  readonly rows: readonly SweepRow[];
  readonly args: SweepArgs;
  readonly recommendation: Recommendation;
  /** What an ideal central bucket at each candidate limit denies (`--what-if`); none: no section. */
  readonly whatIf?: readonly WhatIfRow[];
  /** The per-key report (`--by-key`); null or none: no section. */
  readonly byKey?: ByKeyReport | null;
  readonly generatedBy: string;
}

/** LOG_SCALE_SPAN — x values (lease sizes, refresh intervals) spanning more than this factor get a logarithmic x axis. */
export const LOG_SCALE_SPAN = 10;

const DASH_CENTRAL = '7 4';
const DASH_LOCAL = '2 3';
const DASH_TARGET = '10 3 2 3';

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; } h3 { font-size: 14px; margin: 14px 0 4px; }
.generated { color: #666; margin: 0 0 12px; }
dl.params { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 2px 14px; margin: 0; }
dl.params dt { color: #555; } dl.params dd { margin: 0; font-family: ui-monospace, Menlo, Consolas, monospace; }
code.replay { display: block; background: #f4f4f4; padding: 8px 10px; margin-top: 10px; white-space: pre-wrap; word-break: break-all; font-size: 12px; }
.recommendation { border-left: 5px solid #2a7; background: #f1faf4; padding: 8px 14px; }
.recommendation.none { border-color: #c80; background: #fff8ec; }
.recommendation .headline { font-weight: 600; font-size: 15px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
svg.chart { max-width: 100%; height: auto; border: 1px solid #e4e4e4; background: #fff; }
svg.chart text { fill: #333; }
.table-wrap { overflow-x: auto; }
table.rows { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.rows th, table.rows td { padding: 3px 8px; border-bottom: 1px solid #e6e6e6; }
table.rows th { border-bottom: 2px solid #999; cursor: help; }
.left { text-align: left; } .right { text-align: right; }
tr.recommended { background: #e3f6ea; font-weight: 600; }
tr.over td { color: #b00; }
dl.columns { display: grid; grid-template-columns: max-content 1fr; gap: 0 12px; color: #444; font-size: 13px; }
dl.columns dd { margin: 0; }
`;

/** Shell-quote one argument for the replay line (single quotes when needed). */
const shellWord = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

function parameters(args: SweepArgs): string {
  const ttls = args.ttlsMs.map((ms) => formatDurationMs(ms)).join(', ');
  const pairs: readonly [string, string][] = [
    ['agents', String(args.agents)],
    ['workload', demandLabel(args)],
    ['capacity B', `${formatCount(args.capacityTokens)} tokens`],
    ['refill r', formatRate(args.refill)],
    ['lease sizes', `${args.leaseSizesTokens.map(formatCount).join(', ')} tokens`],
    ['lease TTLs', ttls],
    ['lease modes', args.leaseModes.join(', ')],
    ['refresh intervals (rate)', args.refreshesMs.map((ms) => formatDurationMs(ms)).join(', ')],
    ['allowances A', `${args.allowancesTokens.map(formatCount).join(', ')} tokens`],
    ['usage reports (chunk)', args.reportsMs.map((ms) => (ms === 0 ? 'off' : `every ${formatDurationMs(ms)}`)).join(', ')],
    ['latency (one way)', formatDurationUs(args.latencyUs)],
    ['simulated time', `${formatDurationMs(args.durationMs)} per run`],
    ['seed', `${args.seed}${args.seedFromFlag ? '' : ' (random)'}`],
    ['target utilization', `${formatPercent(args.targetUtilization)}%`],
    ...accessLogParameters(args),
  ];
  const items = pairs.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('\n');
  const replay = ['npm', 'run', 'sweep', '--', ...sweepArgsToArgv(args)].map(shellWord).join(' ');
  return `<dl class="params">\n${items}\n</dl>\n<code class="replay">${escapeHtml(replay)}</code>`;
}

/** SECRET_FROM — where an access log's key secret came from, as the report says it. */
const SECRET_FROM = new Map<string, string>([
  ['flag', 'the secret of --key-secret'],
  ['environment', `the secret of ${KEY_SECRET_ENV}`],
  ['random', 'a random secret of this run only'],
]);

/** accessLogParameters — an access log's fields and how its keys are named; none for the tokenlease format. */
function accessLogParameters(args: SweepArgs): [string, string][] {
  if (args.traceFields === null || args.keyHash === null) return [];
  return [
    ['trace fields', formatTraceFields(args.traceFields).join(', ')],
    ['key names', `${args.keyHash.rule}:<digest> under ${SECRET_FROM.get(args.keyHash.secretFrom) ?? ''}`],
  ];
}

function recommendationSection(rec: Recommendation): string {
  const cls = rec.row === null ? 'recommendation none' : 'recommendation';
  return (
    `<section class="${cls}">\n<p class="headline">${escapeHtml(recommendationHeadline(rec))}</p>\n` +
    `<p>${escapeHtml(rec.reason)}</p>\n</section>`
  );
}

type ChartRow = SweepRow & { readonly ttlMs: number };

/** XAxis — what a chart pair plots its rows against: lease size (chunk leases) or refresh interval (rate leases). */
interface XAxis {
  readonly of: (row: SweepRow) => number;
  /** Chart titles say "… vs <name>". */
  readonly name: string;
  readonly label: string;
  readonly format: (x: number) => string;
  /** A point's tooltip starts with this. */
  readonly point: (x: number) => string;
}

const LEASE_SIZE_AXIS: XAxis = {
  of: (row) => row.leaseSize ?? 0,
  name: 'lease size',
  label: 'lease size (maxLeaseTokens), tokens',
  format: formatCount,
  point: (x) => `lease ${formatCount(x)}`,
};
const REFRESH_AXIS: XAxis = {
  of: (row) => row.refreshMs ?? 0,
  name: 'refresh interval (rate leases)',
  label: "agents' refresh interval (refreshMs)",
  format: formatDurationMs,
  point: (x) => `rate leases, refresh ${formatDurationMs(x)}`,
};

/** The two charts for the rows of one allowance and lease mode, against `axis`. */
function chartPair(leaseRows: readonly ChartRow[], axis: XAxis, baselines: readonly SweepRow[], input: HtmlReportInput): string {
  const lines = chartLines(leaseRows);
  const sizes = [...new Set(leaseRows.map(axis.of))].sort((a, b) => a - b);
  const logX = sizes.length > 0 && (sizes[sizes.length - 1] ?? 1) / (sizes[0] ?? 1) > LOG_SCALE_SPAN;
  const chosen = input.recommendation.row;
  const series = (value: (row: SweepRow) => number, unit: string): ChartSeries[] =>
    lines.map((line, i) => ({
      label: line.label,
      ...seriesStyle(i),
      points: leaseRows
        .filter((row) => row.ttlMs === line.ttlMs && row.reportMs === line.reportMs)
        .map((row) => ({
          x: axis.of(row),
          y: value(row),
          note:
            `${axis.point(axis.of(row))}, ${line.label}: ${formatFixed(value(row), 1)} ${unit}` +
            (row.overAdmitted > 0 ? `; OVER the envelope by ${formatCount(row.overAdmitted)} tokens` : ''),
          mark: row.overAdmitted > 0 ? 'over' : row === chosen ? 'chosen' : null,
        })),
    }));
  const refs = (value: (row: SweepRow) => number, suffix: string): ReferenceLine[] =>
    baselines.map((row) => ({
      label: `${row.strategy} ${formatFixed(value(row), 1)}${suffix}`,
      y: value(row),
      dash: row.strategy === 'central' ? DASH_CENTRAL : DASH_LOCAL,
    }));
  const utilization = (row: SweepRow): number => row.utilization * 100;

  const xLabel = `${axis.label}${logX ? ', log scale' : ''}`;
  const common = { xLabel, xTicks: sizes, logX, formatX: axis.format };
  const target = input.args.targetUtilization * 100;
  const utilChart = renderLineChart({
    ...common,
    title: `Utilization vs ${axis.name}`,
    yLabel: 'utilization, % of the ideal bucket',
    series: series(utilization, '%'),
    references: [...refs(utilization, '%'), { label: `target ${formatFixed(target, 1)}%`, y: target, dash: DASH_TARGET }],
    yFromZero: false,
    formatY: (y) => formatFixed(y, y % 1 === 0 ? 0 : 1),
  });
  const costChart = renderLineChart({
    ...common,
    title: `Messages per 1,000 admissions vs ${axis.name}`,
    yLabel: COST_NAME,
    series: series(messagesPer1k, 'messages per 1,000'),
    references: refs(messagesPer1k, ''),
    yFromZero: true,
    formatY: (y) => formatFixed(y, y % 1 === 0 ? 0 : 1),
  });
  return `<div class="charts">\n${utilChart}\n${costChart}\n</div>`;
}

/**
 * chartLines — one chart line per TTL and usage-report interval, by TTL
 * then reports (off first); labels name the reports only when some row has
 * them on.
 */
function chartLines(rows: readonly ChartRow[]): { readonly ttlMs: number; readonly reportMs: number | null; readonly label: string }[] {
  const withReports = rows.some((row) => (row.reportMs ?? 0) > 0);
  const keys = new Map<string, { ttlMs: number; reportMs: number | null }>();
  for (const row of rows) keys.set(`${row.ttlMs}/${row.reportMs}`, { ttlMs: row.ttlMs, reportMs: row.reportMs });
  return [...keys.values()]
    .sort((a, b) => a.ttlMs - b.ttlMs || (a.reportMs ?? 0) - (b.reportMs ?? 0))
    .map((key) => {
      const reports = !withReports
        ? ''
        : (key.reportMs ?? 0) === 0
          ? ', reports off'
          : `, reports every ${formatDurationMs(key.reportMs ?? 0)}`;
      return { ...key, label: `TTL ${formatDurationMs(key.ttlMs)}${reports}` };
    });
}

function chartSections(input: HtmlReportInput): string {
  const leaseRows: ChartRow[] = input.rows.filter(isLeaseRow);
  const rateRows: ChartRow[] = input.rows.filter(isRateRow);
  const baselines = ['central', 'local'].map((s) => input.rows.find((row) => row.strategy === s)).filter((row) => row !== undefined);
  const allowances = [...new Set([...leaseRows, ...rateRows].map((row) => row.allowance))].sort((a, b) => a - b);
  if (allowances.length === 0) return '<p>No lease rows to chart.</p>';
  const pair = (rows: readonly ChartRow[], axis: XAxis): string =>
    rows.length === 0 ? '' : `\n${chartPair(rows, axis, baselines, input)}`;
  return allowances
    .map((allowance) => {
      const promise = allowance === 0 ? 'strict: B + r·T' : `envelope B + ${formatCount(allowance)} + r·T`;
      const heading = `Allowance ${formatCount(allowance)} (${promise})`;
      const chunk = pair(
        leaseRows.filter((row) => row.allowance === allowance),
        LEASE_SIZE_AXIS,
      );
      const rate = pair(
        rateRows.filter((row) => row.allowance === allowance),
        REFRESH_AXIS,
      );
      return `<section class="allowance">\n<h2>${escapeHtml(heading)}</h2>${chunk}${rate}\n</section>`;
    })
    .join('\n');
}

function legendNotes(): string {
  const list = (pairs: readonly (readonly [string, string])[]): string =>
    `<dl class="columns">\n${pairs.map(([term, text]) => `<dt>${escapeHtml(term)}</dt><dd>${escapeHtml(text)}</dd>`).join('\n')}\n</dl>`;
  return (
    `<h3>Strategies</h3>\n${list(Object.entries(STRATEGY_DESCRIPTIONS))}\n` +
    `<h3>Columns</h3>\n${list(TABLE_COLUMNS.map((c) => [c.header, c.title] as const))}`
  );
}

/**
 * renderHtml — the whole report as one HTML document (a string starting with
 * `<!DOCTYPE html>`); no external resources, scripts or URLs; all text escaped.
 */
export function renderHtml(input: HtmlReportInput): string {
  const title = `tokenlease lease-size sweep: ${demandLabel(input.args)}`;
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    '<header>',
    '<h1>Lease-size sweep</h1>',
    `<p class="generated">${escapeHtml(input.generatedBy)}</p>`,
    parameters(input.args),
    '</header>',
    '<h2>Recommendation</h2>',
    recommendationSection(input.recommendation),
    chartSections(input),
    '<section>',
    '<h2>All runs</h2>',
    `<div class="table-wrap">${renderTableHtml(input.rows, { marked: input.recommendation.row })}</div>`,
    '</section>',
    whatIfSection(input.whatIf ?? []),
    byKeySection(input.byKey ?? null),
    '<section>',
    '<h2>What the table shows</h2>',
    legendNotes(),
    '</section>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** htmlTable — a table of text cells under `columns` (each header's title says what it means), every cell escaped. */
function htmlTable(columns: ReadonlyArray<readonly [string, string]>, rows: readonly (readonly string[])[]): string {
  const head = `<tr>${columns.map(([name, meaning]) => `<th title="${escapeHtml(meaning)}">${escapeHtml(name)}</th>`).join('')}</tr>`;
  const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${escapeHtml(cell)}</td>`).join('')}</tr>`).join('\n');
  return `<div class="table-wrap"><table>\n${head}\n${body}\n</table></div>`;
}

/** whatIfSection — the `--what-if` rows as a table, with what each column means; empty without rows. */
function whatIfSection(rows: readonly WhatIfRow[]): string {
  if (rows.length === 0) return '';
  return [
    '<section class="what-if">',
    '<h2>What if: denials at candidate limits</h2>',
    '<p>An ideal central bucket at each limit (no latency, no leases) on the same arrivals, the sweep’s own limit first.</p>',
    htmlTable(WHAT_IF_COLUMNS, rows.map(whatIfCells)),
    '</section>',
  ].join('\n');
}

/** byKeySection — the per-key report: for each limit its totals and a table of its top keys; empty without a report. */
function byKeySection(report: ByKeyReport | null): string {
  if (report === null) return '';
  const without = report.arrivalsWithoutKey > 0 ? ` ${formatCount(report.arrivalsWithoutKey)} arrivals without a key are in none.` : '';
  return [
    '<section class="by-key">',
    `<h2>By key: the ${formatCount(report.top)} keys denied most at each limit</h2>`,
    `<p>Each key through its own exact bucket at each limit (as a template pool gives every key its own), full at the key’s first arrival, deciding each of its arrivals in order.${escapeHtml(without)}</p>`,
    ...report.limits.flatMap((limit) => [
      `<h3>${escapeHtml(byKeyHeadline(limit, report))}</h3>`,
      htmlTable(BY_KEY_COLUMNS, limit.top.map(byKeyCells)),
    ]),
    '</section>',
  ].join('\n');
}
