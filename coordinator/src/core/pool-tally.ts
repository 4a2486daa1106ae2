/**
 * PoolTally: what only a pool knows happened, counted for operators as
 * plain numbers the adapter reads and resets (metrics live in adapters;
 * a core never imports a metrics library).
 *
 * Rules:
 * - Counts only grow between two `take`s; `take` hands them over once,
 *   so an adapter that adds each take to its counters counts every event
 *   exactly once.
 * - Hold times are kept as samples, at most HOLD_SAMPLES_MAX between two
 *   takes; the rest are counted in `holdsDropped`, never kept (bounded
 *   memory whatever the scrape interval).
 * - Calls agents report (shared calls.ts) are counted twice over: since the
 *   last take, for metrics, and in all since the pool was made, for the
 *   status page and pool listings (`callTotals`).
 */
import { NO_CALLS, type CallCounts } from '@tokenlease/shared';
import type { LeaseTable } from './lease-table.js';

/** HOLD_SAMPLES_MAX — hold time samples kept between two takes. */
export const HOLD_SAMPLES_MAX = 4096;

/** PoolTallyCounts — counts since the last take. */
export interface PoolTallyCounts {
  /** Leases that ended by expiry, and the tokens their bounds still held (lost to the pool). */
  readonly leasesExpired: number;
  readonly tokensExpired: number;
  /** How long each answered held request was held, µs. */
  readonly holdsUs: readonly number[];
  /** Held requests answered beyond HOLD_SAMPLES_MAX (not sampled). */
  readonly holdsDropped: number;
  readonly leasesOpened: number;
  readonly leasesReturned: number;
  /** Requests that claimed a class the configuration grants to other identities only, and so weighed 1. */
  readonly classClaimsRefused: number;
  /** Leases whose agent's clock was found running outside the pool's `clockDriftLimit` (clock-check.ts). */
  readonly clockDrifts: number;
  /** Calls agents reported deciding locally. */
  readonly calls: CallCounts;
}

export class PoolTally {
  private holdsUs: number[] = [];
  private holdsDropped = 0;
  private classClaimsRefused = 0;
  private clockDrifts = 0;
  private readonly calls = new CallSums();
  private readonly totals = new CallSums();

  /** callTotals — the calls agents reported since the pool was made. */
  get callTotals(): CallCounts {
    return this.totals.counts();
  }

  /** reported — an accepted request told `calls` (absent: none); allocates nothing. */
  reported(calls: CallCounts | undefined): void {
    if (calls === undefined) return;
    this.calls.add(calls);
    this.totals.add(calls);
  }

  /** classClaimRefused — a request claimed a class not granted to its identity (it weighed 1). */
  classClaimRefused(): void {
    this.classClaimsRefused += 1;
  }

  /** clockDrifted — a lease's agent was found with a clock outside the pool's limit. */
  clockDrifted(): void {
    this.clockDrifts += 1;
  }

  /** held — a held request was answered after `heldUs` µs. */
  held(heldUs: number): void {
    if (this.holdsUs.length < HOLD_SAMPLES_MAX) this.holdsUs.push(Math.max(0, heldUs));
    else this.holdsDropped += 1;
  }

  /** take — the counts since the last take (expiries read from, and reset in, `leases`), then zero. */
  take(leases: LeaseTable): Omit<PoolTallyCounts, 'leasesOpened' | 'leasesReturned'> {
    const counts = {
      leasesExpired: leases.expiredLeases,
      tokensExpired: leases.expiredTokens,
      holdsUs: this.holdsUs,
      holdsDropped: this.holdsDropped,
      classClaimsRefused: this.classClaimsRefused,
      clockDrifts: this.clockDrifts,
      calls: this.calls.counts(),
    };
    leases.expiredLeases = 0;
    leases.expiredTokens = 0;
    this.holdsUs = [];
    this.holdsDropped = 0;
    this.classClaimsRefused = 0;
    this.clockDrifts = 0;
    this.calls.clear();
    return counts;
  }
}

/** CallSums — running sums of calls, each at most Number.MAX_SAFE_INTEGER (a total never wraps or loses precision). */
class CallSums {
  private admitted = 0;
  private denied = 0;
  private shadowDenied = 0;

  add(calls: CallCounts): void {
    this.admitted = Math.min(Number.MAX_SAFE_INTEGER, this.admitted + calls.admitted);
    this.denied = Math.min(Number.MAX_SAFE_INTEGER, this.denied + calls.denied);
    this.shadowDenied = Math.min(Number.MAX_SAFE_INTEGER, this.shadowDenied + calls.shadowDenied);
  }

  /** counts — the sums, NO_CALLS itself when all three are 0. */
  counts(): CallCounts {
    const { admitted, denied, shadowDenied } = this;
    return admitted === 0 && denied === 0 && shadowDenied === 0 ? NO_CALLS : { admitted, denied, shadowDenied };
  }

  clear(): void {
    this.admitted = 0;
    this.denied = 0;
    this.shadowDenied = 0;
  }
}
