/**
 * LeaseSlot: the state the fast path reads, one per (agent, pool).
 *
 * Rules:
 * - `takeAt(cost, nowUs)` admits only when the whole cost is in the balance
 *   and `nowUs` is before the agent-side expiry. It spends all of the cost or
 *   nothing, does no I/O, allocates nothing and looks nothing up.
 * - A denial records why (`lastDenial`) and the largest cost refused, so the
 *   keeper can ask for enough; the caller reads the reason afterwards
 *   instead of receiving an object.
 * - Crossing the low watermark, or any denial, calls `onLow` once; the keeper
 *   re-arms it when it acts. That call is the only way the fast path reaches
 *   the I/O side, and it happens once per refresh, not per call.
 * - Counters only grow; the keeper derives demand from their differences.
 * - A rate lease's balance also accrues: `tokensPerPeriod` per period of
 *   `periodUs` (the keeper stretches the coordinator's period by the drift
 *   margin), in whole µs, exactly (a remainder in token·µs is carried), never
 *   above the cap; `takeAt` brings it up to date before deciding, so the
 *   balance is that of a true token bucket. The keeper freezes it (rate 0)
 *   when it sends a renewal and restarts it when the reply arrives.
 * - Fallback (opt-in, off by default: fail-closed): while the keeper says
 *   the coordinator cannot grant (`fallbackActive`), a cost the lease
 *   cannot cover is admitted from a local bucket of `tokensPerSecond` and
 *   `burstTokens` instead, counted apart. That bucket is this agent's own:
 *   the fleet's global bound does not cover what it admits. Its level is an
 *   integer count of millionths of a token, refilled per whole µs.
 * - While the coordinator says the pool does not exist (`unknownPool`) a
 *   denial says `unknown-pool`, not `no-lease`: a misspelt name is loud.
 * - For operators it also counts denied tokens by reason (on the denial
 *   path only), lease expiries and round-trips (noted by the keeper), and
 *   keeps up to ROUND_TRIP_SAMPLES_MAX round-trip samples until a metrics
 *   collector takes them.
 * - Shadow mode (`shadowAt(nowUs)`: the service forces it, or the lease in
 *   hand was granted in shadow mode and is live): the decision is the same,
 *   lease, fallback and all, but a cost it would deny is admitted. The
 *   would-be denial is recorded as a denial is (`lastDenial`, the wanted
 *   cost, the keeper's signal) and counted apart (`shadowDeniedTokens`, by
 *   reason); nothing is spent for it. The admit path does not look at the
 *   flag.
 * - A grant's shadow flag lives and dies with its lease: with no lease, or
 *   at or past the lease's expiry (before the keeper has even noticed), the
 *   slot enforces. So an agent idle across a switch back to enforcing
 *   cannot admit beyond its tokens on the strength of a lease it no longer
 *   holds (docs/design.md, "Modes live and die with their lease").
 * - Refunds (docs/design.md, "Requests that are not counted"): tokens a
 *   take spent from the lease may be given back to the same lease, so a
 *   request that should not count (a failed one, say) is not counted. The
 *   keeper calls `told()` whenever a message tells the coordinator the
 *   balance (an acquire, a report, a return) and whenever a lease is
 *   installed or ends; each call starts a new "told generation". A take's
 *   receipt (`takeReceiptAt`) names the generation it spent in, and
 *   `giveBackAt` gives back only while that generation lasts, the lease is
 *   held and live, at most what takes spent from the lease in that
 *   generation, and never above a rate lease's cap (the excess is
 *   dropped). So the balance never passes what was last told plus what was
 *   granted or accrued since: the coordinator's bound still covers it.
 *   What fallback or shadow mode admitted spent nothing from the lease and
 *   is never given back (its receipt is RECEIPT_NONE). A refund that is
 *   dropped leaves the request counted: the safe side. The take path pays
 *   one typed-array write for this (the spent-since-told counter).
 * - Concurrency pools (the last grant named a slot hold bound,
 *   `concurrency`): the balance counts free slots, and `acquireAt` takes one
 *   into a hold (slot-holds.ts) instead of spending it; `releaseAt`, or the
 *   hold's bound, puts it back into the balance of the lease it came from
 *   (none, once that lease ended). What the coordinator is told is the
 *   balance plus the slots its requests hold (`heldSlots`: of this lease,
 *   or of an earlier one whose requests may still run). No fallback:
 *   the local bucket admits by rate, which says nothing of how many run at
 *   once; shadow mode admits as for tokens, with a hold that gives nothing
 *   back. `acquireAt` on a pool whose lease holds tokens throws, and so does
 *   `takeAt` on a pool of slots (a slot taken as a token would never be
 *   released, and the coordinator takes what a lease tells below its
 *   bound as free). A grant may cap the lease (`slotsMax`): a slot freed
 *   above the cap is not reused, so the lease shrinks to it as its
 *   requests end.
 */
