/**
 * ClockWatch: how fast an agent's clock runs against the coordinator's,
 * from the readings its acquires carry (`clockMs`), judged against a
 * pool's `clockDriftLimit` (docs/design.md, "Clocks").
 *
 * Rules:
 * - Only differences count: an agent's reading minus an earlier one of
 *   the same lease, against the coordinator's own elapsed time between
 *   receiving the two. Neither clock's origin matters.
 * - A request's delay in transit and in queues makes the coordinator's
 *   elapsed time look longer (or, for the earlier reading, shorter) than
 *   the agent's. So a clock is judged slow only against the least delayed
 *   reading seen (the smallest offset, coordinator minus agent), by more
 *   than the limit's share of the elapsed time plus CLOCK_SLACK_US; and
 *   fast only against the first reading, by as much. A delay of up to
 *   CLOCK_SLACK_US is never taken for drift.
 * - Nothing is judged before CLOCK_BASELINE_US of the coordinator's time:
 *   drift of a fraction `d` shows after about CLOCK_SLACK_US / (d − limit).
 * - A drift counts only when it shows twice in a row, the second time on a
 *   track restarted at the first, alike in way and rate (judgeClock):
 *   delays come and go, a drifting clock stays; so detection takes twice
 *   as long.
 * - A clock is verified once a reading is judged within the limit, over
 *   at least the baseline, with no drift suspected; a suspicion that does
 *   not show again within CONFIRM_TIMES its time is dropped.
 * - A slow clock's rate is measured against the least delayed reading,
 *   which can only make it look slower than it is: the stretch the pool
 *   applies to the lease's expiry (`stretch`) errs long, never short.
 *
 * Pure: no clock of its own, no I/O.
 */

/** CLOCK_SLACK_US — the transit and queueing delay a judgement tolerates, µs. */
export const CLOCK_SLACK_US = 500_000;

/** CLOCK_BASELINE_US — the least coordinator time between two readings before a clock is judged, µs. */
export const CLOCK_BASELINE_US = 1_000_000;

/** CLOCK_STRETCH_MAX — the most a slow clock's lease expiry is stretched: clocks slower than 1/this are beyond what the pool protects. */
export const CLOCK_STRETCH_MAX = 10;

const US_PER_MS = 1000;

/** ClockTrack — the readings a clock is judged against since its track (re)started, and the drift a first judgement suspected. */
export interface ClockTrack {
  firstAgentUs: number;
  firstCoordUs: number;
  lowAgentUs: number;
  lowCoordUs: number;
  /** The drift suspected when the track restarted, or null. */
  suspect: Drift | null;
  /** Whether a reading was judged within the limit, over at least the baseline, with no drift suspected. */
  verified: boolean;
}

/** Drift — a clock found off: which way, its rate (the agent's elapsed time over the coordinator's) and over how long, µs. */
export interface Drift {
  readonly kind: 'slow' | 'fast';
  readonly rate: number;
  readonly overUs: number;
}

/** ClockVerdict — a reading judged: within the limit (or not judged yet), or a drift found twice. */
export type ClockVerdict = { readonly kind: 'within' } | Drift;

const WITHIN: ClockVerdict = { kind: 'within' };

/** startTrack — a track that starts at the agent's reading `clockMs`, received at the coordinator's `nowUs`. */
export function startTrack(clockMs: number, nowUs: number): ClockTrack {
  const agentUs = clockMs * US_PER_MS;
  return { firstAgentUs: agentUs, firstCoordUs: nowUs, lowAgentUs: agentUs, lowCoordUs: nowUs, suspect: null, verified: false };
}

/**
 * judgeClock — the agent's reading `clockMs`, received at `nowUs`, judged
 * against `track` with the drift limit `limit` (a fraction, > 0). A drift
 * is reported only when it shows twice in a row alike (`confirms`): the
 * first time, the track restarts at this reading with the drift suspected.
 * A stall of the coordinator (every reading after it late) or a late
 * retry reads as one drift and then its opposite, or as two that differ
 * in rate; a clock that does drift keeps drifting the same way, at the
 * same rate.
 */
export function judgeClock(track: ClockTrack, clockMs: number, nowUs: number, limit: number): ClockVerdict {
  const agentUs = clockMs * US_PER_MS;
  const drift = judged(track, agentUs, nowUs, limit);
  if (drift !== null) {
    if (track.suspect !== null && confirms(track.suspect, drift, limit)) return drift;
    Object.assign(track, startTrack(clockMs, nowUs), { suspect: drift });
    return WITHIN;
  }
  const sinceFirstUs = nowUs - track.firstCoordUs;
  // A suspicion that did not show again in the time it could have (confirms) is dropped.
  if (track.suspect !== null && sinceFirstUs > CONFIRM_TIMES * track.suspect.overUs + CLOCK_BASELINE_US) track.suspect = null;
  if (track.suspect === null && sinceFirstUs >= CLOCK_BASELINE_US) track.verified = true;
  if (nowUs - agentUs < track.lowCoordUs - track.lowAgentUs) {
    track.lowAgentUs = agentUs;
    track.lowCoordUs = nowUs;
  }
  return WITHIN;
}

/**
 * confirms — whether `drift`, found on a track restarted at `suspect`,
 * confirms it: the same way, within CONFIRM_TIMES its time, at a rate off
 * by no more than the limit or a quarter of the suspected drift.
 */
function confirms(suspect: Drift, drift: Drift, limit: number): boolean {
  if (suspect.kind !== drift.kind || drift.overUs > CONFIRM_TIMES * suspect.overUs + CLOCK_BASELINE_US) return false;
  return Math.abs(drift.rate - suspect.rate) <= Math.max(limit, Math.abs(1 - suspect.rate) / 4);
}

/** CONFIRM_TIMES — a drift confirms a suspicion found over `overUs` only within this many times that (plus the baseline). */
const CONFIRM_TIMES = 4;

function judged(track: ClockTrack, agentUs: number, nowUs: number, limit: number): Drift | null {
  const sinceLowUs = nowUs - track.lowCoordUs;
  if (sinceLowUs >= CLOCK_BASELINE_US) {
    const agentElapsedUs = agentUs - track.lowAgentUs;
    if (sinceLowUs - agentElapsedUs > limit * sinceLowUs + CLOCK_SLACK_US) {
      return { kind: 'slow', rate: Math.max(0, agentElapsedUs) / sinceLowUs, overUs: sinceLowUs };
    }
  }
  const sinceFirstUs = nowUs - track.firstCoordUs;
  if (sinceFirstUs >= CLOCK_BASELINE_US) {
    const agentElapsedUs = agentUs - track.firstAgentUs;
    if (agentElapsedUs - sinceFirstUs > limit * sinceFirstUs + CLOCK_SLACK_US) {
      return { kind: 'fast', rate: agentElapsedUs / sinceFirstUs, overUs: sinceFirstUs };
    }
  }
  return null;
}

/** stretch — how much longer than the coordinator's TTL a lease of a clock of `verdict` may be spent: 1/rate for a slow clock, up to CLOCK_STRETCH_MAX. */
export function stretch(verdict: ClockVerdict): number {
  if (verdict.kind !== 'slow') return 1;
  return verdict.rate * CLOCK_STRETCH_MAX <= 1 ? CLOCK_STRETCH_MAX : 1 / verdict.rate;
}
