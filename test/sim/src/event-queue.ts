/**
 * EventQueue: a binary min-heap of events ordered by (time, insertion
 * order), so events at one instant run in the order they were scheduled and
 * a run is the same on every replay.
 */
export class EventQueue<E> {
  private readonly times: number[] = [];
  private readonly orders: number[] = [];
  private readonly events: E[] = [];
  private inserted = 0;

  get size(): number {
    return this.events.length;
  }

  /** push — schedules `event` at `timeUs`. */
  push(timeUs: number, event: E): void {
    let i = this.events.length;
    this.times.push(timeUs);
    this.orders.push(this.inserted);
    this.events.push(event);
    this.inserted += 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** peekTimeUs — the time of the next event, or Infinity when empty. */
  peekTimeUs(): number {
    return this.events.length === 0 ? Infinity : (this.times[0] as number);
  }

  /** pop — removes and returns the next event with its time; undefined when empty. */
  pop(): { timeUs: number; event: E } | undefined {
    const n = this.events.length;
    if (n === 0) return undefined;
    const top = { timeUs: this.times[0] as number, event: this.events[0] as E };
    this.swap(0, n - 1);
    this.times.pop();
    this.orders.pop();
    this.events.pop();
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < n - 1 && this.less(left, smallest)) smallest = left;
      if (right < n - 1 && this.less(right, smallest)) smallest = right;
      if (smallest === i) break;
      this.swap(i, smallest);
      i = smallest;
    }
    return top;
  }

  private less(a: number, b: number): boolean {
    const ta = this.times[a] as number;
    const tb = this.times[b] as number;
    return ta < tb || (ta === tb && (this.orders[a] as number) < (this.orders[b] as number));
  }

  private swap(a: number, b: number): void {
    [this.times[a], this.times[b]] = [this.times[b] as number, this.times[a] as number];
    [this.orders[a], this.orders[b]] = [this.orders[b] as number, this.orders[a] as number];
    [this.events[a], this.events[b]] = [this.events[b] as E, this.events[a] as E];
  }
}
