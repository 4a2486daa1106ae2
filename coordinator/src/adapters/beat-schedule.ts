/**
 * BeatSchedule — when a durable coordinator's heartbeat runs: every
 * `intervalMs`, never two at once (a heartbeat slower than the interval, a
 * store timing out, is not stacked up behind), and while the store does not
 * answer, again every `retryMs`, so that ownership is renewed as soon as the
 * store is back and an outage shorter than the ownership TTL never costs it.
 */

/** HEARTBEAT_RETRY_MS — how soon a failed heartbeat is tried again, ms (at most the heartbeat interval). */
export const HEARTBEAT_RETRY_MS = 250;

export class BeatSchedule {
  /** The running or last heartbeat; `stop` waits for it. */
  private current: Promise<void> = Promise.resolve();
  private busy = false;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  private interval: NodeJS.Timeout | null = null;
  readonly retryMs: number;
  /** Retries that fit in one interval: one failure in this many is worth a log line. */
  private readonly retriesPerInterval: number;

  /**
   * @param beat one heartbeat; true when the store answered.
   * @param onError what `beat` threw (it should not: a failure is `false`).
   */
  constructor(
    private readonly beat: () => Promise<boolean>,
    private readonly onError: (error: unknown) => void,
    readonly intervalMs: number,
  ) {
    this.retryMs = Math.min(intervalMs, HEARTBEAT_RETRY_MS);
    this.retriesPerInterval = Math.max(1, Math.round(intervalMs / this.retryMs));
  }

  /** start — a heartbeat now, and on schedule after it. */
  start(): void {
    if (this.interval !== null || this.stopped) return;
    this.interval = setInterval(() => this.run(), this.intervalMs);
    this.run();
  }

  /** reportsFailure — whether the `streak`-th failed heartbeat in a row is worth a log line: the first, then one per interval. */
  reportsFailure(streak: number): boolean {
    return (streak - 1) % this.retriesPerInterval === 0;
  }

  /** run — a heartbeat now, unless one is running. */
  run(): void {
    if (this.busy || this.stopped) return;
    this.busy = true;
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
    this.current = this.beat()
      .catch((error: unknown) => {
        this.onError(error);
        return false;
      })
      .then((answered) => {
        this.busy = false;
        if (!answered && !this.stopped) this.retry = setTimeout(() => this.run(), this.retryMs);
      });
  }

  /** stop — no heartbeat after this one; resolves when the running one is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.interval !== null) clearInterval(this.interval);
    if (this.retry !== null) clearTimeout(this.retry);
    await this.current;
  }
}
