/**
 * recoveredRate — after the last fault has settled (its end plus one TTL
 * plus a second), the admitted rate as a fraction of the refill rate, if the
 * fleet offered enough demand to saturate the pool then (≥ 1.5·r in every
 * second of the window); null when it did not, or the window is under 3 s.
 */
import type { SimConfig, SimResult } from './sim-config.js';
import { faultsEndUs } from './fault-span.js';
import { SLICE_US } from './sim-metrics.js';
import { runSimulation } from './simulation.js';

const US_PER_S = 1_000_000;
/** The window starts this long after the last fault's end plus one TTL, µs. */
const SETTLE_US = 1_000_000;
/** A window shorter than this says nothing, µs. */
const WINDOW_US_MIN = 3_000_000;
/** Saturated: every second of the window offered at least this multiple of the refill rate. */
const SATURATING_LOAD = 1.5;
/** The share of the fault-free twin's admitted rate a fleet must reach after its faults. */
const CONVERGED_SHARE_MIN = 0.75;

export function recoveredRate(config: SimConfig, result: SimResult): number | null {
  const fromUs = faultsEndUs(config) + config.pool.leaseTtlMs * 1000 + SETTLE_US;
  const first = Math.ceil(fromUs / SLICE_US);
  const last = Math.floor(config.durationUs / SLICE_US);
  if ((last - first) * SLICE_US < WINDOW_US_MIN) return null;
  const refillPerSlice = (config.pool.refill.tokens * SLICE_US) / (config.pool.refill.periodMs * 1000);
  const slicesPerSecond = US_PER_S / SLICE_US;
  for (let s = first; s + slicesPerSecond <= last; s += slicesPerSecond) {
    const offered = result.offeredPerSlice.slice(s, s + slicesPerSecond).reduce((a, b) => a + b, 0);
    if (offered < SATURATING_LOAD * refillPerSlice * slicesPerSecond) return null;
  }
  const admitted = result.admittedPerSlice.slice(first, last).reduce((a, b) => a + b, 0);
  return admitted / (refillPerSlice * (last - first));
}

/** How much longer a scenario runs when its first verdict is "not converged", µs: a few seconds can be bad luck. */
const CONFIRM_EXTRA_US = 20_000_000;

/**
 * convergenceProblem — once the faults have settled, a saturated fleet must
 * admit at least 75% of what the same fleet (same seed, no faults) admits in
 * the same window; null when it does or the check does not apply (a
 * window pool, for now; a run with hostile clients). A fleet that falls short is judged again over a
 * run 20 s longer, both ways: with few agents, lost messages and short
 * TTLs a few seconds of the fault-free twin itself swing between 60% and
 * 100% of r (seed 1406960398), while a fleet that is really stuck stays so.
 */
export function convergenceProblem(config: SimConfig, result: SimResult): string | null {
  // Not for a window pool: a saturated one admits N at the start of each window and then nothing, so a
  // few seconds after the faults hold between k−1 and k+1 windows' worth depending on the phase, which a
  // takeover (everything cools for W) shifts; comparing them with the twin's says nothing about liveness.
  if (config.pool.window === true) return null;
  // Not with hostile clients: the honest agents' rate is then what the attackers leave them, which swings
  // with when the sybils' leases lapse (2–30% of r either side of the faults, rate pools, seeds 100276 and
  // 100440); what the attackers take is the fair-share check's (hostile-fairness.ts).
  if (config.hostile !== undefined) return null;
  if (judge(config, result) === null) return null;
  const longer = { ...config, durationUs: config.durationUs + CONFIRM_EXTRA_US };
  return judge(longer, runSimulation(longer));
}

function judge(config: SimConfig, result: SimResult): string | null {
  const recovered = recoveredRate(config, result);
  if (recovered === null || config.faults.length + config.partitions.length === 0) return null;
  const twin = recoveredRate(config, runSimulation({ ...config, faults: [], partitions: [] })) ?? 0;
  return recovered < CONVERGED_SHARE_MIN * twin
    ? `rate after the faults ${(recovered * 100).toFixed(1)}% of r, without them ${(twin * 100).toFixed(1)}%`
    : null;
}
