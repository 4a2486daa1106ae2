/**
 * SimMetrics: the counters of one simulation run and the result built from them.
 */
import type { SimResult } from './sim-config.js';
import { VIOLATIONS_KEPT } from './sim-events.js';

/** Rates are reported per slice of this length, µs. */
export const SLICE_US = 100_000;

export class SimMetrics {
  offeredTokens = 0;
  offeredCount = 0;
  admittedTokens = 0;
  admittedCount = 0;
  deniedCount = 0;
  roundTrips = 0;
  rootRoundTrips = 0;
  reports = 0;
  grantedTokens = 0;
  returnedTokens = 0;
  takeTimeouts = 0;
  /** Tokens admitted beyond leases by shadow mode, and those of them admitted one TTL or more after a switch back (each a violation). */
  shadowAdmittedTokens = 0;
  shadowJudgedTokens = 0;
  readonly takeWaitsMs: number[] = [];
  private readonly perAgentAdmitted: number[];
  private readonly perAgentOffered: number[];
  private readonly admittedPerSlice: number[] = [];
  private readonly offeredPerSlice: number[] = [];
  private readonly violations: string[] = [];
  private violationCount = 0;

  constructor(agents: number) {
    this.perAgentAdmitted = Array.from({ length: agents }, () => 0);
    this.perAgentOffered = Array.from({ length: agents }, () => 0);
  }

  /** offered — a request of `cost` from agent slot `slot` at traffic time `trafficUs`. */
  offered(slot: number, cost: number, trafficUs: number): void {
    this.offeredTokens += cost;
    this.offeredCount += 1;
    this.perAgentOffered[slot] = (this.perAgentOffered[slot] ?? 0) + cost;
    addToSlice(this.offeredPerSlice, cost, trafficUs);
  }

  /** admitted — `cost` tokens admitted by agent slot `slot` at traffic time `trafficUs`. */
  admitted(slot: number, cost: number, trafficUs: number): void {
    this.admittedTokens += cost;
    this.admittedCount += 1;
    this.perAgentAdmitted[slot] = (this.perAgentAdmitted[slot] ?? 0) + cost;
    addToSlice(this.admittedPerSlice, cost, trafficUs);
  }

  violation(message: string): void {
    this.violationCount += 1;
    if (this.violations.length < VIOLATIONS_KEPT) this.violations.push(message);
  }

  result(
    seed: number,
    checks: Pick<
      SimResult,
      | 'worstExcessTokens'
      | 'fullestWindowTokens'
      | 'peakInFlight'
      | 'meanInFlight'
      | 'admissions'
      | 'shadowAdmittedTokens'
      | 'shadowJudgedTokens'
      | 'fairShare'
      | 'hostileGrantedTokens'
    >,
    simulatedSeconds: number,
    events: number,
    store: Pick<SimResult, 'takeovers' | 'storeWrites' | 'fencedWrites' | 'reclaims' | 'lateOutcomes' | 'relayRestarts'>,
  ): SimResult {
    return {
      ...store,
      ...checks,
      seed,
      offeredTokens: this.offeredTokens,
      offeredCount: this.offeredCount,
      admittedTokens: this.admittedTokens,
      admittedCount: this.admittedCount,
      deniedCount: this.deniedCount,
      roundTrips: this.roundTrips,
      rootRoundTrips: this.rootRoundTrips,
      reports: this.reports,
      grantedTokens: this.grantedTokens,
      returnedTokens: this.returnedTokens,
      takeTimeouts: this.takeTimeouts,
      perAgentAdmitted: this.perAgentAdmitted,
      perAgentOffered: this.perAgentOffered,
      violations: this.violationCount > this.violations.length ? [...this.violations, `… ${this.violationCount} in all`] : this.violations,
      strandedTokens: this.grantedTokens - (this.admittedTokens - this.shadowAdmittedTokens) - this.returnedTokens,
      takeWaitsMs: this.takeWaitsMs,
      admittedPerSlice: this.admittedPerSlice,
      offeredPerSlice: this.offeredPerSlice,
      simulatedSeconds,
      events,
    };
  }
}

function addToSlice(slices: number[], tokens: number, trafficUs: number): void {
  const index = Math.floor(trafficUs / SLICE_US);
  if (index < 0) return;
  while (slices.length <= index) slices.push(0);
  slices[index] = (slices[index] ?? 0) + tokens;
}
