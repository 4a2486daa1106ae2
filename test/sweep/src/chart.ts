/**
 * A small inline-SVG line chart for the sweep report: no library, no script,
 * no external reference (not even an xmlns URL; inline SVG in HTML needs none).
 *
 * Guarantees: exactly one `<polyline class="series">` per series (even an
 * empty one), drawn in the series' colour and listed in the legend; each
 * reference is a dashed horizontal `<line class="reference">` with a label,
 * or, when it lies far above the data, a labelled note at the top edge
 * instead of a squashed plot; every piece of text is escaped. The x axis is
 * logarithmic when asked (all x must then be > 0); ticks are placed at the
 * given x values, skipping labels that would overlap. Points carry a
 * `<title>` tooltip, which browsers show on hover without JavaScript.
 */
import { escapeHtml } from './format.js';

/** ChartPoint — one data point; `note` is its tooltip; `mark` rings it ('over' red cross, 'chosen' black ring). */
export interface ChartPoint {
  readonly x: number;
  readonly y: number;
  readonly note: string;
  readonly mark: 'over' | 'chosen' | null;
}

/** ChartSeries — one line, with its legend label, CSS colour and SVG dash pattern (null = solid). */
export interface ChartSeries {
  readonly label: string;
  readonly colour: string;
  readonly dash: string | null;
  readonly points: readonly ChartPoint[];
}

/** ReferenceLine — a dashed horizontal line at `y` (in data units) with a label and SVG dash pattern. */
export interface ReferenceLine {
  readonly label: string;
  readonly y: number;
  readonly dash: string;
}

/** LineChart — everything one chart shows; sizes in CSS pixels. */
export interface LineChart {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly ChartSeries[];
  readonly references: readonly ReferenceLine[];
  /** x values that get a tick (typically every lease size tried). */
  readonly xTicks: readonly number[];
  readonly logX: boolean;
  /** Start the y axis at 0 rather than just below the smallest value. */
  readonly yFromZero: boolean;
  readonly formatY: (y: number) => string;
  readonly formatX: (x: number) => string;
}

/** PALETTE — distinguishable series colours (Okabe–Ito, colour-blind safe, then a few more), used in order. */
export const PALETTE: readonly string[] = [
  '#0072B2',
  '#D55E00',
  '#009E73',
  '#CC79A7',
  '#E69F00',
  '#56B4E9',
  '#000000',
  '#999933',
  '#882255',
  '#8C564B',
];

/**
 * seriesStyle — colour and dash of the i-th series (from 0): PALETTE in
 * order, then the same colours dashed, so up to twice PALETTE's length
 * series stay distinct.
 */
export function seriesStyle(index: number): { readonly colour: string; readonly dash: string | null } {
  const colour = PALETTE[index % PALETTE.length] ?? '#000000';
  return { colour, dash: Math.floor(index / PALETTE.length) % 2 === 1 ? '6 3' : null };
}

const WIDTH = 560;
const HEIGHT = 370;
const LEFT = 62;
const RIGHT = 118; // reference labels
const BOTTOM = 50;
const PLOT_W = WIDTH - LEFT - RIGHT;
const LEGEND_Y = 36;
const LEGEND_ROW_PX = 16;
/** Rough width of one character at the chart's 11 px font, for laying out the legend. */
const CHAR_PX = 6.3;
/** A reference more than this many times the data's top is noted, not drawn. */
const OFF_SCALE_FACTOR = 3;
const X_LABEL_GAP_PX = 26;
const REF_LABEL_GAP_PX = 13;

const dashAttr = (dash: string | null): string => (dash === null ? '' : ` stroke-dasharray="${escapeHtml(dash)}"`);
const r1 = (v: number): string => String(Math.round(v * 10) / 10);

/** niceStep — a step of 1, 2 or 5 × 10^k that cuts `span` into about `count` parts. */
function niceStep(span: number, count: number): number {
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = raw / power;
  return (unit <= 1 ? 1 : unit <= 2 ? 2 : unit <= 5 ? 5 : 10) * power;
}

interface YAxis {
  readonly min: number;
  readonly max: number;
  readonly ticks: readonly number[];
}

function yAxis(values: readonly number[], fromZero: boolean): YAxis {
  const finite = values.filter((v) => Number.isFinite(v));
  let lo = finite.length > 0 ? Math.min(...finite) : 0;
  let hi = finite.length > 0 ? Math.max(...finite) : 1;
  if (fromZero) lo = Math.min(0, lo);
  if (hi - lo < 1e-9) {
    const pad = Math.max(1, Math.abs(hi) * 0.1);
    hi += pad;
    if (!fromZero) lo -= pad;
  }
  // Keep the lowest point off the bottom edge unless the axis starts at zero.
  if (!fromZero) lo -= (hi - lo) * 0.05;
  const step = niceStep(hi - lo, 5);
  const min = Math.floor(lo / step) * step;
  const max = Math.ceil(hi / step) * step;
  const ticks: number[] = [];
  for (let i = 0; min + i * step <= max + step / 1e6; i += 1) ticks.push(Number((min + i * step).toPrecision(12)));
  return { min, max, ticks };
}