import { AgentError } from '../errors.js';
import type { ArrivalSink } from './arrival-log.js';
import { SlotHolds } from './slot-holds.js';

/**
 * DenialReason — why a take was denied: no lease yet (`no-lease`), its
 * tokens spent (`exhausted`), a cost above what one lease can ever hold
 * (`never-fits`), the lease past its expiry (`expired`), or a pool the
 * coordinator does not know (`unknown-pool`).
 */
export type DenialReason = 'no-lease' | 'exhausted' | 'never-fits' | 'expired' | 'unknown-pool';

function ignore(): void {}

// Numbers the fast path writes live in one Float64Array: a typed-array store
// never allocates, whereas a double (or a counter past the small-integer
// range) written to an object field may box a new heap number per call.
const BALANCE = 0;
const EXPIRES_AT = 1;
const ADMITTED_TOKENS = 2;
const ADMITTED_COUNT = 3;
const LAST_ADMIT = 4;
const WANTED_COST = 5;
const LOW_WATERMARK = 6;
const COST_MAX = 7;
const FALLBACK_ACTIVE = 8;
const FALLBACK_LEVEL = 9;
const FALLBACK_AT = 10;
const FALLBACK_RATE = 11;
const FALLBACK_CAP = 12;
const FALLBACK_TOKENS = 13;
const FALLBACK_COUNT = 14;
const RATE_TOKENS = 15;
const RATE_PERIOD_US = 16;
const RATE_CARRY = 17;
const RATE_AT = 18;
const RATE_CAP = 19;
const LEASE_EXPIRIES = 20;
const ROUND_TRIPS = 21;
// The denial counters, one block; in shadow mode a denial writes the twin
// block DENIAL_FIELDS further on instead, chosen by one branch on the deny
// path from SHADOW_FORCED (the service's override) and SHADOW_GRANTED (the
// lease in hand was granted in shadow mode; it counts only while that lease
// is live).
const DENIED_TOKENS = 22;
const DENIED_COUNT = 23;
const DENIED_NO_LEASE = 24;
const DENIED_EXHAUSTED = 25;
const DENIED_NEVER_FITS = 26;
const DENIED_EXPIRED = 27;
const DENIED_UNKNOWN_POOL = 28;
const DENIAL_FIELDS = DENIED_UNKNOWN_POOL + 1 - DENIED_TOKENS;
const SHADOW_FORCED = DENIED_TOKENS + 2 * DENIAL_FIELDS;
const SHADOW_GRANTED = SHADOW_FORCED + 1;
// Refunds: the told generation, what the lease spent since it began, and what was given back.
const TOLD_GENERATION = SHADOW_GRANTED + 1;
const TOLD_SPENT = TOLD_GENERATION + 1;
const REFUNDED_TOKENS = TOLD_SPENT + 1;
const REFUNDED_COUNT = REFUNDED_TOKENS + 1;
const FIELDS = REFUNDED_COUNT + 1;
/** The denied-tokens field of each reason. */
const DENIED_BY_REASON: Readonly<Record<DenialReason, number>> = {
  'no-lease': DENIED_NO_LEASE,
  exhausted: DENIED_EXHAUSTED,
  'never-fits': DENIED_NEVER_FITS,
  expired: DENIED_EXPIRED,
  'unknown-pool': DENIED_UNKNOWN_POOL,
};
/** ROUND_TRIP_SAMPLES_MAX — round-trip samples kept until taken; later ones are counted, not kept. */
export const ROUND_TRIP_SAMPLES_MAX = 1024;
/** Fallback level units per token: one token·second in token·µs. */
const UNITS_PER_TOKEN = 1_000_000;
/** The largest fallback rate accepted, tokens per second. */
export const FALLBACK_PER_SECOND_MAX = 1e9;
/** The largest fallback burst accepted, tokens: the full level, 10^15 units, is still an exact integer. */
export const FALLBACK_BURST_TOKENS_MAX = 1e9;
/** RECEIPT_DENIED — the receipt of a take that was denied: nothing to give back. */
export const RECEIPT_DENIED = -1;
/** RECEIPT_NONE — the receipt of a take admitted without spending from the lease (fallback, shadow mode): nothing to give back. */
export const RECEIPT_NONE = 0;

