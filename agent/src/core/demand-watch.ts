/**
 * DemandWatch: what the lease keeper knows of its pool's demand, and what it
 * makes of it: when the lease is in use, when to ask and for how much.
 *
 * Rules:
 * - Demand is admitted plus denied tokens per second (DemandMeter), sampled
 *   at every tick; a would-be denial of shadow mode counts as a denial, so
 *   the keeper asks as it would when enforcing. A tick that sees either count move, or a `take()`
 *   waiting, is activity.
 * - After `idleReturnMs` without activity the lease is returned. At renewal
 *   time a lease active within `IN_USE_IDLE_FRACTION_MAX` of that is
 *   renewed and a quieter one returned rather than left to lapse. Without a
 *   lease, remembered demand alone brings one back only within that
 *   fraction too: it does not undo a return for idleness.
 * - Ask before running dry: the first tick asks; with a lease held, a
 *   balance under the floor (the low watermark, or `initialTokens` up to a
 *   lease), a denied or waiting cost the balance cannot cover, or any
 *   denial since the last ask (demand outruns what it gets: it keeps a
 *   request waiting at the coordinator and takes every turn it is due)
 *   asks again.
 * - The ask covers demand over `refreshMs`, at least `initialTokens`, the
 *   largest denied cost, the waiting cost and one more than the low
 *   watermark, at most one lease, less the balance held. On a concurrency
 *   pool the busy slots count against that one lease as free ones do: a
 *   lease whose slots are all in use at its largest size asks for nothing
 *   (it asked on every refused acquire, answered at once with nothing).
 * - The low watermark covers demand over `LOW_WATERMARK_RTTS` round-trips
 *   plus `LOW_WATERMARK_US_SLACK`, at most one lease.
 * - Demand goes on the wire in thousandths of a token per second, at most
 *   the protocol's `DEMAND_PER_SECOND_MAX`. A rate lease whose bucket is
 *   full when it renews had more than it used: it reports the lesser of
 *   the 1 s estimate and one over `RECENT_TIME_CONSTANT_US`, so the share
 *   of an agent gone idle goes to the busy ones at its next renewal, not
 *   as its 1 s estimate decays. Otherwise it reports the 1 s estimate.
 */
import { DEMAND_PER_SECOND_MAX } from '@tokenlease/shared';
import { DEMAND_PER_SECOND_MIN, DemandMeter } from './demand-meter.js';
import type { KeeperOptions } from './keeper-options.js';
import type { LeaseSlot } from './lease-slot.js';
import { US_PER_MS } from './units.js';

/** At renewal time a lease active within this fraction of `idleReturnMs` is in use. */
const IN_USE_IDLE_FRACTION_MAX = 1 / 2;
/** The low watermark covers demand over this many round-trips plus `LOW_WATERMARK_US_SLACK`. */
const LOW_WATERMARK_RTTS = 2;
const LOW_WATERMARK_US_SLACK = 10_000;
/** Demand goes on the wire in steps of a thousandth of a token per second. */
const DEMAND_STEPS_PER_TOKEN = 1000;
/** How fast the estimate a full rate lease may report forgets, µs. */
const RECENT_TIME_CONSTANT_US = 50_000;

export class DemandWatch {
  private readonly meter = new DemandMeter();
  private readonly recent = new DemandMeter(RECENT_TIME_CONSTANT_US);
  /** Admitted plus denied tokens at the last tick. */
  private lastDemandTokens = 0;
  private activeAtUs = 0;
  private everAsked = false;
  private deniedTokensAtLastAsk = 0;

  constructor(
    private readonly slot: LeaseSlot,
    private readonly options: KeeperOptions,
  ) {}

  /** perSecond — the demand estimate, tokens per second. */
  get perSecond(): number {
    return this.meter.perSecond;
  }

  /** perSecondOnWire — the estimate as an acquire carries it; `rateFull`: from a rate lease whose bucket is full (see the rules). */
  perSecondOnWire(rateFull: boolean): number {
    const perSecond = rateFull ? Math.min(this.meter.perSecond, this.recent.perSecond) : this.meter.perSecond;
    return Math.min(DEMAND_PER_SECOND_MAX, Math.round(perSecond * DEMAND_STEPS_PER_TOKEN) / DEMAND_STEPS_PER_TOKEN);
  }

