/**
 * RequestHistogram: a Prometheus histogram with one label, cheap enough to
 * observe on every request. prom-client's Histogram validates and hashes
 * its label object and allocates a closure on each `observe`, about 2 µs a
 * request at the coordinator's rates; here `observe` is one Map lookup and
 * a search of the bucket bounds, and allocates nothing once a label value
 * has been seen.
 *
 * It registers in a prom-client Registry as a metric of its own (the
 * registry renders whatever `get()` returns, as it does for its own
 * histograms) and renders as prom-client's Histogram does: a cumulative
 * `_bucket` per bound with `le`, `+Inf`, `_sum` and `_count` per label
 * value. At most `valuesMax` label values are told apart; further ones are
 * counted under `overflow`.
 */
import type { Metric, Registry } from 'prom-client';

interface Series {
  /** Observations per bucket (not cumulative); the last counts those above every bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** RequestHistogramOptions — its name and help, its one label, the bucket bounds (ascending) and where it registers. */
export interface RequestHistogramOptions {
  readonly name: string;
  readonly help: string;
  readonly labelName: string;
  readonly buckets: readonly number[];
  readonly registry: Registry;
  /** Label values told apart (default 64). */
  readonly valuesMax?: number;
  /** The label value of further ones (default `(other)`). */
  readonly overflow?: string;
}

interface Sample {
  readonly metricName: string;
  readonly labels: Record<string, string | number>;
  readonly value: number;
}

export class RequestHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly labelName: string;
  private readonly bounds: Float64Array;
  private readonly valuesMax: number;
  private readonly overflow: string;
  private readonly series = new Map<string, Series>();

  constructor(options: RequestHistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    this.labelName = options.labelName;
    this.bounds = Float64Array.from(options.buckets);
    for (let i = 1; i < this.bounds.length; i += 1)
      if (!((this.bounds[i] as number) > (this.bounds[i - 1] as number))) throw new Error(`${this.name}: bucket bounds must ascend`);
    this.valuesMax = options.valuesMax ?? 64;
    this.overflow = options.overflow ?? '(other)';
    options.registry.registerMetric(this as unknown as Metric);
  }

  /** observe — one observation of `value` under the label value `labelValue`; a value that is not a finite number is ignored. */
  observe(labelValue: string, value: number): void {
    if (!Number.isFinite(value)) return;
    const series = this.seriesOf(labelValue);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i += 1;
    series.counts[i] = (series.counts[i] as number) + 1;
    series.sum += value;
    series.count += 1;
  }

  /** get — the samples as prom-client's Registry reads a metric. */
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    for (const [labelValue, series] of this.series) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i += 1) {
        cumulative += series.counts[i] as number;
        const le = i < this.bounds.length ? (this.bounds[i] as number) : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { le, [this.labelName]: labelValue }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: { [this.labelName]: labelValue }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { [this.labelName]: labelValue }, value: series.count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  /** reset — forgets every observation (Registry.resetMetrics). */
  reset(): void {
    this.series.clear();
  }

  private seriesOf(labelValue: string): Series {
    const known = this.series.get(labelValue);
    if (known !== undefined) return known;
    const key = this.series.size < this.valuesMax ? labelValue : this.overflow;
    const series = this.series.get(key) ?? { counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
    this.series.set(key, series);
    return series;
  }
}
