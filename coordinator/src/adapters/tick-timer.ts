/**
 * TickTimer: calls `onTick` when the core's next deadline comes, and at
 * least every TICK_MS_MAX, so refill and expiry are never far behind.
 * Nothing `onTick` throws leaves the timer: it goes to `onError`, and the
 * next tick comes TICK_MS_MAX later.
 */
/** Longest sleep between ticks, ms. */
export const TICK_MS_MAX = 250;

export class TickTimer {
  private timer: NodeJS.Timeout | null = null;
  private timerAtUs = Infinity;
  private stopped = false;

  constructor(
    private readonly nowUs: () => number,
    private readonly onTick: () => number,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** schedule — (re)arms the timer for `deadlineUs` (core µs), unless it already fires sooner. */
  schedule(deadlineUs: number): void {
    if (this.stopped) return;
    const now = this.nowUs();
    const atUs = now + Math.min(TICK_MS_MAX, Math.max(1, Math.ceil((deadlineUs - now) / 1000))) * 1000;
    if (this.timer !== null && this.timerAtUs <= atUs) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAtUs = atUs;
    this.timer = setTimeout(() => this.fire(), (atUs - now) / 1000);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private fire(): void {
    this.timer = null;
    let deadlineUs: number;
    try {
      deadlineUs = this.onTick();
    } catch (error) {
      deadlineUs = Infinity;
      try {
        this.onError(error);
      } catch {
        // A failing logger must not stop the ticks either.
      }
    }
    this.schedule(deadlineUs);
  }
}
