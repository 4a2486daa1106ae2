/**
 * Checks the simulator makes after every step.
 *
 * EnvelopeWatch: admissions arrive in time order; with prefix sums S and a
 * running minimum of (S_{i−1}·u − ρ·t_i), each new admission j is checked
 * against every window [t_i, t_j] in O(1), exactly (BigInt units).
 */
import type { Rate } from '@tokenlease/shared';

export class EnvelopeWatch {
  private readonly periodUs: bigint;
  private readonly rho: bigint;
  private readonly bound: bigint;
  private prefix = 0n;
  private minTerm: bigint | null = null;
  private minAtUs = 0;
  private lastUs = -1;
  /** Largest excess seen, in units of tokens·periodUs; ≤ 0 while the envelope holds. */
  private worst: bigint;
  worstWindow: { fromUs: number; toUs: number } | null = null;
  admittedTokens = 0;

  constructor(capacity: number, rate: Rate) {
    this.periodUs = BigInt(rate.periodMs) * 1000n;
    this.rho = BigInt(rate.tokens);
    this.bound = BigInt(capacity) * this.periodUs;
    this.worst = -this.bound;
  }

  /** admit — records an admission; returns its worst window's excess in tokens (> 0 is a violation). */
  admit(tUs: number, cost: number): number {
    if (tUs < this.lastUs) throw new Error(`admissions out of order: ${tUs} after ${this.lastUs}`);
    this.lastUs = tUs;
    const t = BigInt(tUs);
    const term = this.prefix * this.periodUs - this.rho * t;
    if (this.minTerm === null || term < this.minTerm) {
      this.minTerm = term;
      this.minAtUs = tUs;
    }
    this.prefix += BigInt(cost);
    this.admittedTokens += cost;
    const excess = this.prefix * this.periodUs - this.rho * t - this.minTerm - this.bound;
    if (excess > this.worst) {
      this.worst = excess;
      this.worstWindow = { fromUs: this.minAtUs, toUs: tUs };
    }
    return Number(excess) / Number(this.periodUs);
  }

  /** worstExcessTokens — the largest excess over B + r·T so far (negative: the closest approach). */
  get worstExcessTokens(): number {
    return Number(this.worst) / Number(this.periodUs);
  }
}
