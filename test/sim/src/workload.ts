/**
 * Workloads: the arrivals a fleet sees, generated up front from a seed so
 * every strategy compared by the sweep faces the very same requests.
 *
 * Demand is `load`, a multiple of the pool's refill rate, shared by the
 * agents according to the shape:
 * - steady: equal Poisson streams; optionally the first `idleShare` of the
 *   agents stop offering anything from `idleFromMs` on (a demand shift).
 * - bursty: every agent bursts together for `onMs`, then is silent `offMs`.
 * - diurnal: equal streams swinging by ±`amplitude` over `periodMs`.
 * - zipf: agent i gets a share ∝ 1/(i+1)^exponent.
 * - churn: agents are present for random spans (mean `upMs`) separated by
 *   absences (mean `downMs`); a `crashFraction` of departures are crashes
 *   (lease stranded), the rest close (lease returned); each comes back as
 *   a new agent.
 * - weighted: steady streams of weighted costs: a `heavyFraction` of
 *   requests cost `heavyRatio` tokens, the rest 1.
 * A share `takeShare` (default 0.2) of requests wait with `take()` up to
 * `takeTimeoutMs` (default 200) instead of failing fast.
 */
import type { Random } from '@tokenlease/shared/testing';

const US_PER_S = 1_000_000;
/** TAKE_SHARE_DEFAULT — the share of requests that wait with `take()` unless the spec says, a fraction. */
export const TAKE_SHARE_DEFAULT = 0.2;
/** TAKE_TIMEOUT_MS_DEFAULT — how long a `take()` waits unless the spec says, ms. */
export const TAKE_TIMEOUT_MS_DEFAULT = 200;
/** A churning agent's stay, and its absence, last at least this long, µs. */
const CHURN_SPAN_US_MIN = 1000;

export type WorkloadName = 'steady' | 'bursty' | 'diurnal' | 'zipf' | 'churn' | 'weighted';

/** How requests may wait: a share of them call `take()` with a timeout instead of `tryTake()`. */
export interface Waiting {
  readonly takeShare?: number;
  readonly takeTimeoutMs?: number;
}

/**
 * WorkloadSpec — one demand shape. `load` is the fleet's mean offered demand
 * as a multiple of the refill rate; durations are ms; fractions in [0, 1].
 */
export type WorkloadSpec = Waiting &
  (
    | { readonly name: 'steady'; readonly load: number; readonly idleFromMs?: number; readonly idleShare?: number }
    | { readonly name: 'bursty'; readonly load: number; readonly onMs: number; readonly offMs: number }
    | { readonly name: 'diurnal'; readonly load: number; readonly periodMs: number; readonly amplitude: number }
    | { readonly name: 'zipf'; readonly load: number; readonly exponent: number }
    | { readonly name: 'churn'; readonly load: number; readonly upMs: number; readonly downMs: number; readonly crashFraction: number }
    | { readonly name: 'weighted'; readonly load: number; readonly heavyFraction: number; readonly heavyRatio: number }
  );

export interface Arrival {
  readonly tUs: number;
  /** Agent slot 0..N−1. */
  readonly agent: number;
  /** Incarnation of the agent slot (churn starts a new agent each time). */
  readonly incarnation: number;
  readonly cost: number;
  /** Wait up to this long (take) instead of failing fast; 0 for tryTake. */
  readonly waitMs: number;
}

export interface Presence {
  readonly agent: number;
  readonly incarnation: number;
  readonly fromUs: number;
  readonly toUs: number;
  /** The agent leaves by crashing (its lease stranded) rather than closing. */
  readonly crashes: boolean;
}

export interface Workload {
  readonly arrivals: readonly Arrival[];
  readonly presence: readonly Presence[];
  /** Per agent slot: mean offered tokens per second. */
  readonly demandPerSecond: readonly number[];
}

function shares(spec: WorkloadSpec, agents: number): number[] {
  if (spec.name !== 'zipf') return Array.from({ length: agents }, () => 1 / agents);
  const s = spec.exponent;
  const raw = Array.from({ length: agents }, (_, i) => 1 / (i + 1) ** s);
  const total = raw.reduce((a, b) => a + b, 0);
  return raw.map((x) => x / total);
}

function presenceOf(spec: WorkloadSpec, agents: number, durationUs: number, random: Random): Presence[] {
  const spans: Presence[] = [];
  for (let agent = 0; agent < agents; agent += 1) {
    if (spec.name !== 'churn') {
      spans.push({ agent, incarnation: 0, fromUs: 0, toUs: durationUs, crashes: false });
      continue;
    }
    const upUs = spec.upMs * 1000;
    const downUs = spec.downMs * 1000;
    let t = random.next() < upUs / (upUs + downUs) ? 0 : Math.round(random.exponential(downUs));
    for (let incarnation = 0; t < durationUs; incarnation += 1) {
      const end = Math.min(durationUs, t + Math.max(CHURN_SPAN_US_MIN, Math.round(random.exponential(upUs))));
      spans.push({ agent, incarnation, fromUs: t, toUs: end, crashes: random.next() < spec.crashFraction });
      t = end + Math.max(CHURN_SPAN_US_MIN, Math.round(random.exponential(downUs)));
    }
  }
  return spans;
}

