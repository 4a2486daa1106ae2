/**
 * WindowCredit: the credit of a sliding-window pool, at most N tokens
 * admitted in any window of length W (docs/design.md, "Window pools").
 *
 * Rules:
 * - Credit is `level + Σ lease bounds + cooling`, never above N. A token
 *   leaves a lease's bound in one of two ways: returned unspent (back to
 *   the level at once), or dropped (a report or renewal that lowers the
 *   bound, the spent part of a return, an expiry). A dropped token may have
 *   been spent, at the latest when the coordinator learnt of the drop, so
 *   it cools: it goes back to the level no earlier than W after that.
 * - Drops are not traced one by one: after every step the pool `settle`s,
 *   and whatever credit falls short of N was dropped during that step and
 *   cools from then. So a drop the code forgets to name still cools, and a
 *   bound lowered by any path is never handed out again early.
 * - Cooling is a queue in release order. Release instants are rounded up
 *   to a grain of W/1024 (at least 1 ms), so the queue holds at most about
 *   1024 entries, whatever the traffic; a token waits at most one grain
 *   longer than it must.
 * - After a start the pool holds nothing: all N cool until the quiet period
 *   (one TTL, while leases of a previous incarnation may still be spent)
 *   plus W are over. A new owner taking the pool over from a durable store
 *   adopts the stored level and leases; whatever the store does not show
 *   in either (cooling, or released since its last write) cools for a full
 *   W from the takeover.
 * - Credit above N (after a reconfiguration to a smaller limit) is never
 *   handed out again: a release only fills the level up to what N leaves
 *   beside the bounds and the rest of the cooling.
 */
import { invariantBroken, type TokenScale } from '@tokenlease/shared';
import { Credit } from './credit.js';

const GRAINS_PER_WINDOW = 1024;
const GRAIN_US_MIN = 1000;

/** Cooling — tokens on their way back to the level, each batch with the instant it may go back. */
class Cooling {
  /** Release instants (µs), non-decreasing from `head` on. */
  private readonly atUs: number[] = [];
  /** Tokens cooled up to and including each entry, counted from the pool's start (prefix sums, for `releasedByUs`). */
  private readonly upTo: number[] = [];
  private head = 0;
  /** Tokens cooled since the start, and released or discarded since the start. */
  private cooledSum = 0;
  private releasedSum = 0;

  get tokens(): number {
    return this.cooledSum - this.releasedSum;
  }

  /** lastAtUs — when the last cooling token goes back (-Infinity when none cools). */
  get lastAtUs(): number {
    return this.tokens === 0 ? -Infinity : (this.atUs[this.atUs.length - 1] as number);
  }

  /**
   * add — `tokens` go back at `atUs`, or with the last batch when that one
   * goes back later (after a change to a shorter window): never earlier than
   * asked, and the queue stays in release order.
   */
  add(tokens: number, atUs: number): void {
    const last = this.atUs.length - 1;
    this.cooledSum += tokens;
    if (last >= this.head && (this.atUs[last] as number) >= atUs) {
      this.upTo[last] = this.cooledSum;
      return;
    }
    this.atUs.push(atUs);
    this.upTo.push(this.cooledSum);
  }

  /** takeDue — removes and returns the tokens that may go back by `nowUs`. */
  takeDue(nowUs: number): number {
    const before = this.releasedSum;
    while (this.head < this.atUs.length && (this.atUs[this.head] as number) <= nowUs) {
      this.releasedSum = this.upTo[this.head] as number;
      this.head += 1;
    }
    if (this.head > 64 && this.head * 2 > this.atUs.length) {
      this.atUs.splice(0, this.head);
      this.upTo.splice(0, this.head);
      this.head = 0;
    }
    return this.releasedSum - before;
  }

  /** pending — each batch still cooling: when it goes back, and how many tokens. */
  *pending(): Generator<readonly [atUs: number, tokens: number]> {
    let before = this.releasedSum;
    for (let i = this.head; i < this.atUs.length; i += 1) {
      yield [this.atUs[i] as number, (this.upTo[i] as number) - before];
      before = this.upTo[i] as number;
    }
  }

  /** dueBy — tokens that may go back by `nowUs` and have not yet (read only: `takeDue` moves them). */
  dueBy(nowUs: number): number {
    let due = 0;
    let before = this.releasedSum;
    for (let i = this.head; i < this.atUs.length && (this.atUs[i] as number) <= nowUs; i += 1) {
      due += (this.upTo[i] as number) - before;
      before = this.upTo[i] as number;
    }
    return due;
  }

  /** releasedByUs — when at least `tokens` more will have gone back (Infinity when fewer cool); binary search. */
  releasedByUs(tokens: number): number {
    const target = this.releasedSum + tokens;
    if (target > this.cooledSum) return Infinity;
    let lo = this.head;
    let hi = this.atUs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.upTo[mid] as number) >= target) hi = mid;
      else lo = mid + 1;
    }
    return this.atUs[lo] as number;
  }

  /** clear — nothing cools any more. */
  clear(): void {
    this.releasedSum = this.cooledSum;
    this.atUs.length = 0;
    this.upTo.length = 0;
    this.head = 0;
  }
}

