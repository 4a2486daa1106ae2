/**
 * Credit: a pool's level and the ceiling on level + Σ lease bounds.
 *
 * Rules (the credit argument of docs/design.md):
 * - The level is kept in exact units (token-scale.ts) and never exceeds B;
 *   level + Σ bounds never exceeds B + A (A: the pool's allowance).
 * - Refill adds at most r·Δt, clipped to that room. With rate leases the
 *   level refills only at what their rates leave of the refill (rate-lease.ts).
 * - Taking tokens out of the level needs them there; giving tokens back
 *   never lifts the level above B (with an allowance some are then lost).
 * - `check` asserts the rules after every change; a pool taken over with
 *   leases kept from a larger configuration may exceed B + A until they
 *   shrink, and the excess never comes back.
 */
import { invariantBroken, refillUnits, waitUs, wholeTokens, type TokenScale } from '@tokenlease/shared';
import { LevelRefill } from './rate-lease.js';

export class Credit {
  levelUnits = 0;
  /** The instant the level was last refilled to, µs. */
  lastRefillUs: number;
  /** (B + A) in units. */
  readonly ceilingUnits: number;
  /** What `check` allows: above (B + A) only while kept leases of a larger configuration remain. */
  private checkCeilingUnits: number;
  private readonly levelRefill: LevelRefill;

  constructor(
    readonly scale: TokenScale,
    private readonly pool: string,
    allowanceTokens: number,
    refillFromUs: number,
  ) {
    this.ceilingUnits = (scale.capacityTokens + allowanceTokens) * scale.unitsPerToken;
    this.checkCeilingUnits = this.ceilingUnits;
    this.lastRefillUs = refillFromUs;
    this.levelRefill = new LevelRefill(scale);
  }

  /**
   * leaseEndUs — the latest instant a lease granted from this credit may
   * end, µs: Infinity (the pool's TTL alone decides) except for a relay's
   * credit, whose tokens last only as long as its lease from the root.
   */
  get leaseEndUs(): number {
    return Infinity;
  }

  /** levelTokens — whole tokens in the level. */
  get levelTokens(): number {
    return wholeTokens(this.scale, this.levelUnits);
  }

  /** has — whether the level holds `tokens` whole tokens. */
  has(tokens: number): boolean {
    return this.levelUnits >= tokens * this.scale.unitsPerToken;
  }

  /** take — moves `tokens` out of the level (into a lease); the caller made sure they are there. */
  take(tokens: number): void {
    this.levelUnits -= tokens * this.scale.unitsPerToken;
  }

  /**
   * give — moves `tokens` of a lease that just ended back into the level,
   * which keeps at most B, and at most what B + A leaves beside the
   * `leasedTokens` still counted: after a takeover or a reconfiguration
   * that left credit above B + A, a return drops the excess instead of
   * handing it to other leases (otherwise it never matters: the lease's
   * bound, now gone, made room for at least what it returns).
   */
  give(tokens: number, leasedTokens: number): void {
    const roomUnits = this.ceilingUnits - leasedTokens * this.scale.unitsPerToken;
    const wantUnits = Math.min(this.scale.capacityUnits, this.levelUnits + tokens * this.scale.unitsPerToken, roomUnits);
    this.levelUnits = Math.max(this.levelUnits, wantUnits);
  }

  /** restore — a taken-over level: `levelTokens` clipped so credit fits B + A beside `leasedTokens` (none: full). */
  restore(levelTokens: number | null, leasedTokens: number): void {
    const leasedUnits = leasedTokens * this.scale.unitsPerToken;
    this.checkCeilingUnits = Math.max(this.ceilingUnits, leasedUnits);
    const wantUnits = levelTokens === null ? this.scale.capacityUnits : levelTokens * this.scale.unitsPerToken;
    this.levelUnits = Math.max(0, Math.min(wantUnits, this.scale.capacityUnits, this.ceilingUnits - leasedUnits));
  }

  /**
   * refill — brings the level up to `nowUs` beside `leasedTokens` of bounds;
   * rate leases hold `ratePerPeriod` of the refill's `totalPerPeriod` tokens.
   */
  refill(nowUs: number, leasedTokens: number, ratePerPeriod: number, totalPerPeriod: number, rateMode: boolean): void {
    if (nowUs <= this.lastRefillUs) return;
    const elapsedUs = nowUs - this.lastRefillUs;
    const roomUnits = this.roomUnits(leasedTokens);
    this.levelUnits += rateMode
      ? this.levelRefill.units(elapsedUs, totalPerPeriod - ratePerPeriod, totalPerPeriod, roomUnits)
      : refillUnits(this.scale, elapsedUs, roomUnits);
    this.lastRefillUs = nowUs;
  }

  /** roomUnits — how much the level may still take: up to B itself, and credit up to B + A. */
  roomUnits(leasedTokens: number): number {
    return Math.min(
      this.scale.capacityUnits - this.levelUnits,
      this.ceilingUnits - this.levelUnits - leasedTokens * this.scale.unitsPerToken,
    );
  }

  /** fullAtUs — when the level, left alone at the full rate, reaches B. */
  fullAtUs(): number {
    return this.lastRefillUs + waitUs(this.scale, this.scale.capacityUnits - this.levelUnits);
  }

  /** accruesAtUs — when the level holds `tokens` at the full rate, or Infinity when the room beside `leasedTokens` is too small. */
  accruesAtUs(tokens: number, leasedTokens: number): number {
    const needUnits = tokens * this.scale.unitsPerToken - this.levelUnits;
    return needUnits <= this.roomUnits(leasedTokens) ? this.lastRefillUs + waitUs(this.scale, needUnits) : Infinity;
  }

  /** settle — ends a step at `nowUs` with `leasedTokens` of bounds: `check`s (a window pool also cools what the step dropped). */
  settle(_nowUs: number, leasedTokens: number): void {
    this.check(leasedTokens);
  }

  /** waitUs — how long from `nowUs` until the level holds `tokens` at the full rate, counting a quiet period still to run. */
  waitUs(tokens: number, nowUs: number): number {
    return Math.max(0, this.lastRefillUs - nowUs) + waitUs(this.scale, tokens * this.scale.unitsPerToken - this.levelUnits);
  }

  /** check — asserts level ≥ 0, level ≤ B and level + leased ≤ B + A. */
  check(leasedTokens: number): void {
    const creditUnits = this.levelUnits + leasedTokens * this.scale.unitsPerToken;
    if (this.levelUnits < 0) invariantBroken(`pool ${this.pool}: negative level ${this.levelUnits}`);
    if (this.checkCeilingUnits > this.ceilingUnits)
      this.checkCeilingUnits = Math.min(this.checkCeilingUnits, Math.max(this.ceilingUnits, creditUnits));
    if (!(this.levelUnits <= this.scale.capacityUnits))
      invariantBroken(`pool ${this.pool}: level ${this.levelUnits} over capacity ${this.scale.capacityUnits}`);
    if (!(creditUnits <= this.checkCeilingUnits))
      invariantBroken(`pool ${this.pool}: credit ${creditUnits} over capacity + allowance ${this.ceilingUnits}`);
  }
}