/**
 * LeaseSlot — the state a limiter's fast path reads, one per agent and
 * pool (`limiter.slot`): the lease's balance and expiry, the fallback
 * bucket, shadow mode, and the counters its stats and metrics read. A
 * take spends the whole cost or nothing, with no I/O.
 */
export class LeaseSlot {
  private readonly n = new Float64Array(FIELDS);
  hasLease = false;
  lowSignalled = false;
  /** onLow — called once when the balance crosses the low watermark, or on a denial; the keeper re-arms it when it acts. */
  onLow: () => void = ignore;
  lastDenial: DenialReason = 'no-lease';
  /** Set while the coordinator's last word on this pool was `unknown-pool`. */
  unknownPool = false;
  /** Where this pool's arrivals are recorded while a trace recording takes it (core/arrival-log.ts); null: not recorded. The limiter's take calls note them, not takeAt. */
  arrivals: ArrivalSink | null = null;
  private roundTripSamplesUs: number[] = [];
  /** Whether the last grant was of a concurrency pool (it named a slot hold bound); the keeper sets it. */
  concurrency = false;
  /** The most slots (free and busy) the lease may keep, as its last grant said (Infinity: no cap); a slot released above it is not reused. */
  slotsMax = Infinity;
  private holdsNow: SlotHolds | null = null;

  constructor(readonly pool: string) {
    this.n[COST_MAX] = Infinity;
    // Generations start above RECEIPT_NONE, so no receipt of a take that spent nothing names one.
    this.n[TOLD_GENERATION] = RECEIPT_NONE + 1;
  }

  /** Tokens the agent may still spend from its lease. */
  get balanceTokens(): number {
    return this.n[BALANCE] as number;
  }
  set balanceTokens(tokens: number) {
    this.n[BALANCE] = tokens;
  }
  /** Agent-side expiry on the agent's monotonic clock, µs; nothing is spent at or after it. */
  get expiresAtUs(): number {
    return this.n[EXPIRES_AT] as number;
  }
  set expiresAtUs(us: number) {
    this.n[EXPIRES_AT] = us;
  }
  /** Largest cost that can ever fit one lease; Infinity until the pool's limits are known. */
  get costMaxTokens(): number {
    return this.n[COST_MAX] as number;
  }
  set costMaxTokens(tokens: number) {
    this.n[COST_MAX] = tokens;
  }
  get lowWatermarkTokens(): number {
    return this.n[LOW_WATERMARK] as number;
  }
  set lowWatermarkTokens(tokens: number) {
    this.n[LOW_WATERMARK] = tokens;
  }
  /** Largest cost denied since the keeper last asked; 0 when none. */
  get wantedCostTokens(): number {
    return this.n[WANTED_COST] as number;
  }
  set wantedCostTokens(tokens: number) {
    this.n[WANTED_COST] = tokens;
  }
  get admittedTokens(): number {
    return this.n[ADMITTED_TOKENS] as number;
  }
  get admittedCount(): number {
    return this.n[ADMITTED_COUNT] as number;
  }
  get deniedTokens(): number {
    return this.n[DENIED_TOKENS] as number;
  }
  get deniedCount(): number {
    return this.n[DENIED_COUNT] as number;
  }
  /** Tokens and calls admitted only because of shadow mode: what enforcing would have denied. */
  get shadowDeniedTokens(): number {
    return this.n[DENIED_TOKENS + DENIAL_FIELDS] as number;
  }
  get shadowDeniedCount(): number {
    return this.n[DENIED_COUNT + DENIAL_FIELDS] as number;
  }
  /** shadowDeniedTokensFor — tokens shadow mode admitted that enforcing would have denied for `reason`. */
  shadowDeniedTokensFor(reason: DenialReason): number {
    return this.n[DENIED_BY_REASON[reason] + DENIAL_FIELDS] as number;
  }
  /** Tokens denied or would-be denied: the demand the keeper saw refused, the same in both modes. */
  get refusedTokens(): number {
    return (this.n[DENIED_TOKENS] as number) + (this.n[DENIED_TOKENS + DENIAL_FIELDS] as number);
  }

