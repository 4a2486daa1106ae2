/**
 * RateRenewal: a rate lease's accrual and when it renews.
 *
 * Rules:
 * - A lease is a rate lease when its grant carries a rate; it fills by
 *   itself, so it renews once per `refreshMs` after its grant (so its share
 *   follows its demand) or before it expires, not whenever it runs low.
 * - It asks early when its demand more than doubled since the request the
 *   grant answers reported (plus `OUTGROWN_PER_SECOND_SLACK`), or it got no
 *   rate and has demand at all; never within `OUTGROWN_REFRESH_FRACTION_MIN`
 *   of a refresh of its grant. So a lease that reported itself idle asks
 *   again early when demand comes back.
 * - It stops accruing when a request leaves (the coordinator re-bases the
 *   lease on the balance reported then) and accrues again from the reply's
 *   arrival, never from the send: the coordinator's accrual starts at its
 *   grant, which is earlier.
 * - It accrues over the coordinator's period stretched by
 *   `rateDriftMargin`, so an agent clock up to that much fast never accrues
 *   more than the coordinator counts.
 * - A rate whose token·µs products could pass `RATE_TOKEN_US_MAX` would not
 *   be exact and is ignored: the lease then does not accrue, which only
 *   under-admits.
 */
import type { LeaseGrant } from '@tokenlease/shared';
import { DEMAND_PER_SECOND_MIN } from './demand-meter.js';
import type { KeeperOptions } from './keeper-options.js';
import type { LeaseSlot } from './lease-slot.js';
import { US_PER_MS } from './units.js';

/** A rate lease asks early at the soonest this fraction of `refreshMs` after its grant... */
const OUTGROWN_REFRESH_FRACTION_MIN = 1 / 4;
/** ...when its demand passed this multiple of the demand at the grant plus `OUTGROWN_PER_SECOND_SLACK`. */
const OUTGROWN_DEMAND_FACTOR = 2;
const OUTGROWN_PER_SECOND_SLACK = 1;
/** The largest token·µs product a rate's arithmetic keeps exact. */
const RATE_TOKEN_US_MAX = 2 ** 52;

export class RateRenewal {
  private rateLease = false;
  private lastGrantUs = 0;
  private demandPerSecondAtGrant = 0;

  constructor(
    private readonly slot: LeaseSlot,
    private readonly options: KeeperOptions,
  ) {}

  /** held — whether the lease last granted is a rate lease (and not returned since). */
  get held(): boolean {
    return this.rateLease;
  }

  /**
   * granted — `reply` arrived at `nowUs` to a request that reported demand `demandPerSecond`:
   * its rate (or none) accrues from now. `sameLease`: it renews the lease
   * held, so the fraction of a token accrued before is kept.
   */
  granted(reply: LeaseGrant, nowUs: number, sameLease: boolean, demandPerSecond: number): void {
    const rate = reply.rate;
    const periodUs = rate === undefined ? 0 : Math.ceil((rate.periodMs * US_PER_MS) / (1 - this.options.rateDriftMargin));
    const exact = rate !== undefined && Math.max(rate.capTokens, rate.tokensPerPeriod) * periodUs <= RATE_TOKEN_US_MAX;
    this.rateLease = rate !== undefined;
    if (rate === undefined || !exact) this.slot.startRate(0, 1, 0, nowUs);
    else this.slot.startRate(rate.tokensPerPeriod, periodUs, rate.capTokens, nowUs, sameLease);
    this.lastGrantUs = nowUs;
    this.demandPerSecondAtGrant = demandPerSecond;
  }

  /** sending — a request leaves at `nowUs`: the balance stops accruing until its reply. */
  sending(nowUs: number): void {
    this.slot.freezeRate(nowUs);
  }

  /** returning — the lease is given back at `nowUs`: no rate lease is held any more. */
  returning(nowUs: number): void {
    this.slot.freezeRate(nowUs);
    this.rateLease = false;
  }

  /** renewAtUs — when a rate lease renews: `refreshMs` after its grant, or `renewLeadUs` before it expires. */
  renewAtUs(renewLeadUs: number): number {
    return Math.min(this.lastGrantUs + this.options.refreshMs * US_PER_MS, this.slot.expiresAtUs - renewLeadUs);
  }

  /** outgrown — whether a rate lease should ask early at `nowUs` for demand `demandPerSecond` (see the rules). */
  outgrown(nowUs: number, demandPerSecond: number): boolean {
    if (nowUs < this.lastGrantUs + this.options.refreshMs * US_PER_MS * OUTGROWN_REFRESH_FRACTION_MIN) return false;
    const doubled = demandPerSecond > OUTGROWN_DEMAND_FACTOR * this.demandPerSecondAtGrant + OUTGROWN_PER_SECOND_SLACK;
    return doubled || (this.slot.rateTokens === 0 && demandPerSecond > DEMAND_PER_SECOND_MIN);
  }
}
