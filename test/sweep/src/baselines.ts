/**
 * The two baselines every sweep compares leases with, on the same arrivals:
 * - central: every request makes a round-trip to one exact shared bucket
 *   (decided one network delay after it was sent): exact, and maximal
 *   coordination. The bucket starts full at time 0. Replaying a trace, it
 *   decides each request at its arrival, in arrival order (a network of
 *   `null`): a delay the same for every request would change nothing, and a
 *   random one would reorder requests and make the count depend on the
 *   seed; so its admissions are exactly an exact bucket's over the trace.
 * - local: each agent keeps its own bucket of capacity B/N refilled at r/N:
 *   no coordination, and capacity idles wherever demand is low.
 * Both let `take()` requests wait (reserve) up to their timeout.
 */
import { makeRate, type Rate } from '@tokenlease/shared';
import { checkEnvelope, type Admission, seededRandom } from '@tokenlease/shared/testing';
import { Network, type NetworkSpec, type Arrival, type Workload } from '@tokenlease/sim';
import { SharedBucket, type Admitted } from './shared-bucket.js';

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

/** recorder — books an admission of `a`; a `take` also books its wait plus `replyUs` of travel. */
function recorder(o: ReturnType<typeof outcome>, a: Arrival, replyUs: number): Admitted {
  return (tUs, waitedUs) => {
    o.perAgent[a.agent] = (o.perAgent[a.agent] ?? 0) + a.cost;
    o.admissions.push({ tUs, cost: a.cost });
    if (a.waitMs > 0) o.waitsMs.push((waitedUs + replyUs) / 1000);
  };
}

/**
 * central — a round-trip per request to one exact bucket across a network of
 * `spec`; with `spec` null, each request is decided at its arrival, in order.
 */
export function central(
  workload: Workload,
  agents: number,
  capacity: number,
  rate: Rate,
  spec: NetworkSpec | null,
  seed: number,
): BaselineOutcome {
  const network = spec === null ? null : new Network({ ...spec, lossRate: 0, duplicateRate: 0 }, [], seededRandom(seed));
  const decided = workload.arrivals
    .map((a) => ({ a, atUs: network === null ? a.tUs : (network.arrivals(a.agent, a.tUs)[0] ?? a.tUs) }))
    .sort((x, y) => x.atUs - y.atUs);
  const o = outcome(agents);
  const bucket = new SharedBucket(capacity, rate, 0);
  for (const { a, atUs } of decided) {
    const oneWayUs = atUs - a.tUs;
    // A waiting request's reply needs the trip back too.
    const waitUs = a.waitMs > 0 ? Math.max(1, a.waitMs * 1000 - 2 * oneWayUs) : 0;
    bucket.offer(a.cost, atUs, waitUs, recorder(o, a, 2 * oneWayUs));
  }
  bucket.finish();
  return finish(o, workload.arrivals.length, workload.arrivals.length, capacity, rate);
}

/** local — independent buckets of B/N and r/N per agent (a new agent starts with a full one). */
export function local(workload: Workload, agents: number, capacity: number, rate: Rate): BaselineOutcome {
  const share = makeRate(rate.tokens, rate.periodMs * agents);
  const perCapacity = Math.max(1, Math.floor(capacity / agents));
  const buckets = new Map<string, SharedBucket>();
  const o = outcome(agents);
  for (const a of workload.arrivals) {
    const key = `${a.agent}.${a.incarnation}`;
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = new SharedBucket(perCapacity, share, a.tUs);
      buckets.set(key, bucket);
    }
    bucket.offer(a.cost, a.tUs, a.waitMs * 1000, recorder(o, a, 0));
  }
  for (const bucket of buckets.values()) bucket.finish();
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
