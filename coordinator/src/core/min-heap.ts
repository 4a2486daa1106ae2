/**
 * MinHeap: a binary heap of values by a numeric key (an instant, µs).
 * push and pop are O(log n), peek O(1). Ties leave in no particular order.
 */
export interface HeapEntry<T> {
  readonly key: number;
  readonly value: T;
}

export class MinHeap<T> {
  private items: HeapEntry<T>[] = [];

  get size(): number {
    return this.items.length;
  }

  push(key: number, value: T): void {
    const items = this.items;
    items.push({ key, value });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent] as HeapEntry<T>;
      const c = items[i] as HeapEntry<T>;
      if (p.key <= c.key) break;
      items[parent] = c;
      items[i] = p;
      i = parent;
    }
  }

  peek(): HeapEntry<T> | undefined {
    return this.items[0];
  }

  pop(): HeapEntry<T> | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < items.length && (items[l] as HeapEntry<T>).key < (items[m] as HeapEntry<T>).key) m = l;
      if (r < items.length && (items[r] as HeapEntry<T>).key < (items[m] as HeapEntry<T>).key) m = r;
      if (m === i) break;
      const tmp = items[m] as HeapEntry<T>;
      items[m] = items[i] as HeapEntry<T>;
      items[i] = tmp;
      i = m;
    }
    return top;
  }

  clear(): void {
    this.items = [];
  }
}
