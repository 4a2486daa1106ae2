/**
 * SlotHolds: the requests holding a slot of a concurrency pool on this
 * agent, one per (agent, pool), beside the LeaseSlot whose balance counts
 * the free slots (docs/design.md, "Concurrency pools").
 *
 * Rules:
 * - A hold is taken at an instant and ends at its `release`, or at its
 *   hold bound (`holdUs` after it was taken) whatever the work does: from
 *   then on it no longer counts as in flight, and its slot is free again.
 * - A hold taken from the current lease gives its slot back to that lease
 *   when it ends; one taken from an earlier lease (since expired, returned
 *   or replaced) gives nothing back: that lease's slots are the
 *   coordinator's again, once no request started under it can still run.
 *   A lease that lapsed here and that the coordinator renewed all the same
 *   (`resumeLease`) is the current one again, with its holds.
 *   A hold admitted by shadow mode spent no slot and gives none back.
 * - `lease + busy` stays what the coordinator was last told plus what it
 *   granted since: taking, releasing and timing out move a slot between
 *   the two, never add one.
 * - Holds are kept in the order they were taken, which is the order of
 *   their bounds (one clock, one bound), in a doubly linked list over
 *   typed arrays: taking, releasing and ending at the bound are O(1) and
 *   allocate nothing once the arrays are large enough (they double, up to
 *   HOLDS_MAX entries).
 * - A handle is `(stamp + 1) × 2^20 + index`: the index names the entry, the
 *   stamp (counted per entry, modulo 2^32) tells a stale or repeated
 *   release from the current one, which then changes nothing. Handles are
 *   at least 2^20: 0 is never one.
 */

/** HOLDS_MAX — the most holds one limiter keeps at once (a take beyond is refused as exhausted). */
export const HOLDS_MAX = 2 ** 20;
const INDEX_SPAN = 2 ** 20;
const STAMP_SPAN = 2 ** 32;
const NONE = -1;
/** The lease tag of a hold that gives no slot back (shadow mode, or an entry not in use). */
const UNCOUNTED = -1;

/**
 * SlotHolds — the holds of one limiter's concurrency pool
 * (`limiter.slot.holds`): taken by `acquire`, ended by `release` or at the
 * hold bound; `busy` of them are the current lease's.
 */
export class SlotHolds {
  /** How long a hold counts at most, µs on the agent's clock (the grant's bound less the drift margin). */
  holdUs = 0;
  /** Holds of the current lease not yet ended: slots the coordinator's bound covers beside the balance. */
  private busyNow = 0;
  private inUse = 0;
  /** Holds that spent a slot of some lease (the current one or an earlier one) and are not over: what may still be busy. */
  private countedNow = 0;
  /** The current lease's tag; holds tagged otherwise give nothing back. */
  private lease = 0;
  private startUs = new Float64Array(16);
  private stamp = new Float64Array(16);
  private leaseOf = new Float64Array(16).fill(UNCOUNTED);
  private prev = new Int32Array(16).fill(NONE);
  private next = new Int32Array(16).fill(NONE);
  private free = new Int32Array(16);
  private freeCount = 16;
  private head = NONE;
  private tail = NONE;

  constructor() {
    for (let i = 0; i < 16; i += 1) this.free[i] = 15 - i;
  }

  /** busy — holds of the current lease still counted: what an acquire tells the coordinator beside the free balance. */
  get busy(): number {
    return this.busyNow;
  }

  /**
   * counted — holds that took a slot from a lease, this one or an earlier
   * one, and are not over. What an acquire tells beside the free balance:
   * a lease the coordinator renewed after this agent let it lapse keeps its
   * earlier requests' slots, and must not take them for free while they run.
   */
  get counted(): number {
    return this.countedNow;
  }

  /** inFlight — every hold still counted, of any lease or none (what this agent has running within its bounds). */
  get inFlight(): number {
    return this.inUse;
  }

  /** newLease — the lease in hand ended or was replaced: no hold taken so far gives a slot back from now on. */
  newLease(): void {
    this.lease += 1;
    this.busyNow = 0;
  }

  /** leaseTag — the current lease's tag, for `resumeLease`. */
  get leaseTag(): number {
    return this.lease;
  }

