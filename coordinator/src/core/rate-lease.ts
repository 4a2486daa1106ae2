/**
 * Rate (trickle) leases: the arithmetic of a lease that is a small bucket
 * `(ρ, cap)` carved from its pool (docs/design.md, "Rate leases").
 *
 * Rules:
 * - A rate lease's bound (what counts against capacity) is its cap; the
 *   tokens it may hold grow from `heldTokens` at `accrualFromUs` by ρ
 *   tokens per pool period, never above the cap. The coordinator rounds
 *   that growth up and starts it at grant time; the agent rounds down,
 *   starts when the reply arrives and stretches the period by its drift
 *   margin, so the agent never holds more than the coordinator counts.
 * - Σρ over live leases stays within the pool's refill T per period P; the
 *   level refills at (T − Σρ) per P, exactly: the remainder of each
 *   integer division is carried to the next refill.
 * - So credit (level + Σ caps) never passes B + A and grows by at most
 *   r·Δt: the envelope holds with any rates, caps and renewal timing.
 * - The share of one pool period's refill kept back from rate leases
 *   (RESERVE_DIVISOR) keeps the level filling, so an agent new to a
 *   saturated pool gets tokens on its first request.
 * - Shares are weighted max-min fair over claims, not raw demands: a lease
 *   claims (CLAIM_DIVISOR − 1)/CLAIM_DIVISOR of its reported demand. Demand
 *   is random, so a bucket that accrues at its mean demand is full part of
 *   the time and what accrues then is lost; the claim's margin goes to the
 *   leases whose claims are not met, and the claimant's cap (and the
 *   level's top-ups) covers its peaks. What the claims leave when all are
 *   met is divided by weight among all live leases, so a demand estimate
 *   that lags (a burst, a start) does not leave the refill unassigned.
 *   Shares decide fairness only: the pool still clips every rate to what
 *   the other leases leave of the assignable refill.
 */
import type { TokenScale } from '@tokenlease/shared';
import type { PoolConfig } from './config.js';
import { waterFill, weightIn } from './water-fill.js';

/** RESERVE_DIVISOR — 1/128 of the refill is never assigned as a rate. */
export const RESERVE_DIVISOR = 128;

/** CLAIM_DIVISOR — a lease claims all but 1/CLAIM_DIVISOR of its reported demand in the fair division. */
export const CLAIM_DIVISOR = 20;

const MS_PER_S = 1000;

/** claimOf — what a reported demand of `demandPerSecond` claims of a refill period of `periodMs`, whole tokens (0 for no demand). */
export function claimOf(demandPerSecond: number, periodMs: number): number {
  if (!(demandPerSecond > 0)) return 0;
  return Math.ceil((demandPerSecond * periodMs * (CLAIM_DIVISOR - 1)) / (MS_PER_S * CLAIM_DIVISOR));
}

/** RateFields — the rate part of a lease record (ρ = 0: a chunk lease, or a rate lease frozen by a renewal). */
export interface RateFields {
  /** Tokens the lease could hold at `accrualFromUs`. */
  heldTokens: number;
  /** ρ: tokens per pool refill period. */
  ratePerPeriod: number;
  accrualFromUs: number;
  /** The cap: the lease's bound. */
  readonly boundTokens: number;
}

/**
 * heldAt — the most a rate lease may hold at `nowUs`: its held tokens plus
 * ρ·(now − accrualFrom) rounded up, at most its cap.
 */
export function heldAt(lease: RateFields, nowUs: number, periodUs: number): number {
  if (lease.ratePerPeriod === 0 || nowUs <= lease.accrualFromUs) return Math.min(lease.heldTokens, lease.boundTokens);
  const room = lease.boundTokens - lease.heldTokens;
  if (room <= 0) return lease.boundTokens;
  const elapsedUs = nowUs - lease.accrualFromUs;
  // Full once elapsed·ρ ≥ room·period; checked first so the product below stays exact.
  if (elapsedUs >= Math.ceil((room * periodUs) / lease.ratePerPeriod)) return lease.boundTokens;
  return Math.min(lease.boundTokens, lease.heldTokens + Math.ceil((elapsedUs * lease.ratePerPeriod) / periodUs));
}

/**
 * LevelRefill — refill of a pool's level at (T − Σρ) tokens per period,
 * in the pool's units, carrying the remainder so nothing is lost or made.
 */
export class LevelRefill {
  /** Remainder of the last division, in units·g (below g). */
  private carry = 0n;

  constructor(private readonly scale: TokenScale) {}