/** rateFactor — the shape's demand at `tUs` relative to its mean (all agents in phase). */
function rateFactor(spec: WorkloadSpec, tUs: number): number {
  if (spec.name === 'bursty') {
    const onUs = spec.onMs * 1000;
    const cycleUs = onUs + spec.offMs * 1000;
    return tUs % cycleUs < onUs ? cycleUs / onUs : 0;
  }
  if (spec.name === 'diurnal') return 1 + spec.amplitude * Math.sin((2 * Math.PI * tUs) / (spec.periodMs * 1000));
  return 1;
}

function peakFactor(spec: WorkloadSpec): number {
  if (spec.name === 'bursty') return (spec.onMs + spec.offMs) / spec.onMs;
  if (spec.name === 'diurnal') return 1 + spec.amplitude;
  return 1;
}

function costOf(spec: WorkloadSpec, random: Random): number {
  if (spec.name !== 'weighted') return 1;
  return random.next() < spec.heavyFraction ? Math.max(1, Math.round(spec.heavyRatio)) : 1;
}

/** meanCost — average cost of one request of this workload. */
export function meanCost(spec: WorkloadSpec): number {
  if (spec.name !== 'weighted') return 1;
  return 1 - spec.heavyFraction + spec.heavyFraction * Math.max(1, Math.round(spec.heavyRatio));
}

/**
 * makeWorkload — the arrivals of `spec` for `agents` agents over
 * `durationUs`, for a pool refilled at `refillPerSecond` tokens/s.
 */
export function makeWorkload(spec: WorkloadSpec, agents: number, refillPerSecond: number, durationUs: number, random: Random): Workload {
  const share = shares(spec, agents);
  const presence = presenceOf(spec, agents, durationUs, random);
  const demandPerSecond = share.map((x) => x * spec.load * refillPerSecond);
  const arrivals: Arrival[] = [];
  const peak = peakFactor(spec);
  const takeShare = spec.takeShare ?? TAKE_SHARE_DEFAULT;
  const takeTimeoutMs = spec.takeTimeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT;
  for (const span of presence) {
    const requestsPerSecond = (demandPerSecond[span.agent] as number) / meanCost(spec);
    const peakPerUs = (requestsPerSecond * peak) / US_PER_S;
    if (peakPerUs <= 0) continue;
    for (let t = span.fromUs + random.exponential(1 / peakPerUs); t < span.toUs; t += random.exponential(1 / peakPerUs)) {
      const tUs = Math.floor(t);
      if (random.next() * peak >= rateFactor(spec, tUs)) continue;
      if (
        spec.name === 'steady' &&
        spec.idleFromMs !== undefined &&
        tUs >= spec.idleFromMs * 1000 &&
        span.agent < Math.round((spec.idleShare ?? 0.5) * agents)
      )
        continue;
      const waitMs = random.next() < takeShare ? takeTimeoutMs : 0;
      arrivals.push({ tUs, agent: span.agent, incarnation: span.incarnation, cost: costOf(spec, random), waitMs });
    }
  }
  arrivals.sort((a, b) => a.tUs - b.tUs || a.agent - b.agent);
  return { arrivals, presence, demandPerSecond };
}

/** IdleSpan — one agent slot silent from `fromUs` to `toUs` (µs of traffic), then offering `surge` times its own arrivals. */
export interface IdleSpan {
  readonly agent: number;
  readonly fromUs: number;
  readonly toUs: number;
  readonly surge: number;
}

/**
 * withIdleAgent — `workload` with `idle.agent` idle across a span and busy
 * after it: its arrivals in [fromUs, toUs) are dropped, and each of its
 * arrivals from `toUs` on comes `surge` times (1 µs apart), so it asks for
 * several times its share as soon as it is back.
 */
export function withIdleAgent(workload: Workload, idle: IdleSpan): Workload {
  const arrivals: Arrival[] = [];
  for (const a of workload.arrivals) {
    if (a.agent !== idle.agent || a.tUs < idle.fromUs) arrivals.push(a);
    else if (a.tUs >= idle.toUs) for (let k = 0; k < idle.surge; k += 1) arrivals.push({ ...a, tUs: a.tUs + k });
  }
  arrivals.sort((a, b) => a.tUs - b.tUs || a.agent - b.agent);
  return { ...workload, arrivals };
}