  /**
   * Whether the lease in hand was granted in shadow mode. It admits would-be
   * denials only while that lease is live (`shadowAt`); the keeper clears it
   * when the lease ends.
   */
  get shadowGranted(): boolean {
    return this.n[SHADOW_GRANTED] !== 0;
  }
  set shadowGranted(shadow: boolean) {
    this.n[SHADOW_GRANTED] = shadow ? 1 : 0;
  }
  /** Whether this service forces shadow mode for the pool, whatever the coordinator says. */
  get shadowForced(): boolean {
    return this.n[SHADOW_FORCED] !== 0;
  }
  set shadowForced(shadow: boolean) {
    this.n[SHADOW_FORCED] = shadow ? 1 : 0;
  }
  /**
   * shadowAt — whether a cost the slot would deny at `nowUs` is admitted
   * (shadow mode): the service forces it, or a live lease was granted so.
   */
  shadowAt(nowUs: number): boolean {
    const n = this.n;
    return n[SHADOW_FORCED] !== 0 || (n[SHADOW_GRANTED] !== 0 && this.hasLease && nowUs < (n[EXPIRES_AT] as number));
  }
  get lastAdmitUs(): number {
    return this.n[LAST_ADMIT] as number;
  }
  /** deniedTokensFor — tokens denied for `reason` so far. */
  deniedTokensFor(reason: DenialReason): number {
    return this.n[DENIED_BY_REASON[reason]] as number;
  }
  /** Leases that expired in hand (the keeper noticed the expiry before a renewal or return). */
  get leaseExpiries(): number {
    return this.n[LEASE_EXPIRIES] as number;
  }
  /** Requests answered by the coordinator (acquires and returns). */
  get roundTrips(): number {
    return this.n[ROUND_TRIPS] as number;
  }

  /** noteExpiry — the keeper found the lease expired in hand. */
  noteExpiry(): void {
    this.n[LEASE_EXPIRIES] = (this.n[LEASE_EXPIRIES] as number) + 1;
  }

  /** noteRoundTrip — a request was answered `us` µs after it was first sent. */
  noteRoundTrip(us: number): void {
    this.n[ROUND_TRIPS] = (this.n[ROUND_TRIPS] as number) + 1;
    if (this.roundTripSamplesUs.length < ROUND_TRIP_SAMPLES_MAX) this.roundTripSamplesUs.push(Math.max(0, us));
  }

  /** takeRoundTripSamples — the round-trip samples (µs) since the last take, at most ROUND_TRIP_SAMPLES_MAX. */
  takeRoundTripSamples(): number[] {
    const samples = this.roundTripSamplesUs;
    this.roundTripSamplesUs = [];
    return samples;
  }

  /** Tokens and admissions taken from the local fallback bucket. */
  get fallbackTokens(): number {
    return this.n[FALLBACK_TOKENS] as number;
  }
  get fallbackCount(): number {
    return this.n[FALLBACK_COUNT] as number;
  }
  /** Whether costs the lease cannot cover go to the fallback bucket now (only when one is configured). */
  get fallbackActive(): boolean {
    return this.n[FALLBACK_ACTIVE] === 1;
  }
  set fallbackActive(active: boolean) {
    this.n[FALLBACK_ACTIVE] = active && this.n[FALLBACK_RATE] !== 0 ? 1 : 0;
  }

  /**
   * configureFallback — a local bucket of `tokensPerSecond` (0: none,
   * fail-closed) and `burstTokens`, full at `nowUs`. Throws AgentError
   * ('invalid-argument') unless both are safe integers with rate ≤
   * `FALLBACK_PER_SECOND_MAX` and burst in [1, `FALLBACK_BURST_TOKENS_MAX`] (both 1e9).
   */
  configureFallback(tokensPerSecond: number, burstTokens: number, nowUs: number): void {
    const rateOk = Number.isSafeInteger(tokensPerSecond) && tokensPerSecond >= 0 && tokensPerSecond <= FALLBACK_PER_SECOND_MAX;
    const burstOk = Number.isSafeInteger(burstTokens) && burstTokens >= 1 && burstTokens <= FALLBACK_BURST_TOKENS_MAX;
    if (!rateOk || !burstOk) {
      const needs = `integer tokensPerSecond in [0, ${FALLBACK_PER_SECOND_MAX}] and burstTokens in [1, ${FALLBACK_BURST_TOKENS_MAX}]`;
      throw new AgentError('invalid-argument', `fallback needs ${needs}, got ${tokensPerSecond} and ${burstTokens}`, { pool: this.pool });
    }
    const n = this.n;
    n[FALLBACK_RATE] = tokensPerSecond;
    n[FALLBACK_CAP] = burstTokens * UNITS_PER_TOKEN;
    n[FALLBACK_LEVEL] = n[FALLBACK_CAP];
    n[FALLBACK_AT] = nowUs;
    if (tokensPerSecond === 0) n[FALLBACK_ACTIVE] = 0;
  }

