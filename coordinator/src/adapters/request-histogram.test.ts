/**
 * RequestHistogram renders exactly what prom-client's own Histogram renders
 * for the same observations (bounds, values on a bound, above every bound,
 * several label values), so a scrape cannot tell them apart; it tells at
 * most `valuesMax` label values apart, ignores values that are no finite
 * number, refuses bounds that do not ascend, and forgets on reset.
 */
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestHistogram } from './request-histogram.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVATIONS: ReadonlyArray<readonly [string, number]> = [
  ['acquire', 0.0005],
  ['acquire', 0.001],
  ['acquire', 0.0011],
  ['return', 0.05],
  ['acquire', 3],
  ['status', 1],
  ['return', 0],
];

function both(): { ours: RequestHistogram; theirs: Histogram<'op'>; ourRegistry: Registry; theirRegistry: Registry } {
  const ourRegistry = new Registry();
  const theirRegistry = new Registry();
  const spec = { name: 'h_seconds', help: 'Time to handle one request.' };
  const ours = new RequestHistogram({ ...spec, labelName: 'op', buckets: BUCKETS, registry: ourRegistry });
  const theirs = new Histogram({ ...spec, labelNames: ['op'], buckets: BUCKETS, registers: [theirRegistry] });
  return { ours, theirs, ourRegistry, theirRegistry };
}

describe('RequestHistogram', () => {
  it('renders as prom-client’s Histogram does for the same observations', async () => {
    const { ours, theirs, ourRegistry, theirRegistry } = both();
    for (const [op, value] of OBSERVATIONS) {
      ours.observe(op, value);
      theirs.observe({ op }, value);
    }
    const text = await ourRegistry.metrics();
    expect(text).toBe(await theirRegistry.metrics());
    expect(text).toContain('h_seconds_bucket{le="0.001",op="acquire"} 2\n');
    expect(text).toContain('h_seconds_bucket{le="+Inf",op="acquire"} 4\n');
    expect(text).toContain('h_seconds_count{op="return"} 2\n');
  });

  it('counts label values past valuesMax under the overflow value, and ignores what is no finite number', async () => {
    const registry = new Registry();
    const h = new RequestHistogram({ name: 'h', help: 'h', labelName: 'op', buckets: BUCKETS, registry, valuesMax: 2 });
    for (const op of ['a', 'b', 'c', 'd', 'a']) h.observe(op, 0.5);
    h.observe('a', Number.NaN);
    h.observe('a', Infinity);
    const text = await registry.metrics();
    expect(text).toContain('h_count{op="a"} 2\n');
    expect(text).toContain('h_count{op="b"} 1\n');
    expect(text).toContain('h_count{op="(other)"} 2\n');
    expect(text).not.toContain('op="c"');
  });

  it('refuses bounds that do not ascend, and forgets every observation on reset', async () => {
    const registry = new Registry();
    expect(() => new RequestHistogram({ name: 'x', help: 'x', labelName: 'op', buckets: [1, 1], registry })).toThrow(/ascend/);
    const h = new RequestHistogram({ name: 'h', help: 'h', labelName: 'op', buckets: BUCKETS, registry });
    h.observe('a', 0.5);
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('h_count');
  });
});
