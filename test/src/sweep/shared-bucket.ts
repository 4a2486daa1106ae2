/**
 * SharedBucket: one exact token bucket with the Limiter's semantics, the
 * decision point of the baselines (one central bucket, or one per agent).
 * `tryTake` requests are admitted when
 * the tokens are there; `take` requests that cannot be admitted at once
 * wait in FIFO order until the tokens have accrued or their wait runs out
 * (tries do not queue behind them, exactly as with a Limiter). Exact
 * integer units (token-scale.ts).
 */
import { refillUnits, tokenScale, type Rate, type TokenScale } from '@tokenlease/shared';

/** Admitted — called for each admission with its instant and how long it waited, µs. */
export type Admitted = (tUs: number, waitedUs: number) => void;

interface Waiting {
  readonly cost: number;
  readonly arrivedUs: number;
  readonly deadlineUs: number;
  readonly admitted: Admitted;
}

export class SharedBucket {
  private readonly scale: TokenScale;
  private levelUnits: number;
  private lastUs: number;
  private readonly queue: Waiting[] = [];

  constructor(capacityTokens: number, rate: Rate, startUs: number) {
    this.scale = tokenScale(capacityTokens, rate);
    this.levelUnits = this.scale.capacityUnits;
    this.lastUs = startUs;
  }

  /**
   * offer — a request of `cost` at `nowUs` (non-decreasing across calls)
   * that may wait `waitUs` (0: a try); `admitted` is called if and when it is.
   */
  offer(cost: number, nowUs: number, waitUs: number, admitted: Admitted): void {
    this.serveUntil(nowUs);
    this.refillTo(nowUs);
    if (cost > this.scale.capacityTokens) return;
    const costUnits = cost * this.scale.unitsPerToken;
    if ((waitUs === 0 || this.queue.length === 0) && this.levelUnits >= costUnits) {
      this.levelUnits -= costUnits;
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
      const needUnits = head.cost * this.scale.unitsPerToken - this.levelUnits;
      const readyUs = needUnits <= 0 ? this.lastUs : this.lastUs + Math.ceil(needUnits / this.scale.unitsPerUs);
      if (readyUs > head.deadlineUs) {
        if (head.deadlineUs > untilUs) return;
        this.queue.shift();
        continue;
      }
      if (readyUs > untilUs) return;
      this.refillTo(readyUs);
      this.levelUnits -= head.cost * this.scale.unitsPerToken;
      this.queue.shift();
      head.admitted(readyUs, readyUs - head.arrivedUs);
    }
  }

  private refillTo(nowUs: number): void {
    if (nowUs <= this.lastUs) return;
    this.levelUnits += refillUnits(this.scale, nowUs - this.lastUs, this.scale.capacityUnits - this.levelUnits);
    this.lastUs = nowUs;
  }
}