  /** Tokens accrued per `ratePeriodUs` (0: not accruing: a chunk lease, or a rate lease frozen by a renewal). */
  get rateTokens(): number {
    return this.n[RATE_TOKENS] as number;
  }
  get ratePeriodUs(): number {
    return this.n[RATE_PERIOD_US] as number;
  }
  /** The most a rate lease's balance accrues to. */
  get rateCapTokens(): number {
    return this.n[RATE_CAP] as number;
  }

  /**
   * startRate — from `nowUs` on the balance accrues `tokensPerPeriod` per
   * `periodUs` up to `capTokens` (tokensPerPeriod 0: it does not accrue).
   * `keepCarry`: the fraction of a token accrued before the last freeze
   * counts on (same lease, same period); else it is dropped.
   */
  startRate(tokensPerPeriod: number, periodUs: number, capTokens: number, nowUs: number, keepCarry = false): void {
    const n = this.n;
    if (!keepCarry || n[RATE_PERIOD_US] !== periodUs) n[RATE_CARRY] = 0;
    n[RATE_TOKENS] = tokensPerPeriod;
    n[RATE_PERIOD_US] = periodUs;
    n[RATE_CAP] = capTokens;
    n[RATE_AT] = nowUs;
  }

  /**
   * freezeRate — brings the balance up to `nowUs`, then stops its accrual
   * (a renewal is on its way). The fraction of a token accrued so far is
   * kept for `startRate`: the coordinator rounds its own count up, so less
   * than one token carried over never passes it.
   */
  freezeRate(nowUs: number): void {
    if (this.n[RATE_TOKENS] !== 0) this.accrue(nowUs);
    this.n[RATE_TOKENS] = 0;
  }

  /**
   * takeAt — spends `cost` whole tokens at `nowUs` when the live lease holds
   * them; else records a denial, and in shadow mode admits anyway (a
   * would-be denial, counted apart).
   */
  takeAt(cost: number, nowUs: number): boolean {
    // A slot taken as a token would never be released: the lease would tell it free (chunk-grant.ts).
    if (this.concurrency)
      throw new AgentError('invalid-argument', 'this pool leases slots: use acquire and release, not take', { pool: this.pool });
    const n = this.n;
    if (n[RATE_TOKENS] !== 0) this.accrue(nowUs);
    const balance = n[BALANCE] as number;
    if (cost <= balance && nowUs < (n[EXPIRES_AT] as number) && cost >= 1 && Number.isSafeInteger(cost)) {
      n[BALANCE] = balance - cost;
      n[TOLD_SPENT] = (n[TOLD_SPENT] as number) + cost;
      n[ADMITTED_TOKENS] = (n[ADMITTED_TOKENS] as number) + cost;
      n[ADMITTED_COUNT] = (n[ADMITTED_COUNT] as number) + 1;
      n[LAST_ADMIT] = nowUs;
      if (balance - cost < (n[LOW_WATERMARK] as number) && !this.lowSignalled) this.signalLow();
      return true;
    }
    if (n[FALLBACK_ACTIVE] === 1 && cost >= 1 && Number.isSafeInteger(cost) && this.fallbackUnitsAt(nowUs) >= cost * UNITS_PER_TOKEN) {
      n[FALLBACK_LEVEL] = (n[FALLBACK_LEVEL] as number) - cost * UNITS_PER_TOKEN;
      n[FALLBACK_TOKENS] = (n[FALLBACK_TOKENS] as number) + cost;
      n[FALLBACK_COUNT] = (n[FALLBACK_COUNT] as number) + 1;
      // The keeper still wants to hear that the lease ran short.
      if (!this.lowSignalled) this.signalLow();
      return true;
    }
    return this.deny(cost, nowUs);
  }

