import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { parseSweepArgs, type SweepArgs } from './args.js';
import { byKey, type ByKeyReport } from './by-key.js';
import { renderHtml } from './html.js';
import { recommend, type Recommendation } from './recommend.js';
import type { SweepRow } from './row.js';
import { sampleRateRows, sampleRow, sampleSweepRows } from './sample-rows.js';

const VOID = new Set(['meta', 'br', 'hr', 'img', 'input', 'link', 'wbr']);

/** Problems that would make the page malformed: unbalanced tags, raw `<`/`>` in text. */
function wellFormedProblems(html: string): string[] {
  const problems: string[] = [];
  if (!html.startsWith('<!DOCTYPE html>\n')) problems.push('no doctype');
  const body = html.replace(/^<!DOCTYPE html>/, '').replace(/<style>[\s\S]*?<\/style>/, '<style></style>');
  const stack: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<>]*")*)\s*(\/?)>/g;
  let last = 0;
  for (const match of body.matchAll(tag)) {
    const text = body.slice(last, match.index);
    if (/[<>]/.test(text)) problems.push(`raw < or > in text: ${JSON.stringify(text.slice(0, 60))}`);
    last = match.index + match[0].length;
    const [, closing, name = '', , selfClosing] = match;
    if (selfClosing === '/' || VOID.has(name)) continue;
    if (closing === '/') {
      const open = stack.pop();
      if (open !== name) problems.push(`</${name}> closes <${open ?? 'nothing'}>`);
    } else {
      stack.push(name);
    }
  }
  if (/[<>]/.test(body.slice(last))) problems.push('raw < or > after the last tag');
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(', ')}`);
  return problems;
}

/** Each `<svg>…</svg>` of the page. */
const svgs = (html: string): string[] => html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
const count = (text: string, pattern: RegExp): number => (text.match(pattern) ?? []).length;

function page(
  rows: readonly SweepRow[],
  argv: string[] = [],
  generatedBy = 'tokenlease sweep (test)',
  rec?: Recommendation,
  byKeyReport: ByKeyReport | null = null,
): string {
  const args: SweepArgs = parseSweepArgs(['--seed', '42', ...argv]);
  return renderHtml({ rows, args, recommendation: rec ?? recommend(rows, args.targetUtilization), generatedBy, byKey: byKeyReport });
}

/** keyReport — a per-key report of one arrival per key name, under B=1, r=1/s and B=2, r=1/s. */
function keyReport(names: readonly string[]): ByKeyReport {
  const arrivals = names.map((_, i) => ({ tUs: i, agent: 0, incarnation: 0, cost: 2, waitMs: 0 }));
  const limits = [1, 2].map((capacityTokens) => ({ capacityTokens, refill: makeRate(1, 1000) }));
  return byKey(arrivals, { names, ofArrival: names.map((_, i) => i) }, limits, 20);
}

describe('renderHtml charts', () => {
  const cases: [string, number[], number][] = [
    ['one allowance', [0], 3],
    ['two allowances', [0, 2000], 3],
    ['three allowances', [0, 500, 2000], 3],
  ];
  it.each(cases)('%s: two <svg> per allowance, one polyline per TTL in each', (_name, allowances, ttls) => {
    const html = page(sampleSweepRows(allowances), ['--allowances', allowances.join(',')]);
    const charts = svgs(html);
    expect(count(html, /<svg/g)).toBe(2 * allowances.length);
    expect(charts).toHaveLength(2 * allowances.length);
    for (const svg of charts) expect(count(svg, /<polyline/g)).toBe(ttls);
    for (const allowance of allowances)
      expect(html).toContain(`<h2>Allowance ${allowance === 0 ? '0' : allowance.toLocaleString('en-US')} (`);
  });

  it('draws baselines as dashed, labelled reference lines, and the target on the utilization chart', () => {
    const [util = '', roundTrips = ''] = svgs(page(sampleSweepRows([0])));
    expect(count(util, /<line class="reference"[^>]*stroke-dasharray="[^"]+"/g)).toBe(3);
    expect(util).toMatch(/>central 99\.8%</);
    expect(util).toMatch(/>local 71\.2%</);
    expect(util).toMatch(/>target 97\.0%</);
    // central's 1,490.6 round-trips would flatten the lease lines: noted, not drawn.
    expect(count(roundTrips, /<line class="reference"/g)).toBe(1);
    expect(roundTrips).toMatch(/>local 0\.0</);
    expect(roundTrips).toMatch(/↑ central 1,490\.6</);
    expect(roundTrips).toContain('(off scale)');
  });

  it('gives every TTL its own colour or dash, and a legend entry', () => {
    const ttls = Array.from({ length: 12 }, (_, i) => 100 * (i + 1));
    const rows = ttls.flatMap((ttlMs) => [5, 10].map((leaseSize) => sampleRow({ ttlMs, leaseSize })));
    const [util = ''] = svgs(page(rows));
    const styles = [...util.matchAll(/<polyline class="series"([^>]*)>/g)].map((m) => {
      const attributes = m[1] ?? '';
      return `${/ stroke="([^"]+)"/.exec(attributes)?.[1]} ${/stroke-dasharray="([^"]+)"/.exec(attributes)?.[1] ?? 'solid'}`;
    });
    expect(styles).toHaveLength(12);
    expect(new Set(styles).size).toBe(12);
    for (const ttlMs of ttls) expect(util).toContain(`>TTL ${ttlMs < 1000 ? `${ttlMs}ms` : `${ttlMs / 1000}s`}<`);
  });

  const xs = (svg: string): number[] =>
    (/<polyline class="series"[^>]*points="([^"]*)"/.exec(svg)?.[1] ?? '').split(' ').map((pair) => Number(pair.split(',')[0]));
  const scaleCases: [string, number[], boolean, number][] = [
    ['1, 10, 100 on a log axis: equal steps', [1, 10, 100], true, 1],
    ['5 to 100 (factor 20) on a log axis', [5, 50, 500], true, 1],
    ['10, 20, 40 (factor 4) on a linear axis: steps 1 : 2', [10, 20, 40], false, 2],
    ['10, 50, 100 (factor exactly 10) on a linear axis', [10, 55, 100], false, 1],
  ];
  it.each(scaleCases)('%s', (_name, sizes, log, ratio) => {
    const html = page(
      sizes.map((leaseSize) => sampleRow({ leaseSize })),
      ['--capacity', '1000'],
    );
    const [util = ''] = svgs(html);
    const [a = 0, b = 0, c = 0] = xs(util);
    expect((c - b) / (b - a)).toBeCloseTo(ratio, 1);
    expect(util.includes('log scale')).toBe(log);
    for (const size of sizes) expect(util).toContain(`text-anchor="middle">${size}</text>`);
  });

  it('rings the recommended point and crosses points that exceeded the envelope', () => {
    const rows = [sampleRow({ leaseSize: 10 }), sampleRow({ leaseSize: 25, overAdmitted: 4 })];
    const [util = ''] = svgs(page(rows));
    expect(util).toContain('>recommended<');
    expect(util).toContain('>over the envelope<');
    expect(util).toContain('OVER the envelope by 4 tokens');
  });

  it('charts rate rows against the refresh interval, beside the chunk charts of each allowance', () => {
    const rows = [...sampleSweepRows([0, 2000]), ...sampleRateRows([0, 2000])];
    const charts = svgs(page(rows, ['--allowances', '0,2000']));
    expect(charts).toHaveLength(8);
    const rateCharts = charts.filter((svg) => svg.includes('vs refresh interval (rate leases)'));
    expect(rateCharts).toHaveLength(4);
    // Refreshes 250 ms to 2 s pair with TTLs 1 s, 2 s and 5 s: one line per TTL, ticks at each refresh.
    for (const svg of rateCharts) {
      expect(count(svg, /<polyline class="series"/g)).toBe(3);
      expect(svg).toContain('refresh interval (refreshMs)');
      for (const tick of ['250ms', '500ms', '1s', '2s']) expect(svg).toContain(`text-anchor="middle">${tick}</text>`);
    }
    expect(rateCharts[0]).toContain('rate leases, refresh 250ms, TTL 1s: ');
  });

  it('draws a chunk line per TTL and report interval when usage reports ran, and charts the cost: round-trips plus reports', () => {
    const rows = [100, 50, 250].flatMap((leaseSize) =>
      [0, 100].map((reportMs) => sampleRow({ leaseSize, reportMs, roundTripsPer1k: 20, reportsPer1k: reportMs / 10 })),
    );
    const html = page(rows, ['--reports', '0,100']);
    const [util = '', cost = ''] = svgs(html);
    expect(count(util, /<polyline class="series"/g)).toBe(2);
    expect(util).toContain('>TTL 2s, reports off<');
    expect(util).toContain('>TTL 2s, reports every 100ms<');
    expect(cost).toContain('lease 50, TTL 2s, reports every 100ms: 30.0 messages per 1,000');
    expect(cost).toContain('lease 50, TTL 2s, reports off: 20.0 messages per 1,000');
    expect(cost).toContain('round-trips + usage reports');
    expect(html).toContain('<dt>usage reports (chunk)</dt><dd>off, every 100ms</dd>');
    expect(html).toContain('--reports 0ms,100ms');
  });

  it('labels chunk lines by TTL alone when no row has usage reports on', () => {
    const [util = ''] = svgs(page(sampleSweepRows([0])));
    expect(util).toContain('>TTL 2s<');
    expect(util).not.toContain('reports');
  });

  it('charts rate rows alone when the sweep ran no chunk leases', () => {
    const html = page(
      [...sampleRateRows([0]), sampleRow({ strategy: 'central', leaseSize: null, ttlMs: null })],
      ['--lease-modes', 'rate', '--target-utilization', '0.9'],
    );
    expect(count(html, /<svg/g)).toBe(2);
    expect(html).toContain('<dt>lease modes</dt><dd>rate</dd>');
    expect(html).toContain('Recommendation: leaseMode: rate');
  });

  it('says there is nothing to chart without lease rows', () => {
    const html = page([sampleRow({ strategy: 'central', leaseSize: null, ttlMs: null })]);
    expect(count(html, /<svg/g)).toBe(0);
    expect(html).toContain('No lease rows to chart.');
  });
});

describe('renderHtml page', () => {
  const hostile = '<script>alert("x")</script>';
  const cases: [string, () => string][] = [
    ['the sample sweep', () => page(sampleSweepRows([0, 2000]), ['--allowances', '0,2000'])],
    [
      'the sample sweep with rate rows',
      () => page([...sampleSweepRows([0, 2000]), ...sampleRateRows([0, 2000])], ['--allowances', '0,2000']),
    ],
    ['hostile generatedBy', () => page(sampleSweepRows([0]), [], hostile)],
    ['hostile html path', () => page(sampleSweepRows([0]), ['--html', `${hostile}.html`])],
    ['hostile reason', () => page(sampleSweepRows([0]), [], 'x', { row: null, reason: hostile, targetUtilization: 0.97 })],
    ['no rows', () => page([])],
    ['a hostile key in the per-key report', () => page(sampleSweepRows([0]), [], 'x', undefined, keyReport([hostile, `"'&${hostile}`]))],
  ];
  it.each(cases)('%s: well-formed, escaped, with no script and no URL', (_name, render) => {
    const html = render();
    expect(wellFormedProblems(html)).toEqual([]);
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/\b(src|href)=|url\(|@import/i);
    expect(html).not.toMatch(/\son\w+=/i);
  });

  it('shows the escaped hostile text rather than dropping it', () => {
    expect(page(sampleSweepRows([0]), [], hostile)).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
  });

  it('shows the parameters, a replay command, the recommendation and the table', () => {
    const rows = sampleSweepRows([0]);
    const html = page(rows, ['--workload', 'bursty:on=500,off=1500,load=2', '--agents', '7']);
    expect(html).toContain('<dt>agents</dt><dd>7</dd>');
    expect(html).toContain('<dd>bursty:on=500ms,off=1.5s,load=2</dd>');
    expect(html).toContain('<dd>1000/s</dd>');
    expect(html).toContain('npm run sweep -- --agents 7 --capacity 500');
    expect(html).toContain('--seed 42');
    expect(html).toContain('Recommendation: maxLeaseTokens: 10, leaseTtlMs: 5000.');
    expect(count(html, /<tr[ >]/g)).toBe(rows.length + 1);
    expect(count(html, /<tr class="recommended">/g)).toBe(1);
  });

  it('shows the per-key report: each limit its totals and a table of its top keys, escaped', () => {
    const html = page(sampleSweepRows([0]), [], 'x', undefined, keyReport(['key:AAA', hostile]));
    expect(html).toContain('<section class="by-key">');
    expect(html).toContain('<h3>B=1, r=1/s per key: 2 of 2 keys limited at least once, 2 of 2 calls denied (4 tokens)</h3>');
    expect(html).toContain('<h3>B=2, r=1/s per key: 0 of 2 keys limited at least once, 0 of 2 calls denied (0 tokens)</h3>');
    expect(html).toContain(
      '<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td><td>1</td><td>2</td><td>0</td><td>1</td><td>2</td><td>100.0</td>',
    );
    expect(page(sampleSweepRows([0]))).not.toContain('by-key');
  });

  it('marks a missing recommendation', () => {
    const html = page([sampleRow({ utilization: 0.5 })]);
    expect(html).toContain('<section class="recommendation none">');
    expect(html).toContain('No recommendation.');
  });
});
