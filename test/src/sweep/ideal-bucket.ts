/**
 * IdealBucket: one exact shared token bucket with reservations, the
 * yardstick of the sweep. A request that may wait (take) reserves the
 * tokens now and is admitted when they have accrued, if that is within its
 * wait; later requests queue behind the reservation. Exact integer units
 * (token-scale.ts), so its admissions are the most any limiter can admit
 * for the same arrivals while keeping the envelope.
 */
import { tokenScale, type Rate, type TokenScale } from '@tokenlease/shared';

export class IdealBucket {
  private readonly scale: TokenScale;
  /** May go negative: tokens reserved ahead of their accrual. */
  private levelUnits: number;
  private lastUs: number;

  constructor(capacityTokens: number, rate: Rate, startUs: number) {
    this.scale = tokenScale(capacityTokens, rate);
    this.levelUnits = this.scale.capacityUnits;
    this.lastUs = startUs;
  }

  /**
   * take — the instant (µs) `cost` tokens requested at `nowUs` are admitted,
   * waiting at most `waitUs`; null when they cannot be (nothing is spent).
   */
  take(cost: number, nowUs: number, waitUs: number): number | null {
    if (nowUs > this.lastUs) {
      const roomUnits = this.scale.capacityUnits - this.levelUnits;
      const fillUs = Math.ceil(roomUnits / this.scale.unitsPerUs);
      this.levelUnits += nowUs - this.lastUs >= fillUs ? roomUnits : (nowUs - this.lastUs) * this.scale.unitsPerUs;
      this.lastUs = nowUs;
    }
    const costUnits = cost * this.scale.unitsPerToken;
    if (cost > this.scale.capacityTokens) return null;
    if (this.levelUnits >= costUnits) {
      this.levelUnits -= costUnits;
      return nowUs;
    }
    const aheadUs = Math.ceil((costUnits - this.levelUnits) / this.scale.unitsPerUs);
    if (aheadUs > waitUs) return null;
    this.levelUnits -= costUnits;
    return nowUs + aheadUs;
  }
}
