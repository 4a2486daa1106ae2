/**
 * Workloads: the arrivals a fleet sees, generated up front from a seed so
 * every strategy compared by the sweep faces the very same requests.
 *
 * Demand is given as `load`, a multiple of the pool's refill rate, shared
 * among the agents by each shape:
 * - steady: equal Poisson streams.
 * - bursty: equal on/off streams (`onMs`, `offMs`), phases random per agent.
 * - diurnal: equal streams whose rate swings ±80% over `periodMs`.
 * - zipf: agent i gets a share ∝ 1/(i+1)^s.
 * - churn: equal streams; each agent is present for random spans (mean
 *   `upMs`) separated by absences (mean `downMs`), and comes back as a new
 *   agent (new id, no lease).
 * - weighted: steady, with costs 1, 5 and 20 (70/20/10%).
 * A fraction `takeShare` of requests wait (`take`, up to `takeTimeoutMs`)
 * instead of failing fast.
 */
import type { Random } from '../harness/random.js';

export type WorkloadName = 'steady' | 'bursty' | 'diurnal' | 'zipf' | 'churn' | 'weighted';

export interface WorkloadSpec {
  readonly name: WorkloadName;
  /** Offered demand as a multiple of the refill rate. */
  readonly load: number;
  readonly onMs?: number;
  readonly offMs?: number;
  readonly periodMs?: number;
  readonly s?: number;
  readonly upMs?: number;
  readonly downMs?: number;
  readonly takeShare?: number;
  readonly takeTimeoutMs?: number;
}

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
}

export interface Workload {
  readonly arrivals: readonly Arrival[];
  readonly presence: readonly Presence[];
  /** Per agent slot: mean offered tokens per second. */
  readonly demandPerSecond: readonly number[];
}

function shares(spec: WorkloadSpec, agents: number): number[] {
  if (spec.name !== 'zipf') return Array.from({ length: agents }, () => 1 / agents);
  const s = spec.s ?? 1.2;
  const raw = Array.from({ length: agents }, (_, i) => 1 / (i + 1) ** s);
  const total = raw.reduce((a, b) => a + b, 0);
  return raw.map((x) => x / total);
}

function presenceOf(spec: WorkloadSpec, agents: number, durationUs: number, random: Random): Presence[] {
  const spans: Presence[] = [];
  for (let agent = 0; agent < agents; agent += 1) {
    if (spec.name !== 'churn') {
      spans.push({ agent, incarnation: 0, fromUs: 0, toUs: durationUs });
      continue;
    }
    const upUs = (spec.upMs ?? 10_000) * 1000;
    const downUs = (spec.downMs ?? 5_000) * 1000;
    let t = random.next() < 0.7 ? 0 : Math.round(random.exponential(downUs));
    for (let incarnation = 0; t < durationUs; incarnation += 1) {
      const end = Math.min(durationUs, t + Math.max(1000, Math.round(random.exponential(upUs))));
      spans.push({ agent, incarnation, fromUs: t, toUs: end });
      t = end + Math.max(1000, Math.round(random.exponential(downUs)));
    }
  }
  return spans;
}

function rateFactor(spec: WorkloadSpec, tUs: number, phaseUs: number): number {
  if (spec.name === 'bursty') {
    const onUs = (spec.onMs ?? 500) * 1000;
    const offUs = (spec.offMs ?? 1500) * 1000;
    return ((tUs + phaseUs) % (onUs + offUs)) < onUs ? (onUs + offUs) / onUs : 0;
  }
  if (spec.name === 'diurnal') {
    const periodUs = (spec.periodMs ?? 20_000) * 1000;
    return 1 + 0.8 * Math.sin((2 * Math.PI * (tUs + phaseUs)) / periodUs);
  }
  return 1;
}

function costOf(spec: WorkloadSpec, random: Random): number {
  if (spec.name !== 'weighted') return 1;
  const u = random.next();
  return u < 0.7 ? 1 : u < 0.9 ? 5 : 20;
}

/** meanCost — average cost of one request of this workload. */
export function meanCost(spec: WorkloadSpec): number {
  return spec.name === 'weighted' ? 0.7 + 0.2 * 5 + 0.1 * 20 : 1;
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
  const peakFactor = spec.name === 'bursty' ? ((spec.onMs ?? 500) + (spec.offMs ?? 1500)) / (spec.onMs ?? 500) : spec.name === 'diurnal' ? 1.8 : 1;
  const takeShare = spec.takeShare ?? 0.2;
  const takeTimeoutMs = spec.takeTimeoutMs ?? 200;
  for (const span of presence) {
    const requestsPerSecond = (demandPerSecond[span.agent] as number) / meanCost(spec);
    const peakPerUs = (requestsPerSecond * peakFactor) / 1e6;
    if (peakPerUs <= 0) continue;
    const phaseUs = Math.floor(random.next() * 60_000_000);
    for (let t = span.fromUs + random.exponential(1 / peakPerUs); t < span.toUs; t += random.exponential(1 / peakPerUs)) {
      const tUs = Math.floor(t);
      if (random.next() * peakFactor >= rateFactor(spec, tUs, phaseUs)) continue;
      const waitMs = random.next() < takeShare ? takeTimeoutMs : 0;
      arrivals.push({ tUs, agent: span.agent, incarnation: span.incarnation, cost: costOf(spec, random), waitMs });
    }
  }
  arrivals.sort((a, b) => a.tUs - b.tUs || a.agent - b.agent);
  return { arrivals, presence, demandPerSecond };
}
