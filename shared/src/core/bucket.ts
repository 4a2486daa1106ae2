/**
 * ExactBucket: one strict token bucket in exact integer arithmetic.
 *
 * Rules:
 * - Starts full. Refill is lazy and exact (see token-scale.ts): each call
 *   first adds the refill since the last call, clipped at capacity.
 * - `take` either spends the whole cost or nothing. A refusal never spends.
 * - A cost above capacity can never fit: the refusal says `never-fits`
 *   instead of a retry time.
 * - A clock reading earlier than the last one is treated as no time passed
 *   (a monotonic clock never does this; a buggy one must not mint credit).
 *
 * It is the reference every test compares the fleet against, and the
 * bucket of the sweep's baselines (one central, or one per agent).
 */
import { TokenleaseError } from '../errors.js';
import type { Rate } from './rate.js';
import { assertTimeUs, refillUnits, tokenScale, waitUs, wholeTokens, type TokenScale } from './token-scale.js';

/** TakeResult — an ExactBucket take's answer: admitted, a cost above capacity (`never-fits`), or `insufficient` until `retryAfterUs` from now. */
export type TakeResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'never-fits' }
  | { readonly ok: false; readonly reason: 'insufficient'; readonly retryAfterUs: number };

const ADMITTED: TakeResult = Object.freeze({ ok: true });
const NEVER_FITS: TakeResult = Object.freeze({ ok: false, reason: 'never-fits' });

/**
 * ExactBucket — one strict token bucket in exact integer arithmetic: it
 * starts full, refills lazily and exactly up to its capacity, and a take
 * spends the whole cost or nothing. The reference the tests compare the
 * fleet against.
 */
export class ExactBucket {
  readonly scale: TokenScale;
  private levelUnits: number;
  private lastUs: number;

  /** ExactBucket — a full bucket of `capacityTokens` refilled at `rate`, its clock starting at `nowUs`. */
  constructor(capacityTokens: number, rate: Rate, nowUs: number) {
    assertTimeUs(nowUs);
    this.scale = tokenScale(capacityTokens, rate);
    this.levelUnits = this.scale.capacityUnits;
    this.lastUs = nowUs;
  }

  /** take — spends `cost` tokens at `nowUs` if they are all there; otherwise spends nothing. */
  take(cost: number, nowUs: number): TakeResult {
    this.assertCost(cost);
    this.advance(nowUs);
    if (cost > this.scale.capacityTokens) return NEVER_FITS;
    const costUnits = cost * this.scale.unitsPerToken;
    if (costUnits > this.levelUnits) {
      return { ok: false, reason: 'insufficient', retryAfterUs: waitUs(this.scale, costUnits - this.levelUnits) };
    }
    this.levelUnits -= costUnits;
    return ADMITTED;
  }

  /**
   * retryAfterUs — whole µs from `nowUs` until `cost` tokens are in the
   * bucket, rounded up (0 when they are there now); null when `cost` exceeds
   * the capacity (never fits). Spends nothing; throws for the arguments
   * `take` refuses.
   */
  retryAfterUs(cost: number, nowUs: number): number | null {
    this.assertCost(cost);
    this.advance(nowUs);
    if (cost > this.scale.capacityTokens) return null;
    return waitUs(this.scale, cost * this.scale.unitsPerToken - this.levelUnits);
  }

  /** availableTokens — whole tokens in the bucket at `nowUs`. */
  availableTokens(nowUs: number): number {
    this.advance(nowUs);
    return wholeTokens(this.scale, this.levelUnits);
  }

  private advance(nowUs: number): void {
    assertTimeUs(nowUs);
    if (nowUs <= this.lastUs) return;
    this.levelUnits += refillUnits(this.scale, nowUs - this.lastUs, this.scale.capacityUnits - this.levelUnits);
    this.lastUs = nowUs;
  }

  private assertCost(cost: number): void {
    if (!Number.isSafeInteger(cost) || cost < 1) {
      throw new TokenleaseError('invalid-argument', `cost must be a positive integer, got ${cost}`, { field: 'cost' });
    }
  }
}
