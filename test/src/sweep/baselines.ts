/**
 * The two baselines every sweep compares leases with, on the same arrivals:
 * - central: every request makes a round-trip to one exact shared bucket
 *   (decided one network delay after it was sent): exact, and maximal
 *   coordination.
 * - local: each agent keeps its own bucket of capacity B/N refilled at r/N:
 *   no coordination, and capacity idles wherever demand is low.
 * Both let `take()` requests wait (reserve) up to their timeout.
 */
import { makeRate, type Rate } from '@tokenlease/shared';
import { checkEnvelope, type Admission } from '../harness/envelope.js';
import { seededRandom } from '../harness/random.js';
import { Network, type NetworkSpec } from '../sim/network.js';
import type { Workload } from '../sim/workload.js';
import { IdealBucket } from './ideal-bucket.js';

export interface BaselineOutcome {
  readonly admittedTokens: number;
  readonly admittedCount: number;
  readonly deniedCount: number;
  readonly roundTrips: number;
  readonly perAgentAdmitted: readonly number[];
  readonly waitsMs: readonly number[];
  readonly worstExcessTokens: number;
}

function outcome(agents: number): { perAgent: number[]; admissions: Admission[]; waitsMs: number[] } {
  return { perAgent: Array.from({ length: agents }, () => 0), admissions: [], waitsMs: [] };
}

/** idealAdmitted — tokens one shared exact bucket admits for these arrivals, deciding at once. */
export function idealAdmitted(workload: Workload, capacity: number, rate: Rate): number {
  const bucket = new IdealBucket(capacity, rate, 0);
  let admitted = 0;
  for (const a of workload.arrivals) if (bucket.take(a.cost, a.tUs, a.waitMs * 1000) !== null) admitted += a.cost;
  return admitted;
}

/** central — a round-trip per request to one exact bucket across a network of `spec`. */
export function central(workload: Workload, agents: number, capacity: number, rate: Rate, spec: NetworkSpec, seed: number): BaselineOutcome {
  const network = new Network({ ...spec, lossRate: 0, duplicateRate: 0 }, [], seededRandom(seed));
  const decided = workload.arrivals
    .map((a) => ({ a, atUs: network.arrivals(a.agent, a.tUs)[0] ?? a.tUs }))
    .sort((x, y) => x.atUs - y.atUs);
  const bucket = new IdealBucket(capacity, rate, 0);
  const o = outcome(agents);
  for (const { a, atUs } of decided) {
    const admittedUs = bucket.take(a.cost, atUs, a.waitMs * 1000 - 2 * spec.latencyUs);
    if (admittedUs === null) continue;
    o.perAgent[a.agent] = (o.perAgent[a.agent] ?? 0) + a.cost;
    o.admissions.push({ tUs: admittedUs, cost: a.cost });
    if (a.waitMs > 0) o.waitsMs.push((admittedUs - a.tUs + spec.latencyUs) / 1000);
  }
  return finish(o, workload.arrivals.length, workload.arrivals.length, capacity, rate);
}

/** local — independent buckets of B/N and r/N per agent slot (a new agent starts with a full one). */
export function local(workload: Workload, agents: number, capacity: number, rate: Rate): BaselineOutcome {
  const share = makeRate(rate.tokens, rate.periodMs * agents);
  const perCapacity = Math.max(1, Math.floor(capacity / agents));
  const buckets = new Map<string, IdealBucket>();
  const o = outcome(agents);
  for (const a of workload.arrivals) {
    const key = `${a.agent}.${a.incarnation}`;
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = new IdealBucket(perCapacity, share, a.tUs);
      buckets.set(key, bucket);
    }
    const admittedUs = bucket.take(a.cost, a.tUs, a.waitMs * 1000);
    if (admittedUs === null) continue;
    o.perAgent[a.agent] = (o.perAgent[a.agent] ?? 0) + a.cost;
    o.admissions.push({ tUs: admittedUs, cost: a.cost });
    if (a.waitMs > 0) o.waitsMs.push((admittedUs - a.tUs) / 1000);
  }
  return finish(o, 0, workload.arrivals.length, capacity, rate);
}

function finish(o: ReturnType<typeof outcome>, roundTrips: number, offered: number, capacity: number, rate: Rate): BaselineOutcome {
  const envelope = checkEnvelope(o.admissions, capacity, rate);
  return {
    admittedTokens: envelope.admittedTokens,
    admittedCount: o.admissions.length,
    deniedCount: offered - o.admissions.length,
    roundTrips,
    perAgentAdmitted: o.perAgent,
    waitsMs: o.waitsMs,
    worstExcessTokens: envelope.worstExcessTokens,
  };
}