  /**
   * units — what `elapsedUs` adds with `freePerPeriod` tokens per period
   * unassigned, at most `roomUnits` (≤ 0: nothing, and the carry is dropped).
   */
  units(elapsedUs: number, freePerPeriod: number, totalPerPeriod: number, roomUnits: number): number {
    if (elapsedUs <= 0 || roomUnits <= 0 || freePerPeriod <= 0) {
      this.carry = 0n;
      return 0;
    }
    // units/µs at the full rate is unitsPerUs = T/g; at the free rate it is (T − Σρ)/g = unitsPerUs·free/T.
    const numerator = BigInt(elapsedUs) * BigInt(this.scale.unitsPerUs) * BigInt(freePerPeriod) + this.carry;
    const divisor = BigInt(totalPerPeriod);
    const whole = numerator / divisor;
    if (whole >= BigInt(roomUnits)) {
      this.carry = 0n;
      return roomUnits;
    }
    this.carry = numerator - whole * divisor;
    return Number(whole);
  }
}

/** RateGrantInput — what a rate grant is decided from. */
export interface RateGrantInput {
  /** Tokens the lease holds after the report. */
  readonly held: number;
  readonly tokensWanted: number;
  /** Tokens of the level this lease may take: its weight's part of it. */
  readonly levelTokens: number;
  /** Σρ of the other live leases. */
  readonly otherRates: number;
  /** share — the lease's fair share of `assignable` tokens per period. */
  share(assignable: number): number;
}

/** RateGrant — the decision: rate, cap (the lease's new bound), top-up from the level, and what it wanted but did not get. */
export interface RateGrant {
  readonly ratePerPeriod: number;
  readonly capTokens: number;
  readonly topUp: number;
  readonly missingTokens: number;
  /** The cap is below what the rate calls for (or what it holds after the top-up): B + A left no more room beside the others' bounds. */
  readonly capShort: boolean;
}

/**
 * decideRateGrant — the rate a lease gets (its fair share of the refill less
 * the reserve, within what the others leave), its cap (its rate's share of
 * B, at most maxLeaseTokens, at least what it holds, at most `capRoom(topUp)`:
 * what B + A leaves beside the level and the other bounds) and a top-up
 * from the level (to the cap; a lease without a rate gets what it wants up
 * to a lease). Pure: the pool commits it.
 */
export function decideRateGrant(config: PoolConfig, input: RateGrantInput, capRoom: (topUp: number) => number): RateGrant {
  const total = config.refill.tokens;
  const assignable = total - Math.ceil(total / RESERVE_DIVISOR);
  const rate = Math.max(0, Math.min(input.share(assignable), assignable - input.otherRates));
  const capTarget = rate === 0 ? 0 : Math.min(config.maxLeaseTokens, Math.max(1, Math.floor((config.capacity * rate) / total)));
  const fillTo = rate === 0 ? Math.min(config.maxLeaseTokens, input.held + input.tokensWanted) : capTarget;
  const topUp = Math.max(0, Math.min(input.levelTokens, fillTo - input.held, input.tokensWanted));
  const capWanted = Math.max(capTarget, input.held + topUp);
  const capTokens = Math.min(capWanted, capRoom(topUp));
  const missingTokens = rate === 0 ? Math.max(0, Math.min(input.tokensWanted, fillTo - input.held) - topUp) : 0;
  return { ratePerPeriod: rate, capTokens, topUp, missingTokens, capShort: capTokens < capWanted };
}

/**
 * fairShareOf — `lease`'s share of `assignable` tokens per period among
 * `leases`: its weighted max-min fair share of their claims (claimOf), plus
 * its weight's part of what the claims leave when all are met (whole
 * tokens; the shares never add up to more than `assignable`).
 */
export function fairShareOf(
  leases: readonly { readonly demandPerSecond: number; readonly weight: number }[],
  lease: object,
  assignable: number,
  periodMs: number,
): number {
  const index = leases.indexOf(lease as (typeof leases)[number]);
  const me = leases[index];
  if (me === undefined) return 0;
  const shares = waterFill(
    leases.map((l) => ({ demand: claimOf(l.demandPerSecond, periodMs), weight: l.weight })),
    assignable,
  );
  let given = 0;
  let weights = 0;
  leases.forEach((l, i) => {
    given += shares[i] ?? 0;
    weights += weightIn(l.weight);
  });
  const left = Math.max(0, assignable - given);
  return (shares[index] ?? 0) + Math.floor((left * weightIn(me.weight)) / weights);
}