  /** observe — samples the slot's counters at `nowUs`, with `waitingTokens` of `take()` calls waiting. */
  observe(waitingTokens: number, nowUs: number): void {
    const demandTokens = this.slot.admittedTokens + this.slot.refusedTokens;
    this.meter.sample(demandTokens, nowUs);
    this.recent.sample(demandTokens, nowUs);
    if (demandTokens !== this.lastDemandTokens || waitingTokens > 0) this.activeAtUs = nowUs;
    this.lastDemandTokens = demandTokens;
  }

  /** lastActiveUs — the last tick that saw activity, µs. */
  get lastActiveUs(): number {
    return this.activeAtUs;
  }

  /** forget — at `nowUs`, treat the pool as idle since long enough that nothing renews or brings back a lease. */
  forget(nowUs: number): void {
    this.activeAtUs = nowUs - this.options.idleReturnMs * US_PER_MS;
  }

  /** leaseStarted — a new lease arrived at `nowUs`: its idle time counts from now at the earliest. */
  leaseStarted(nowUs: number): void {
    this.activeAtUs = Math.max(this.activeAtUs, nowUs);
  }

  /** idle — whether at `nowUs` the lease has gone `idleReturnMs` without activity. */
  idle(nowUs: number): boolean {
    return nowUs - this.activeAtUs >= this.options.idleReturnMs * US_PER_MS;
  }

  /** inUse — whether at `nowUs` the lease was active recently enough to renew. */
  inUse(nowUs: number): boolean {
    return nowUs - this.activeAtUs < this.options.idleReturnMs * US_PER_MS * IN_USE_IDLE_FRACTION_MAX;
  }

  /** idleAtUs — when the lease goes idle unless there is activity before. */
  idleAtUs(): number {
    return this.activeAtUs + this.options.idleReturnMs * US_PER_MS;
  }

  /** needsTokens — whether to ask at `nowUs`, with `waitingTokens` waiting (see the rules). */
  needsTokens(waitingTokens: number, nowUs: number): boolean {
    const s = this.slot;
    if (!this.everAsked) return true;
    if (!s.hasLease) {
      const remembered = this.inUse(nowUs) && this.meter.perSecond > DEMAND_PER_SECOND_MIN;
      return s.wantedCostTokens > 0 || waitingTokens > 0 || remembered;
    }
    const floorTokens = Math.max(s.lowWatermarkTokens, Math.min(this.options.initialTokens, s.costMaxTokens));
    const starved = s.refusedTokens > this.deniedTokensAtLastAsk;
    return starved || s.balanceTokens < floorTokens || s.wantedCostTokens > s.balanceTokens || waitingTokens > s.balanceTokens;
  }

  /** tokensWanted — how much to ask for, with `waitingTokens` waiting (see the rules); 0 when the balance covers it. */
  tokensWanted(waitingTokens: number): number {
    const s = this.slot;
    const target = Math.max(
      this.meter.tokensOver(this.options.refreshMs * US_PER_MS),
      this.options.initialTokens,
      s.wantedCostTokens,
      waitingTokens,
      s.lowWatermarkTokens + 1,
    );
    const held = s.hasLease ? s.heldSlots : 0;
    const capped = Math.min(target + held, s.costMaxTokens);
    return Math.max(0, capped - held - (s.hasLease ? s.balanceTokens : 0));
  }

  /** asked — an acquire left: denials from now on are news. */
  asked(): void {
    this.everAsked = true;
    this.deniedTokensAtLastAsk = this.slot.refusedTokens;
  }

  /** lowWatermarkTokens — the low watermark for a round-trip of `rttUs` (see the rules). */
  lowWatermarkTokens(rttUs: number): number {
    return Math.min(this.slot.costMaxTokens, this.meter.tokensOver(LOW_WATERMARK_RTTS * rttUs + LOW_WATERMARK_US_SLACK));
  }
}
