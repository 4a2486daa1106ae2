/**
 * MinHeap: a binary heap of values by a numeric key (an instant, µs).
 * push and pop are O(log n), the top O(1). Ties leave in no particular
 * order.
 *
 * The keys sit in a Float64Array of their own, beside the values: a sift
 * compares keys only, so with many entries it walks a few hundred KB of
 * numbers rather than an entry object and its value per level, and a push
 * allocates nothing until the arrays grow.
 */
export class MinHeap<T> {
  private keys = new Float64Array(16);
  private readonly values: T[] = [];

  get size(): number {
    return this.values.length;
  }

  /** topKey — the least key, or Infinity when empty. */
  get topKey(): number {
    return this.values.length === 0 ? Infinity : (this.keys[0] as number);
  }

  /** top — the value of the least key, or undefined when empty. */
  get top(): T | undefined {
    return this.values[0];
  }

  push(key: number, value: T): void {
    const n = this.values.length;
    if (n === this.keys.length) {
      const grown = new Float64Array(2 * n);
      grown.set(this.keys);
      this.keys = grown;
    }
    const { keys, values } = this;
    values.push(value);
    let i = n;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const parentKey = keys[parent] as number;
      if (parentKey <= key) break;
      keys[i] = parentKey;
      values[i] = values[parent] as T;
      i = parent;
    }
    keys[i] = key;
    values[i] = value;
  }

  /** pop — removes the top (nothing when empty). */
  pop(): void {
    const { keys, values } = this;
    const last = values.pop();
    const n = values.length;
    if (last === undefined || n === 0) return;
    const lastKey = keys[n] as number;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const m = r < n && (keys[r] as number) < (keys[l] as number) ? r : l;
      const childKey = keys[m] as number;
      if (childKey >= lastKey) break;
      keys[i] = childKey;
      values[i] = values[m] as T;
      i = m;
    }
    keys[i] = lastKey;
    values[i] = last;
  }

  clear(): void {
    this.keys = new Float64Array(16);
    this.values.length = 0;
  }
}
