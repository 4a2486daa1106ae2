/**
 * GrantBudget: how many tokens a keeper's grants may add up to over time,
 * by the pool limits the agent was configured to expect (ExpectedLimits,
 * @tokenlease/shared). The grant check weighs each grant alone; a
 * responder that states modest limits can still grant 20 tokens a
 * millisecond. The budget mirrors the pool's bucket from the agent's side,
 * so that what the agent may spend stays within `B + A + r·T`.
 *
 * Rules:
 * - A bucket of C = B + A tokens refilled at r, full at the start, in the
 *   exact units of token-scale.ts.
 * - A grant of `g` tokens arriving at `nowUs`, for a request first sent at
 *   `sentUs` that reported `heldTokens` of the same lease unspent, fits when
 *   g ≤ C − held + r·rtt (rtt = now − sent, at most `rttMaxUs`) and
 *   g ≤ the level grown by the refill since the last event. It is then
 *   taken from the level; otherwise nothing changes.
 * - Why those terms: an honest coordinator decided the grant at some instant
 *   between the send and the arrival, when the pool's level plus this
 *   lease's bound (`held`, as the request reported it) was at most C; and
 *   over any run of grants from the first's send to the last's arrival it
 *   granted at most C plus the refill. So no honest grant is refused,
 *   while what the agent holds and may still be granted stays within
 *   C + r·rtt, and every window of T admits at most C + r·(T + rtt).
 * - Tokens the agent gives back unspent (a return, a lease that expired or
 *   was replaced while it held tokens) go back to the level at once.
 * - Between grants the level grows without the cap (the cap is applied at
 *   the next grant), up to C plus the refill of `rttMaxUs`.
 */
import { makeRate, refillUnits, tokenScale, UNITS_MAX, type ExpectedLimits, type TokenScale } from '@tokenlease/shared';

export class GrantBudget {
  private readonly scale: TokenScale;
  private readonly levelUnitsMax: number;
  private levelUnits: number;
  private lastUs = 0;

  /**
   * GrantBudget — a full budget for `expected` (validated), from `nowUs`;
   * `rttMaxUs` bounds the round-trip a grant's own refill is counted over.
   * Throws TokenleaseError('out-of-range') when B + A does not fit the rate's units.
   */
  constructor(
    expected: ExpectedLimits,
    private readonly rttMaxUs: number,
    nowUs: number,
  ) {
    this.scale = tokenScale(
      expected.capacityTokens + (expected.allowanceTokens ?? 0),
      makeRate(expected.refillTokens, expected.refillPeriodMs),
    );
    this.levelUnits = this.scale.capacityUnits;
    this.levelUnitsMax = Math.min(UNITS_MAX, this.scale.capacityUnits + refillUnits(this.scale, rttMaxUs, UNITS_MAX));
    this.lastUs = nowUs;
  }

  /**
   * charge — takes `grantedTokens` from the budget when they fit (see the
   * rules) and returns null; else returns why, changing nothing.
   * `creditTokens`: what the grant's lease replaces, unspent, given back first.
   */
  charge(grantedTokens: number, heldTokens: number, creditTokens: number, sentUs: number, nowUs: number): string | null {
    const { scale } = this;
    const rttUs = Math.min(this.rttMaxUs, Math.max(0, nowUs - sentUs));
    const capUnits = Math.max(0, scale.capacityUnits - heldTokens * scale.unitsPerToken) + refillUnits(scale, rttUs, UNITS_MAX);
    const grownUnits = Math.min(this.levelUnitsMax, this.grownUnits(nowUs) + creditTokens * scale.unitsPerToken);
    const availableUnits = Math.min(capUnits, grownUnits);
    const costUnits = grantedTokens * scale.unitsPerToken;
    if (costUnits > availableUnits) {
      const availableTokens = Math.floor(availableUnits / scale.unitsPerToken);
      return `grants ${grantedTokens} tokens where the expected pool could give ${availableTokens} by now`;
    }
    this.levelUnits = availableUnits - costUnits;
    this.lastUs = Math.max(this.lastUs, nowUs);
    return null;
  }

  /** credit — `tokens` given back unspent at `nowUs` (a return, an expiry) return to the budget. */
  credit(tokens: number, nowUs: number): void {
    if (tokens <= 0) return;
    this.levelUnits = Math.min(this.levelUnitsMax, this.grownUnits(nowUs) + tokens * this.scale.unitsPerToken);
    this.lastUs = Math.max(this.lastUs, nowUs);
  }

  /** grownUnits — the level with the refill since the last event, up to its most; a clock reading before it adds nothing. */
  private grownUnits(nowUs: number): number {
    return this.levelUnits + refillUnits(this.scale, nowUs - this.lastUs, this.levelUnitsMax - this.levelUnits);
  }
}