  /**
   * takeReceiptAt — `takeAt`, returning a receipt for `giveBackAt`:
   * RECEIPT_DENIED (-1) when denied; RECEIPT_NONE (0) when admitted without
   * spending from the lease (fallback, a would-be denial of shadow mode);
   * else the told generation the cost was spent in (a positive integer).
   * Allocates nothing.
   */
  takeReceiptAt(cost: number, nowUs: number): number {
    const n = this.n;
    const generation = n[TOLD_GENERATION] as number;
    const admittedCount = n[ADMITTED_COUNT] as number;
    if (!this.takeAt(cost, nowUs)) return RECEIPT_DENIED;
    // Spent from the lease, and nothing told the coordinator the balance meanwhile.
    return n[ADMITTED_COUNT] !== admittedCount && n[TOLD_GENERATION] === generation ? generation : RECEIPT_NONE;
  }

  /**
   * giveBackAt — gives `cost` tokens of the take with `receipt` back to the
   * lease at `nowUs`, under the refund rules (see the head): nothing unless
   * the receipt names the current told generation and the lease is held
   * and live; at most what the lease spent in that generation; a rate
   * lease not above its cap. Returns the tokens given back (0: dropped, the
   * take stays counted). Throws AgentError('invalid-argument') for a cost
   * that is not a positive integer.
   */
  giveBackAt(cost: number, receipt: number, nowUs: number): number {
    this.checkCost(cost);
    const n = this.n;
    if (receipt !== n[TOLD_GENERATION] || !this.hasLease || nowUs >= (n[EXPIRES_AT] as number)) return 0;
    if (n[RATE_TOKENS] !== 0) this.accrue(nowUs);
    const capTokens = n[RATE_CAP] as number;
    const roomTokens = capTokens > 0 ? capTokens - (n[BALANCE] as number) : Infinity;
    const tokens = Math.min(cost, n[TOLD_SPENT] as number, roomTokens);
    if (tokens <= 0) return 0;
    n[BALANCE] = (n[BALANCE] as number) + tokens;
    n[TOLD_SPENT] = (n[TOLD_SPENT] as number) - tokens;
    n[REFUNDED_TOKENS] = (n[REFUNDED_TOKENS] as number) + tokens;
    n[REFUNDED_COUNT] = (n[REFUNDED_COUNT] as number) + 1;
    return tokens;
  }

  /**
   * told — the balance was just told to the coordinator (an acquire, a
   * report, a return), or a lease was installed or ended: a new told
   * generation begins, and no take of an earlier one is given back.
   */
  told(): void {
    const n = this.n;
    n[TOLD_GENERATION] = (n[TOLD_GENERATION] as number) + 1;
    n[TOLD_SPENT] = 0;
  }

  /** The told generation now: the receipt a take spending from the lease gets (a positive integer). */
  get toldGeneration(): number {
    return this.n[TOLD_GENERATION] as number;
  }
  /** Tokens spent from the lease in this told generation: the most `giveBackAt` may give back now. */
  get toldSpentTokens(): number {
    return this.n[TOLD_SPENT] as number;
  }
  /** Tokens given back (`giveBackAt`), and the give-backs that returned any: admitted less refunded is what counted. */
  get refundedTokens(): number {
    return this.n[REFUNDED_TOKENS] as number;
  }
  get refundedCount(): number {
    return this.n[REFUNDED_COUNT] as number;
  }

  /**
   * accrue — adds what the rate gave since the last accrual, in whole µs:
   * carry + elapsed·tokens over the period, the remainder carried, up to the
   * cap (a full bucket drops its carry: a true bucket gains nothing while full).
   */
  private accrue(nowUs: number): void {
    const n = this.n;
    const elapsedUs = Math.floor(nowUs - (n[RATE_AT] as number));
    if (elapsedUs <= 0) return;
    n[RATE_AT] = (n[RATE_AT] as number) + elapsedUs;
    const room = (n[RATE_CAP] as number) - (n[BALANCE] as number);
    const periodUs = n[RATE_PERIOD_US] as number;
    const tokensPerPeriod = n[RATE_TOKENS] as number;
    // A gap far past filling the room (by more than a µs) is full without the
    // product (which could pass 2^53); below that bound the products are exact integers.
    const pastFull = room <= 0 || elapsedUs > (room * periodUs) / tokensPerPeriod + 1;
    const units = pastFull ? Infinity : (n[RATE_CARRY] as number) + elapsedUs * tokensPerPeriod;
    if (units >= room * periodUs) {
      if (room > 0) n[BALANCE] = n[RATE_CAP] as number;
      n[RATE_CARRY] = 0;
      return;
    }
    let whole = Math.floor(units / periodUs);
    if (whole * periodUs > units) whole -= 1; // a quotient rounded up across an integer
    n[BALANCE] = (n[BALANCE] as number) + whole;
    n[RATE_CARRY] = units - whole * periodUs;
  }

