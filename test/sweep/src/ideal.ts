/**
 * idealAdmitted — the most tokens any limiter with the envelope (capacity
 * B, refill r) could admit of these arrivals: the yardstick of utilization.
 *
 * A full bucket discarding refill is the same, count for count, as a queue
 * of tokens in which the oldest is dropped as each new one accrues: token k
 * is usable from when it accrues until token k + B does. A request that
 * fails fast can use a token usable at its arrival; one that may wait, a
 * token usable at some instant of its wait. Each request's usable tokens
 * are one contiguous range of k, so a maximum matching is found greedily
 * (Glover): give each token, in order, to the open request whose range
 * ends first. A request of cost c counts the tokens matched to it, up to c,
 * so for mixed costs the figure is an upper bound; for cost 1 it is exact.
 * Time is whole µs; the k-th refilled token accrues at ⌈k·u/ρ⌉ (exact units).
 */
import { tokenScale, type Rate } from '@tokenlease/shared';
import type { Arrival } from '@tokenlease/sim';

interface Open {
  readonly hi: number;
  need: number;
}

/** A binary min-heap of open requests by the last token they can use. */
class ByHi {
  private readonly items: Open[] = [];
  get size(): number {
    return this.items.length;
  }
  peek(): Open | undefined {
    return this.items[0];
  }
  push(item: Open): void {
    const a = this.items;
    a.push(item);
    for (let i = a.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if ((a[p] as Open).hi <= item.hi) break;
      a[i] = a[p] as Open;
      a[p] = item;
      i = p;
    }
  }
  pop(): void {
    const a = this.items;
    const last = a.pop();
    if (last === undefined || a.length === 0) return;
    a[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && (a[l] as Open).hi < (a[m] as Open).hi) m = l;
      if (r < a.length && (a[r] as Open).hi < (a[m] as Open).hi) m = r;
      if (m === i) break;
      [a[i], a[m]] = [a[m] as Open, a[i] as Open];
      i = m;
    }
  }
}

export function idealAdmitted(arrivals: readonly Arrival[], capacity: number, rate: Rate): number {
  const scale = tokenScale(capacity, rate);
  // Refilled tokens complete by `tUs`; exact for the integer units of token-scale.ts.
  const accrued = (tUs: number): number => {
    const units = tUs * scale.unitsPerUs;
    return Number.isSafeInteger(units)
      ? Math.floor(units / scale.unitsPerToken)
      : Number((BigInt(tUs) * BigInt(scale.unitsPerUs)) / BigInt(scale.unitsPerToken));
  };
  const ranges = arrivals
    .filter((a) => a.cost <= capacity)
    .map((a) => ({ lo: accrued(a.tUs), hi: capacity - 1 + accrued(a.tUs + a.waitMs * 1000), cost: a.cost }))
    .sort((x, y) => x.lo - y.lo);
  const open = new ByHi();
  let admitted = 0;
  let next = 0;
  for (let k = 0; next < ranges.length || open.size > 0; k += 1) {
    if (open.size === 0) k = Math.max(k, (ranges[next] as { lo: number }).lo);
    while (next < ranges.length && (ranges[next] as { lo: number }).lo <= k) {
      const r = ranges[next] as { hi: number; cost: number };
      open.push({ hi: r.hi, need: r.cost });
      next += 1;
    }
    while (open.size > 0 && (open.peek() as Open).hi < k) open.pop();
    const top = open.peek();
    if (top === undefined) continue;
    admitted += 1;
    top.need -= 1;
    if (top.need === 0) open.pop();
  }
  return admitted;
}