export class WindowCredit extends Credit {
  private readonly cooling = new Cooling();
  private readonly grainUs: number;
  /** Credit is allowed above N only while a smaller limit's reconfiguration drains (see the rules). */
  private ceilingTokens: number;

  /**
   * WindowCredit — the credit of a window pool of `limitTokens` per `windowUs`
   * that starts at `startUs`, empty: its N tokens cool until `quietUntilUs` + W.
   */
  constructor(
    scale: TokenScale,
    pool: string,
    readonly limitTokens: number,
    readonly windowUs: number,
    quietUntilUs: number,
  ) {
    super(scale, pool, 0, quietUntilUs);
    this.grainUs = Math.max(GRAIN_US_MIN, Math.ceil(windowUs / GRAINS_PER_WINDOW));
    this.ceilingTokens = limitTokens;
    this.cooling.add(limitTokens, this.releaseAtUs(quietUntilUs));
  }

  /** coolingTokens — tokens on their way back to the level. */
  get coolingTokens(): number {
    return this.cooling.tokens;
  }

  /**
   * dueTokens — what the next refill at `nowUs` would move from cooling to
   * the level beside `leasedTokens`, computed without moving it: what an
   * operator's view of a pool nobody asked since shows as free.
   */
  dueTokens(nowUs: number, leasedTokens: number): number {
    const due = this.cooling.dueBy(nowUs);
    return Math.min(due, Math.max(0, this.limitTokens - this.levelTokens - leasedTokens - (this.cooling.tokens - due)));
  }

  /** creditTokens — level + `leasedTokens` + cooling. */
  creditTokens(leasedTokens: number): number {
    return this.levelTokens + leasedTokens + this.cooling.tokens;
  }

  /** refill — a window pool does not refill: what cooled long enough goes back to the level, as far as N leaves room. */
  override refill(nowUs: number, leasedTokens: number): void {
    if (nowUs > this.lastRefillUs) this.lastRefillUs = nowUs;
    const due = this.cooling.takeDue(nowUs);
    if (due === 0) return;
    const room = Math.max(0, this.limitTokens - this.levelTokens - leasedTokens - this.cooling.tokens);
    this.levelUnits += Math.min(due, room) * this.scale.unitsPerToken;
  }

  /** settle — whatever credit fell short of N in the step that ended at `nowUs` was dropped: it cools from then; then `check`. */
  override settle(nowUs: number, leasedTokens: number): void {
    const dropped = this.limitTokens - this.creditTokens(leasedTokens);
    if (dropped > 0) this.cooling.add(dropped, this.releaseAtUs(nowUs));
    this.check(leasedTokens);
  }

  /**
   * restore — a taken-over level beside the kept leases (`levelTokens`
   * null: the store has no record, so no lease and nothing spent: full).
   * Nothing cools any more; the next `settle` cools what the store showed
   * in neither, for W from then.
   */
  override restore(levelTokens: number | null, leasedTokens: number): void {
    this.cooling.clear();
    this.ceilingTokens = Math.max(this.limitTokens, leasedTokens);
    super.restore(levelTokens, leasedTokens);
  }

  /** carryOver — a reconfiguration: `old`'s cooling goes on cooling here, at its own instants; its level is kept as far as N leaves room. */
  carryOver(old: Credit, leasedTokens: number): void {
    this.cooling.clear();
    if (old instanceof WindowCredit) for (const [atUs, tokens] of old.cooling.pending()) this.cooling.add(tokens, atUs);
    const cooling = this.cooling.tokens;
    this.ceilingTokens = Math.max(this.limitTokens, leasedTokens + cooling);
    super.restore(Math.min(old.levelTokens, Math.max(0, this.limitTokens - leasedTokens - cooling)), leasedTokens);
  }

  override fullAtUs(): number {
    return Math.max(this.lastRefillUs, this.cooling.lastAtUs);
  }

  /** accruesAtUs — when the level holds `tokens`, or Infinity when what cools will not make it. */
  override accruesAtUs(tokens: number): number {
    const need = tokens - this.levelTokens;
    if (need <= 0) return this.lastRefillUs;
    return this.cooling.releasedByUs(need);
  }

  override waitUs(tokens: number, nowUs: number): number {
    const at = this.accruesAtUs(tokens);
    return at === Infinity ? this.windowUs : Math.max(0, at - nowUs);
  }

  /** check — the bucket's rules (level ≥ 0, level ≤ N) and level + leased + cooling ≤ N (or the draining ceiling). */
  override check(leasedTokens: number): void {
    super.check(leasedTokens);
    const credit = this.creditTokens(leasedTokens);
    if (this.ceilingTokens > this.limitTokens) this.ceilingTokens = Math.max(this.limitTokens, Math.min(this.ceilingTokens, credit));
    if (!(credit <= this.ceilingTokens)) invariantBroken(`pool window credit ${credit} over the limit ${this.ceilingTokens}`);
  }

  /** releaseAtUs — W after `fromUs`, rounded up to the grain. */
  private releaseAtUs(fromUs: number): number {
    return Math.ceil((fromUs + this.windowUs) / this.grainUs) * this.grainUs;
  }
}