  /** fallbackUnitsAt — the fallback bucket's level brought up to `nowUs` (never moving its clock back). */
  private fallbackUnitsAt(nowUs: number): number {
    const n = this.n;
    // Whole µs only, so the level stays an integer count of millionths of a token.
    const elapsedUs = Math.floor(nowUs - (n[FALLBACK_AT] as number));
    if (elapsedUs > 0) {
      n[FALLBACK_LEVEL] = Math.min(n[FALLBACK_CAP] as number, (n[FALLBACK_LEVEL] as number) + elapsedUs * (n[FALLBACK_RATE] as number));
      n[FALLBACK_AT] = (n[FALLBACK_AT] as number) + elapsedUs;
    }
    return n[FALLBACK_LEVEL] as number;
  }

  /** holds — the requests holding slots of this pool (made on first use). */
  get holds(): SlotHolds {
    return (this.holdsNow ??= new SlotHolds());
  }

  /** holdsInFlight — holds still counted, of any lease (requests this agent has running within their bound). */
  get holdsInFlight(): number {
    return this.holdsNow?.inFlight ?? 0;
  }

  /** busySlots — slots of the lease in hand held by requests now (0 for a pool of tokens). */
  get busySlots(): number {
    return this.holdsNow?.busy ?? 0;
  }

  /**
   * heldSlots — what the lease in hand tells the coordinator beside its free
   * balance: every request holding a slot of it or of an earlier lease and
   * not over (a renewal of a lease this agent let lapse first keeps the
   * slots of its earlier requests counted until they end). Never less than
   * `busySlots`; 0 for a pool of tokens.
   */
  get heldSlots(): number {
    return this.holdsNow?.counted ?? 0;
  }

  /**
   * acquireAt — takes a slot of the live lease at `nowUs` into a hold and
   * returns its handle (a positive integer); else records a denial, and in
   * shadow mode admits anyway with a hold that gives nothing back; 0 when
   * refused. Holds past their bound end first. Throws
   * AgentError('invalid-argument') when the lease in hand holds tokens.
   */
  acquireAt(nowUs: number): number {
    if (this.hasLease && !this.concurrency) {
      throw new AgentError('invalid-argument', 'acquire is for concurrency pools; this pool leases tokens: use tryTake', {
        pool: this.pool,
      });
    }
    const n = this.n;
    const holds = this.holds;
    if (holds.nextBoundUs() <= nowUs) this.slotsBack(holds.expire(nowUs));
    const balance = n[BALANCE] as number;
    if (balance >= 1 && nowUs < (n[EXPIRES_AT] as number)) {
      const handle = holds.take(nowUs, true);
      if (handle !== 0) {
        n[BALANCE] = balance - 1;
        n[ADMITTED_TOKENS] = (n[ADMITTED_TOKENS] as number) + 1;
        n[ADMITTED_COUNT] = (n[ADMITTED_COUNT] as number) + 1;
        n[LAST_ADMIT] = nowUs;
        if (balance - 1 < (n[LOW_WATERMARK] as number) && !this.lowSignalled) this.signalLow();
        return handle;
      }
    }
    return this.deny(1, nowUs) ? holds.take(nowUs, false) : 0;
  }

  /**
   * releaseAt — ends the hold of `handle` at `nowUs`, its slot back to the
   * lease it came from if that lease is still the one in hand. False when
   * the hold had ended already (released, past its bound) or never was.
   */
  releaseAt(handle: number, nowUs: number): boolean {
    const holds = this.holdsNow;
    if (holds === null) return false;
    this.expireHolds(nowUs);
    const ended = holds.release(handle);
    if (ended === 1) this.slotsBack(1);
    return ended >= 0;
  }

