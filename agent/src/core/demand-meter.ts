/**
 * DemandMeter: an exponentially weighted estimate of demand, tokens per
 * second, from growing counters sampled at arbitrary instants.
 *
 * The estimate only sizes requests (how much to ask for, when to ask); it
 * never decides an admission, so a float is fine here.
 */
import { US_PER_SECOND } from './units.js';

/**
 * DEMAND_PER_SECOND_MIN — an estimate above this, tokens per second, is
 * demand at all: after demand stops the estimate decays towards 0 but
 * never reaches it.
 */
export const DEMAND_PER_SECOND_MIN = 0.5;

export class DemandMeter {
  private lastUs: number | null = null;
  private lastCount = 0;
  private ratePerUs = 0;

  /** DemandMeter — `timeConstantUs` is how fast old demand is forgotten (default 1 s). */
  constructor(private readonly timeConstantUs = US_PER_SECOND) {}

  /** sample — folds in the counter's value `countTokens` at `nowUs`. */
  sample(countTokens: number, nowUs: number): void {
    if (this.lastUs === null) {
      this.lastUs = nowUs;
      this.lastCount = countTokens;
      return;
    }
    const elapsedUs = nowUs - this.lastUs;
    if (elapsedUs <= 0) return;
    const instant = (countTokens - this.lastCount) / elapsedUs;
    const weight = 1 - Math.exp(-elapsedUs / this.timeConstantUs);
    this.ratePerUs += (instant - this.ratePerUs) * weight;
    this.lastUs = nowUs;
    this.lastCount = countTokens;
  }

  /** perSecond — the current estimate, tokens per second (0 before two samples). */
  get perSecond(): number {
    return this.ratePerUs * US_PER_SECOND;
  }

  /** tokensOver — demand expected over `durationUs`, rounded up. */
  tokensOver(durationUs: number): number {
    return Math.ceil(this.ratePerUs * durationUs);
  }
}
