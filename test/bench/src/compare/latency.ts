/**
 * Decision latencies of the comparison (`npm run bench:compare`), kept as a
 * log-scale histogram: fixed memory however many decisions a client makes,
 * and histograms of several clients merge by adding counts.
 *
 * Rules: a latency is whole nanoseconds (≥ 0; below 1 ns counts as 1 ns);
 * bucket i holds latencies in [2^(i/16), 2^((i+1)/16)) ns, so a quantile is
 * reported to within about 4.4 % (the geometric middle of its bucket). Pure:
 * no clock.
 */

/** BUCKETS_PER_DOUBLING — histogram resolution: 16 buckets between n and 2n ns. */
const BUCKETS_PER_DOUBLING = 16;
/** BUCKETS — covers up to 2^40 ns (18 minutes); longer latencies go to the last bucket. */
const BUCKETS = 40 * BUCKETS_PER_DOUBLING;

/** LatencyHistogram — counts of decisions by latency bucket. */
export class LatencyHistogram {
  readonly counts = new Float64Array(BUCKETS);
  count = 0;

  /** record — one decision that took `ns` nanoseconds. */
  record(ns: number): void {
    const i = Math.floor(Math.log2(Math.max(1, ns)) * BUCKETS_PER_DOUBLING);
    const bucket = Math.min(BUCKETS - 1, i);
    this.counts[bucket] = (this.counts[bucket] as number) + 1;
    this.count += 1;
  }

  /** sparse — the non-empty buckets as [index, count] pairs (what a client prints). */
  sparse(): Array<[number, number]> {
    const pairs: Array<[number, number]> = [];
    this.counts.forEach((n, i) => {
      if (n > 0) pairs.push([i, n]);
    });
    return pairs;
  }

  /** add — adds a client's `sparse()` buckets; throws on a bucket index out of range. */
  add(pairs: ReadonlyArray<readonly [number, number]>): void {
    for (const [i, n] of pairs) {
      if (!Number.isInteger(i) || i < 0 || i >= BUCKETS) throw new Error(`latency bucket ${i} out of range`);
      this.counts[i] = (this.counts[i] as number) + n;
      this.count += n;
    }
  }

  /** quantileNs — the latency below which fraction `q` (0..1] of decisions fell, ns; NaN with none recorded. */
  quantileNs(q: number): number {
    if (this.count === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i += 1) {
      seen += this.counts[i] as number;
      if (seen >= rank) return 2 ** ((i + 0.5) / BUCKETS_PER_DOUBLING);
    }
    return 2 ** (BUCKETS / BUCKETS_PER_DOUBLING);
  }
}
