/**
 * BeatPlan — when a durable coordinator's heartbeat runs, on the clock it
 * is given: at once when started, then every `intervalMs` (ticks on a fixed
 * cadence from the start; a tick that comes while a heartbeat runs is
 * skipped, so a heartbeat slower than the interval is not stacked up
 * behind), never two at once, and while the store does not answer, again
 * `retryMs` after each failure, so that ownership is renewed as soon as the
 * store is back and an outage shorter than the ownership TTL never costs it.
 *
 * Pure: the driver asks `dueUs`, says when a heartbeat `begin`s and `end`s.
 */

/** HEARTBEAT_RETRY_MS — how soon a failed heartbeat is tried again, ms (at most the heartbeat interval). */
export const HEARTBEAT_RETRY_MS = 250;

export class BeatPlan {
  readonly retryMs: number;
  /** Retries that fit in one interval: one failure in this many is worth a log line. */
  private readonly retriesPerInterval: number;
  private busy = false;
  private stopped = false;
  /** The instant the cadence counts from; null before `start`. */
  private anchorUs: number | null = null;
  /** The next interval tick, µs. */
  private tickUs = Infinity;
  /** A heartbeat asked for (start, a reconfiguration, a retry), µs; Infinity: none. */
  private askedUs = Infinity;

  constructor(readonly intervalMs: number) {
    if (!Number.isSafeInteger(intervalMs) || intervalMs < 1)
      throw new RangeError(`a heartbeat interval must be a positive integer of ms, not ${intervalMs}`);
    this.retryMs = Math.min(intervalMs, HEARTBEAT_RETRY_MS);
    this.retriesPerInterval = Math.max(1, Math.round(intervalMs / this.retryMs));
  }

  /** running — whether a heartbeat is under way. */
  get running(): boolean {
    return this.busy;
  }

  /** start — a heartbeat due now, then one every interval from `nowUs`. */
  start(nowUs: number): void {
    if (this.anchorUs !== null || this.stopped) return;
    this.anchorUs = nowUs;
    this.tickUs = nowUs + this.intervalMs * 1000;
    this.askedUs = nowUs;
  }

  /** request — a heartbeat due now; nothing while one runs (it counts). */
  request(nowUs: number): void {
    if (this.anchorUs !== null && !this.busy) this.askedUs = Math.min(this.askedUs, nowUs);
  }

  /** dueUs — when the next heartbeat is due, µs; Infinity while one runs, before `start` and after `stop`. */
  dueUs(): number {
    return this.busy || this.stopped ? Infinity : Math.min(this.askedUs, this.tickUs);
  }

  /** begin — whether a heartbeat starts at `nowUs` (it is due, and none runs). */
  begin(nowUs: number): boolean {
    if (nowUs < this.dueUs()) return false;
    this.busy = true;
    this.askedUs = Infinity;
    this.skipTicks(nowUs);
    return true;
  }

  /** end — the heartbeat ended at `nowUs`, the store `answered` or not (then it is tried again `retryMs` later). */
  end(answered: boolean, nowUs: number): void {
    this.busy = false;
    this.skipTicks(nowUs);
    if (!answered) this.askedUs = Math.min(this.askedUs, nowUs + this.retryMs * 1000);
  }

  /** reportsFailure — whether the `streak`-th failed heartbeat in a row is worth a log line: the first, then one per interval. */
  reportsFailure(streak: number): boolean {
    return (streak - 1) % this.retriesPerInterval === 0;
  }

  /** stop — no heartbeat is due any more. */
  stop(): void {
    this.stopped = true;
  }

  /** skipTicks — the interval ticks up to `nowUs` are spent (taken, or skipped while a heartbeat ran). */
  private skipTicks(nowUs: number): void {
    if (this.anchorUs === null) return;
    const intervalUs = this.intervalMs * 1000;
    const passed = Math.floor((nowUs - this.anchorUs) / intervalUs);
    this.tickUs = Math.max(this.tickUs, this.anchorUs + (passed + 1) * intervalUs);
  }
}
