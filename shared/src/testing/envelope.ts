/**
 * The envelope check every test of the promise ends with: over every window
 * [tᵢ, tⱼ] bounded by admission instants, the fleet admitted at most
 * B + r·(tⱼ − tᵢ) tokens. Test support only (the `@tokenlease/shared/testing`
 * subpath): the coordinator's property tests, the simulator, the
 * integration and chaos suites and the sweep all judge with this one.
 *
 * Exact: instants are whole microseconds, arithmetic is BigInt in units of
 * tokens × the refill period in µs, so r·T is an integer. Linear time: with
 * prefix sums S (tokens admitted up to and including each admission) and
 * u = the refill period in µs, ρ = tokens per period, the condition is
 *   (S_j·u − ρ·t_j) − (S_{i−1}·u − ρ·t_i) ≤ B·u   for all i ≤ j,
 * so a running minimum of the subtracted term finds the worst window ending
 * at each admission in O(1).
 *
 * B is whatever bound the caller promises: pass capacity + allowance for a
 * pool with an allowance.
 */
import type { Rate } from '../core/rate.js';

export interface Admission {
  /** Monotonic clock, whole µs. */
  readonly tUs: number;
  /** Tokens admitted, a positive integer. */
  readonly cost: number;
}

/** EnvelopeWindow — a window [fromUs, toUs] between two admissions (both included) and the tokens admitted in it. */
export interface EnvelopeWindow {
  readonly fromUs: number;
  readonly toUs: number;
  readonly admittedTokens: number;
}

/**
 * EnvelopeWatch — the check, one admission at a time, in time order (the
 * simulator and the property tests check after every step). `admit` throws
 * an Error for an admission earlier than the one before.
 */
export class EnvelopeWatch {
  private readonly periodUs: bigint;
  private readonly rho: bigint;
  private readonly bound: bigint;
  private prefix = 0n;
  private minTerm: bigint | null = null;
  private minAtUs = 0;
  private minPrefix = 0n;
  private lastUs = -Infinity;
  /** Largest excess seen, in units of tokens·periodUs; ≤ 0 while the envelope holds. */
  private worst: bigint;
  /** worstWindow — the window of the largest excess so far (the closest approach while the envelope holds); null before any admission. */
  worstWindow: EnvelopeWindow | null = null;
  /** admittedTokens — tokens admitted so far. */
  admittedTokens = 0;
  /** violations — admissions that ended at least one window over the envelope. */
  violations = 0;

  /** EnvelopeWatch — a watch of the envelope `capacityTokens` + r·T for the refill `rate`. */
  constructor(capacityTokens: number, rate: Rate) {
    this.periodUs = BigInt(rate.periodMs) * 1000n;
    this.rho = BigInt(rate.tokens);
    this.bound = BigInt(capacityTokens) * this.periodUs;
    this.worst = -this.bound;
  }

  /** admit — records `cost` tokens admitted at `tUs`; returns the excess of its worst window over B + r·T, in tokens (> 0: a violation). */
  admit(tUs: number, cost: number): number {
    if (tUs < this.lastUs) throw new Error(`admissions out of order: ${tUs} µs after ${this.lastUs} µs`);
    this.lastUs = tUs;
    const t = BigInt(tUs);
    const term = this.prefix * this.periodUs - this.rho * t;
    if (this.minTerm === null || term < this.minTerm) {
      this.minTerm = term;
      this.minAtUs = tUs;
      this.minPrefix = this.prefix;
    }
    this.prefix += BigInt(cost);
    this.admittedTokens += cost;
    const excess = this.prefix * this.periodUs - this.rho * t - this.minTerm - this.bound;
    if (excess > 0n) this.violations += 1;
    if (excess > this.worst || this.worstWindow === null) {
      this.worst = excess;
      this.worstWindow = { fromUs: this.minAtUs, toUs: tUs, admittedTokens: Number(this.prefix - this.minPrefix) };
    }
    return Number(excess) / Number(this.periodUs);
  }

  /** worstExcessTokens — the largest excess over B + r·T so far, tokens (≤ 0 while the envelope holds; −B before any admission). */
  get worstExcessTokens(): number {
    return Number(this.worst) / Number(this.periodUs);
  }

  /** ok — whether the envelope has held so far. */
  get ok(): boolean {
    return this.worst <= 0n;
  }
}

export interface EnvelopeReport {
  readonly admissions: number;
  readonly admittedTokens: number;
  /** Largest (admitted − (B + r·T)) over all windows, in tokens; ≤ 0 means the envelope held (−B with no admission). */
  readonly worstExcessTokens: number;
  /** Admissions that end at least one window over the envelope (0 when it held). */
  readonly violations: number;
  readonly worstWindow: EnvelopeWindow | null;
  readonly ok: boolean;
}

/** checkEnvelope — the check over a whole log of admissions, in any order (sorted by time first, stably). */
export function checkEnvelope(admissions: readonly Admission[], capacityTokens: number, rate: Rate): EnvelopeReport {
  const watch = new EnvelopeWatch(capacityTokens, rate);
  const sorted = [...admissions].sort((a, b) => a.tUs - b.tUs);
  for (const a of sorted) watch.admit(a.tUs, a.cost);
  return {
    admissions: sorted.length,
    admittedTokens: watch.admittedTokens,
    worstExcessTokens: watch.worstExcessTokens,
    violations: watch.violations,
    worstWindow: watch.worstWindow,
    ok: watch.ok,
  };
}

/** Bisection steps of worstWindowRatio: the ratio to about 2^-40 of its power-of-two bracket. */
const RATIO_BISECTION_STEPS = 40;

/**
 * worstWindowRatio — the largest admitted / (B + r·T) over all windows
 * bounded by admission instants (1 means a window used the whole envelope;
 * above 1 is a violation; 0 with no admission). Found by bisection on the
 * ratio λ: some window exceeds λ·(B + r·T) iff max_j (S_j − λρt_j) −
 * min_{i≤j} (S_{i−1} − λρt_i) > λB. Floating point: a figure to report;
 * `checkEnvelope` is the exact test.
 */
export function worstWindowRatio(admissions: readonly Admission[], capacityTokens: number, rate: Rate): number {
  const sorted = [...admissions].sort((a, b) => a.tUs - b.tUs);
  if (sorted.length === 0) return 0;
  const t0 = (sorted[0] as Admission).tUs;
  const perUs = rate.tokens / (rate.periodMs * 1000);
  const exceeds = (lambda: number): boolean => {
    let prefix = 0;
    let minTerm = Infinity;
    for (const a of sorted) {
      const t = a.tUs - t0;
      minTerm = Math.min(minTerm, prefix - lambda * perUs * t);
      prefix += a.cost;
      if (prefix - lambda * perUs * t - minTerm > lambda * capacityTokens) return true;
    }
    return false;
  };
  let lo = 0;
  let hi = 1;
  while (exceeds(hi)) hi *= 2;
  for (let i = 0; i < RATIO_BISECTION_STEPS; i += 1) {
    const mid = (lo + hi) / 2;
    if (exceeds(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}