  /** slotsBack — `slots` of the lease in hand were freed: back into the balance, as far as the lease's cap (`slotsMax`) leaves room. */
  private slotsBack(slots: number): void {
    const n = this.n;
    const room = this.slotsMax - this.busySlots - (n[BALANCE] as number);
    n[BALANCE] = (n[BALANCE] as number) + Math.max(0, Math.min(slots, room));
  }

  /** canAcquireAt — whether `acquireAt(nowUs)` would take a slot of the lease (holds past their bound end first); records nothing. */
  canAcquireAt(nowUs: number): boolean {
    this.expireHolds(nowUs);
    return this.hasLease && this.concurrency && (this.n[BALANCE] as number) >= 1 && nowUs < (this.n[EXPIRES_AT] as number);
  }

  /** expireHolds — ends the holds past their bound at `nowUs`, their slots back to the lease in hand. */
  expireHolds(nowUs: number): void {
    const holds = this.holdsNow;
    if (holds !== null && holds.nextBoundUs() <= nowUs) this.slotsBack(holds.expire(nowUs));
  }

  /** canTakeAt — whether `takeAt(cost, nowUs)` would admit; spends and records nothing. */
  canTakeAt(cost: number, nowUs: number): boolean {
    const n = this.n;
    if (!(cost >= 1 && Number.isSafeInteger(cost))) return false;
    if (n[RATE_TOKENS] !== 0) this.accrue(nowUs);
    if (cost <= (n[BALANCE] as number) && nowUs < (n[EXPIRES_AT] as number)) return true;
    return n[FALLBACK_ACTIVE] === 1 && this.fallbackUnitsAt(nowUs) >= cost * UNITS_PER_TOKEN;
  }

  /** checkCost — throws AgentError('invalid-argument') unless `cost` is a positive integer (a cost this slot could ever be charged). */
  checkCost(cost: number): void {
    if (!(cost >= 1 && Number.isSafeInteger(cost))) {
      throw new AgentError('invalid-argument', `cost must be a positive integer, got ${cost}`, { pool: this.pool });
    }
  }

  /** deny — records a denial of `cost` (in shadow mode a would-be denial, counted apart); true when shadow mode admits it. */
  private deny(cost: number, nowUs: number): boolean {
    this.checkCost(cost);
    const n = this.n;
    // Compared here, so that no clock value (a heap number) is passed on.
    const expired = nowUs >= (n[EXPIRES_AT] as number);
    // The one shadow branch: an enforced denial keeps its fixed counter fields.
    // A grant's flag counts only with its lease live: none, or an expired one, enforces.
    if (n[SHADOW_FORCED] !== 0 || (n[SHADOW_GRANTED] !== 0 && this.hasLease && !expired))
      return this.countDenial(cost, expired, DENIAL_FIELDS);
    return this.countDenial(cost, expired, 0);
  }

  /** countDenial — the denial's reason and counters, in the block `shift` fields on (0: enforced, DENIAL_FIELDS: shadow); true when shadowed. */
  private countDenial(cost: number, expired: boolean, shift: number): boolean {
    const n = this.n;
    n[DENIED_TOKENS + shift] = (n[DENIED_TOKENS + shift] as number) + cost;
    n[DENIED_COUNT + shift] = (n[DENIED_COUNT + shift] as number) + 1;
    if (cost > (n[COST_MAX] as number)) {
      this.lastDenial = 'never-fits';
      n[DENIED_NEVER_FITS + shift] = (n[DENIED_NEVER_FITS + shift] as number) + cost;
      return shift !== 0;
    }
    // The reason and its counter together, with no lookup on the denial path.
    let field = DENIED_EXHAUSTED;
    this.lastDenial = 'exhausted';
    if (this.unknownPool) {
      this.lastDenial = 'unknown-pool';
      field = DENIED_UNKNOWN_POOL;
    } else if (!this.hasLease) {
      this.lastDenial = 'no-lease';
      field = DENIED_NO_LEASE;
    } else if (expired) {
      this.lastDenial = 'expired';
      field = DENIED_EXPIRED;
    }
    n[field + shift] = (n[field + shift] as number) + cost;
    if (cost > (n[WANTED_COST] as number)) n[WANTED_COST] = cost;
    if (!this.lowSignalled) this.signalLow();
    return shift !== 0;
  }

  private signalLow(): void {
    this.lowSignalled = true;
    this.onLow();
  }
}
