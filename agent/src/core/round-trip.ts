/**
 * RoundTrip: the lease keeper's estimate of its round-trip to the
 * coordinator, and how far ahead of an expiry that makes it renew.
 *
 * Rules:
 * - The estimate is the smallest of the last `RTT_SAMPLES_MAX` samples:
 *   queueing only ever adds delay, so the smallest is the path's own cost,
 *   and a window forgets a path that got slower.
 * - Only a reply to a request sent once is a sample: the reply to a retried
 *   sequence cannot say which attempt it answers.
 * - Before any sample the estimate is `RTT_US_ASSUMED`; a sample is at
 *   least `RTT_US_MIN`.
 * - A lease renews `RENEW_LEAD_RTTS` round-trips plus `RENEW_LEAD_US_SLACK`
 *   before its agent-side expiry, so a renewal lost once can still be
 *   retried before the balance stops being spendable.
 */
import type { InFlight } from './keeper-types.js';

/** Round-trip samples kept. */
const RTT_SAMPLES_MAX = 16;
/** The round-trip assumed before the first sample, µs. */
const RTT_US_ASSUMED = 2000;
/** The smallest round-trip sample, µs: a reply handled in the instant of its send still took time. */
const RTT_US_MIN = 1;
/** Renew this many round-trips plus `RENEW_LEAD_US_SLACK` before the agent-side expiry. */
const RENEW_LEAD_RTTS = 4;
const RENEW_LEAD_US_SLACK = 20_000;

export class RoundTrip {
  private readonly samplesUs: number[] = [];

  /** rttUs — the smallest recent round-trip, µs (before any sample: `RTT_US_ASSUMED`, 2 ms). */
  get rttUs(): number {
    return this.samplesUs.length === 0 ? RTT_US_ASSUMED : Math.min(...this.samplesUs);
  }

  /** answered — `flight` was answered at `nowUs`: a sample when it was sent once. */
  answered(flight: InFlight, nowUs: number): void {
    if (flight.attempts !== 1) return;
    this.samplesUs.push(Math.max(RTT_US_MIN, nowUs - flight.firstSentAtUs));
    if (this.samplesUs.length > RTT_SAMPLES_MAX) this.samplesUs.shift();
  }

  /** renewLeadUs — how long before an agent-side expiry a lease renews, µs. */
  renewLeadUs(): number {
    return RENEW_LEAD_RTTS * this.rttUs + RENEW_LEAD_US_SLACK;
  }
}