  /**
   * resumeLease — the lease of `tag`, ended here, goes on after all (the
   * coordinator renewed it: a renewal that named it landed after it lapsed
   * on this clock): its holds not yet over are its busy slots again, and
   * give their slots back to it. Walks the holds once: a rare event.
   */
  resumeLease(tag: number): void {
    this.lease = tag;
    let busy = 0;
    for (let i = this.head; i !== NONE; i = this.next[i] as number) if (this.leaseOf[i] === tag) busy += 1;
    this.busyNow = busy;
  }

  /**
   * take — a hold from `nowUs`; `counted`: it spent a slot of the current
   * lease (false: shadow mode admitted it). Returns its handle, or 0 when
   * HOLDS_MAX holds are kept already.
   */
  take(nowUs: number, counted: boolean): number {
    if (this.freeCount === 0 && !this.grow()) return 0;
    this.freeCount -= 1;
    const i = this.free[this.freeCount] as number;
    const stamp = ((this.stamp[i] as number) + 1) % STAMP_SPAN;
    this.stamp[i] = stamp;
    this.startUs[i] = nowUs;
    this.leaseOf[i] = counted ? this.lease : UNCOUNTED;
    this.prev[i] = this.tail;
    this.next[i] = NONE;
    if (this.tail === NONE) this.head = i;
    else this.next[this.tail] = i;
    this.tail = i;
    this.inUse += 1;
    if (counted) {
      this.busyNow += 1;
      this.countedNow += 1;
    }
    return (stamp + 1) * INDEX_SPAN + i;
  }

  /**
   * release — ends the hold of `handle`: 1 when its slot goes back to the
   * current lease, 0 when it ended but gives nothing back, -1 when it had
   * ended already (released, past its bound, or no such handle).
   */
  release(handle: number): number {
    if (!Number.isSafeInteger(handle) || handle < INDEX_SPAN) return -1;
    const i = handle % INDEX_SPAN;
    const stamp = (handle - i) / INDEX_SPAN - 1;
    if (i >= this.stamp.length || this.stamp[i] !== stamp || !this.held(i)) return -1;
    return this.end(i);
  }

  /** expire — ends every hold past its bound at `nowUs`; returns how many slots went back to the current lease. */
  expire(nowUs: number): number {
    let back = 0;
    while (this.head !== NONE && (this.startUs[this.head] as number) + this.holdUs <= nowUs) back += this.end(this.head);
    return back;
  }

  /** nextBoundUs — when the oldest hold reaches its bound, µs (Infinity: none held). */
  nextBoundUs(): number {
    return this.head === NONE ? Infinity : (this.startUs[this.head] as number) + this.holdUs;
  }

  /** held — whether entry `i` is in the list. */
  private held(i: number): boolean {
    return this.head === i || this.prev[i] !== NONE;
  }

  private end(i: number): number {
    const p = this.prev[i] as number;
    const n = this.next[i] as number;
    if (p === NONE) this.head = n;
    else this.next[p] = n;
    if (n === NONE) this.tail = p;
    else this.prev[n] = p;
    this.prev[i] = NONE;
    this.next[i] = NONE;
    this.free[this.freeCount] = i;
    this.freeCount += 1;
    this.inUse -= 1;
    if (this.leaseOf[i] !== UNCOUNTED) this.countedNow -= 1;
    const back = this.leaseOf[i] === this.lease ? 1 : 0;
    this.leaseOf[i] = UNCOUNTED;
    this.busyNow -= back;
    return back;
  }

  /** grow — doubles the arrays (false at HOLDS_MAX). */
  private grow(): boolean {
    const size = this.startUs.length;
    if (size >= HOLDS_MAX) return false;
    const bigger = Math.min(HOLDS_MAX, size * 2);
    const widen = <T extends Float64Array | Int32Array>(old: T, make: (n: number) => T, fill?: number): T => {
      const a = make(bigger);
      if (fill !== undefined) a.fill(fill);
      a.set(old);
      return a;
    };
    this.startUs = widen(this.startUs, (n) => new Float64Array(n));
    this.stamp = widen(this.stamp, (n) => new Float64Array(n));
    this.leaseOf = widen(this.leaseOf, (n) => new Float64Array(n), UNCOUNTED);
    this.prev = widen(this.prev, (n) => new Int32Array(n), NONE);
    this.next = widen(this.next, (n) => new Int32Array(n), NONE);
    const free = new Int32Array(bigger);
    free.set(this.free.subarray(0, this.freeCount));
    for (let i = bigger - 1; i >= size; i -= 1) {
      free[this.freeCount] = i;
      this.freeCount += 1;
    }
    this.free = free;
    return true;
  }
}