interface LegendItem {
  readonly swatch: (x: number, y: number) => string;
  readonly label: string;
}

/** The legend as rows under the title, wrapped to the chart's width; returns the markup and the y below it. */
function legend(series: readonly ChartSeries[]): { readonly markup: string[]; readonly bottomY: number } {
  const items: LegendItem[] = series.map((s) => ({
    label: s.label,
    swatch: (x, y) =>
      `<line x1="${x}" x2="${x + 22}" y1="${y}" y2="${y}" stroke="${escapeHtml(s.colour)}" stroke-width="2"${dashAttr(s.dash)}/>` +
      `<circle cx="${x + 11}" cy="${y}" r="3.5" fill="${escapeHtml(s.colour)}"/>`,
  }));
  const marks = series.flatMap((s) => s.points.map((p) => p.mark));
  if (marks.includes('chosen')) {
    items.push({
      label: 'recommended',
      swatch: (x, y) => `<circle cx="${x + 11}" cy="${y}" r="7" fill="none" stroke="#000" stroke-width="2"/>`,
    });
  }
  if (marks.includes('over')) {
    items.push({
      label: 'over the envelope',
      swatch: (x, y) => `<path d="M${x + 5} ${y - 6}l12 12m0 -12l-12 12" stroke="#C00" stroke-width="2.5"/>`,
    });
  }
  const markup: string[] = [];
  let x = LEFT;
  let y = LEGEND_Y;
  for (const item of items) {
    const widthPx = 30 + item.label.length * CHAR_PX + 14;
    if (x > LEFT && x + widthPx > WIDTH - 8) {
      x = LEFT;
      y += LEGEND_ROW_PX;
    }
    markup.push(`${item.swatch(x, y)}<text x="${x + 28}" y="${y}" dominant-baseline="middle">${escapeHtml(item.label)}</text>`);
    x += widthPx;
  }
  return { markup, bottomY: y + 12 };
}

/** renderLineChart — the chart as one `<svg>` element (a string), 560 × 370 px, scaling down with its container. */
export function renderLineChart(chart: LineChart): string {
  const key = legend(chart.series);
  const top = key.bottomY + 8;
  const plotH = HEIGHT - top - BOTTOM;
  const xs = chart.series.flatMap((s) => s.points.map((p) => p.x)).concat(chart.xTicks);
  const tx = (x: number): number => (chart.logX ? Math.log10(Math.max(x, Number.MIN_VALUE)) : x);
  let x0 = Math.min(...xs.map(tx));
  let x1 = Math.max(...xs.map(tx));
  if (!Number.isFinite(x0) || !Number.isFinite(x1)) [x0, x1] = [0, 1];
  if (x1 - x0 < 1e-9) [x0, x1] = [x0 - 1, x1 + 1];
  const xPad = (x1 - x0) * 0.06;
  const px = (x: number): number => LEFT + ((tx(x) - (x0 - xPad)) / (x1 - x0 + 2 * xPad)) * PLOT_W;

  const dataYs = chart.series.flatMap((s) => s.points.map((p) => p.y));
  const dataTop = dataYs.length > 0 ? Math.max(...dataYs) : 0;
  const onScale = (ref: ReferenceLine): boolean => dataYs.length === 0 || ref.y <= Math.max(dataTop, 1e-9) * OFF_SCALE_FACTOR;
  const drawn = chart.references.filter(onScale);
  const offScale = chart.references.filter((ref) => !onScale(ref));
  const axis = yAxis([...dataYs, ...drawn.map((ref) => ref.y)], chart.yFromZero);
  const py = (y: number): number => top + plotH - ((y - axis.min) / (axis.max - axis.min)) * plotH;

  const parts: string[] = [];
  parts.push(`<svg class="chart" role="img" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-size="11">`);
  parts.push(`<title>${escapeHtml(chart.title)}</title>`);
  parts.push(`<text x="${LEFT}" y="18" font-size="13" font-weight="600">${escapeHtml(chart.title)}</text>`);
  parts.push(...key.markup);
  parts.push(`<rect x="${LEFT}" y="${top}" width="${PLOT_W}" height="${plotH}" fill="#fff" stroke="#bbb"/>`);
  for (const y of axis.ticks) {
    const yy = r1(py(y));
    parts.push(`<line class="grid" x1="${LEFT}" x2="${LEFT + PLOT_W}" y1="${yy}" y2="${yy}" stroke="#eee"/>`);
    parts.push(`<text x="${LEFT - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle">${escapeHtml(chart.formatY(y))}</text>`);
  }
  let lastLabelPx = -Infinity;
  for (const x of [...new Set(chart.xTicks)].sort((a, b) => a - b)) {
    const xx = r1(px(x));
    parts.push(`<line class="grid" x1="${xx}" x2="${xx}" y1="${top}" y2="${top + plotH}" stroke="#eee"/>`);
    parts.push(`<line x1="${xx}" x2="${xx}" y1="${top + plotH}" y2="${top + plotH + 4}" stroke="#888"/>`);
    if (px(x) - lastLabelPx >= X_LABEL_GAP_PX) {
      parts.push(`<text x="${xx}" y="${top + plotH + 16}" text-anchor="middle">${escapeHtml(chart.formatX(x))}</text>`);
      lastLabelPx = px(x);
    }
  }
  parts.push(`<text x="${LEFT + PLOT_W / 2}" y="${HEIGHT - 10}" text-anchor="middle">${escapeHtml(chart.xLabel)}</text>`);
  parts.push(`<text transform="translate(14 ${r1(top + plotH / 2)}) rotate(-90)" text-anchor="middle">${escapeHtml(chart.yLabel)}</text>`);
  parts.push(...references(drawn, offScale, py, top, plotH));
  chart.series.forEach((series) => parts.push(...seriesMarkup(series, px, py)));
  parts.push('</svg>');
  return parts.join('\n');
}

