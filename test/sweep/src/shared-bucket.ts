/**
 * SharedBucket: one exact token bucket (shared's ExactBucket) with the
 * Limiter's semantics on top, the decision point of the baselines (one
 * central bucket, or one per agent). `tryTake` requests are admitted when
 * the tokens are there; `take` requests that cannot be admitted at once
 * wait in FIFO order until the tokens have accrued or their wait runs out
 * (tries do not queue behind them, exactly as with a Limiter).
 */
import { ExactBucket, type Rate } from '@tokenlease/shared';

/** Admitted — called for each admission with its instant and how long it waited, µs. */
export type Admitted = (tUs: number, waitedUs: number) => void;

interface Waiting {
  readonly cost: number;
  readonly arrivedUs: number;
  readonly deadlineUs: number;
  readonly admitted: Admitted;
}

export class SharedBucket {
  private readonly bucket: ExactBucket;
  /** The latest instant the bucket was read at, µs. */
  private nowUs: number;
  private readonly queue: Waiting[] = [];

  constructor(capacityTokens: number, rate: Rate, startUs: number) {
    this.bucket = new ExactBucket(capacityTokens, rate, startUs);
    this.nowUs = startUs;
  }

  /**
   * offer — a request of `cost` (a positive integer) at `nowUs`
   * (non-decreasing across calls) that may wait `waitUs` (0: a try);
   * `admitted` is called if and when it is. A cost above the capacity is
   * never admitted.
   */
  offer(cost: number, nowUs: number, waitUs: number, admitted: Admitted): void {
    this.serveUntil(nowUs);
    this.nowUs = Math.max(this.nowUs, nowUs);
    if (cost > this.bucket.scale.capacityTokens) return;
    if ((waitUs === 0 || this.queue.length === 0) && this.bucket.take(cost, nowUs).ok) {
      admitted(nowUs, 0);
    } else if (waitUs > 0) {
      this.queue.push({ cost, arrivedUs: nowUs, deadlineUs: nowUs + waitUs, admitted });
    }
  }

  /** finish — serves or times out every request still waiting. */
  finish(): void {
    this.serveUntil(Infinity);
  }

  private serveUntil(untilUs: number): void {
    for (let head = this.queue[0]; head !== undefined; head = this.queue[0]) {
      // Only costs that fit are queued, so the wait is a number.
      const readyUs = this.nowUs + (this.bucket.retryAfterUs(head.cost, this.nowUs) ?? Infinity);
      if (readyUs > head.deadlineUs) {
        if (head.deadlineUs > untilUs) return;
        this.queue.shift();
        continue;
      }
      if (readyUs > untilUs) return;
      this.nowUs = readyUs;
      if (!this.bucket.take(head.cost, readyUs).ok)
        throw new Error(`SharedBucket: ${head.cost} tokens announced at ${readyUs} µs were not there`);
      this.queue.shift();
      head.admitted(readyUs, readyUs - head.arrivedUs);
    }
  }
}