/**
 * Reference lines across the plot, labelled in the right margin at their
 * height; labels are pushed apart from the top down so close lines stay
 * readable. Off-scale references are noted first, at the top of the margin.
 */
function references(
  drawn: readonly ReferenceLine[],
  offScale: readonly ReferenceLine[],
  py: (y: number) => number,
  top: number,
  plotH: number,
): string[] {
  const out: string[] = [];
  const labelX = LEFT + PLOT_W + 6;
  let floor = top + 4;
  for (const ref of offScale) {
    out.push(
      `<text class="reference-label off-scale" x="${labelX}" y="${r1(floor)}" dominant-baseline="middle">↑ ${escapeHtml(ref.label)}</text>`,
    );
    out.push(
      `<text class="reference-label" x="${labelX + 10}" y="${r1(floor + 12)}" dominant-baseline="middle" fill="#666">(off scale)</text>`,
    );
    floor += 12 + REF_LABEL_GAP_PX;
  }
  const placed = drawn.map((ref) => ({ ref, labelY: py(ref.y) })).sort((a, b) => a.labelY - b.labelY);
  for (const label of placed) {
    label.labelY = Math.max(label.labelY, floor);
    floor = label.labelY + REF_LABEL_GAP_PX;
  }
  // Labels pushed past the bottom are pulled back up, keeping their spacing.
  let ceiling = top + plotH + 6;
  for (const label of [...placed].reverse()) {
    label.labelY = Math.min(label.labelY, ceiling);
    ceiling = label.labelY - REF_LABEL_GAP_PX;
  }
  for (const { ref, labelY } of placed) {
    const yy = r1(py(ref.y));
    out.push(
      `<line class="reference" x1="${LEFT}" x2="${LEFT + PLOT_W + 3}" y1="${yy}" y2="${yy}" stroke="#555" stroke-width="1.2" stroke-dasharray="${escapeHtml(ref.dash)}"/>`,
    );
    out.push(`<text class="reference-label" x="${labelX}" y="${r1(labelY)}" dominant-baseline="middle">${escapeHtml(ref.label)}</text>`);
  }
  return out;
}

function seriesMarkup(series: ChartSeries, px: (x: number) => number, py: (y: number) => number): string[] {
  const points = [...series.points].sort((a, b) => a.x - b.x);
  const colour = escapeHtml(series.colour);
  const out = [
    `<polyline class="series" fill="none" stroke="${colour}" stroke-width="2"${dashAttr(series.dash)} points="${points.map((p) => `${r1(px(p.x))},${r1(py(p.y))}`).join(' ')}"><title>${escapeHtml(series.label)}</title></polyline>`,
  ];
  for (const p of points) {
    const cx = px(p.x);
    const cy = py(p.y);
    if (p.mark === 'chosen') out.push(`<circle cx="${r1(cx)}" cy="${r1(cy)}" r="8" fill="none" stroke="#000" stroke-width="2"/>`);
    out.push(`<circle cx="${r1(cx)}" cy="${r1(cy)}" r="3.5" fill="${colour}"><title>${escapeHtml(p.note)}</title></circle>`);
    if (p.mark === 'over') {
      out.push(
        `<path d="M${r1(cx - 6)} ${r1(cy - 6)}l12 12m0 -12l-12 12" stroke="#C00" stroke-width="2.5"><title>${escapeHtml(p.note)}</title></path>`,
      );
    }
  }
  return out;
}
