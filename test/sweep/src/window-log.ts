/**
 * The baselines of a window sweep (`--window N/W`), on the same arrivals as
 * the leases:
 * - central: an exact per-request sliding-window log, as users run one in
 *   Redis today: every request makes a round-trip to it, and it admits a
 *   request of cost c iff the admissions of the last W plus c are at most
 *   N. It is the yardstick of utilization.
 * - local: each agent keeps its own log of N/agents (at least 1) per W: no
 *   coordination, and the limit idles wherever demand is low.
 * Both let `take()` requests wait (reserve) up to their timeout, in FIFO
 * order, as SharedBucket does for buckets.
 *
 * Windows are half-open: an admission at t is out of the window at t + W,
 * as in checkWindows (two admissions W or more apart never share a window).
 */
import { seededRandom, WindowLog, type Admission } from '@tokenlease/shared/testing';
import { Network, type Arrival, type NetworkSpec, type Workload } from '@tokenlease/sim';
import type { Admitted } from './shared-bucket.js';

interface Waiting {
  readonly cost: number;
  readonly arrivedUs: number;
  readonly deadlineUs: number;
  readonly admitted: Admitted;
}

/** SlidingLog — one exact sliding-window log of at most `limitTokens` per `windowUs`, with the Limiter's try and take. */
export class SlidingLog {
  private readonly log: WindowLog;
  private nowUs = 0;
  private readonly queue: Waiting[] = [];

  constructor(
    readonly limitTokens: number,
    readonly windowUs: number,
  ) {
    this.log = new WindowLog(windowUs);
  }

  /** offer — a request of `cost` at `nowUs` (non-decreasing) that may wait `waitUs` (0: a try); `admitted` is called if and when it is. */
  offer(cost: number, nowUs: number, waitUs: number, admitted: Admitted): void {
    this.serveUntil(nowUs);
    this.nowUs = Math.max(this.nowUs, nowUs);
    if (cost > this.limitTokens) return;
    if ((waitUs === 0 || this.queue.length === 0) && this.readyAtUs(cost) <= nowUs) {
      this.admit(cost, nowUs);
      admitted(nowUs, 0);
    } else if (waitUs > 0) {
      this.queue.push({ cost, arrivedUs: nowUs, deadlineUs: nowUs + waitUs, admitted });
    }
  }

  /** finish — serves or times out every request still waiting. */
  finish(): void {
    this.serveUntil(Infinity);
  }

  /** readyAtUs — the first instant, from now on, at which `cost` more fits in the window. */
  private readyAtUs(cost: number): number {
    this.log.expire(this.nowUs);
    return this.log.readyAtUs(cost, this.limitTokens, this.nowUs);
  }

  private admit(cost: number, nowUs: number): void {
    this.log.add(nowUs, cost);
  }

  private serveUntil(untilUs: number): void {
    for (let head = this.queue[0]; head !== undefined; head = this.queue[0]) {
      const readyUs = this.readyAtUs(head.cost);
      if (readyUs > head.deadlineUs) {
        if (head.deadlineUs > untilUs) return;
        this.queue.shift();
        continue;
      }
      if (readyUs > untilUs) return;
      this.nowUs = readyUs;
      this.admit(head.cost, readyUs);
      this.queue.shift();
      head.admitted(readyUs, readyUs - head.arrivedUs);
    }
  }
}

/** LogOutcome — what a baseline admitted: the admissions (for checkWindows), per agent, the waits and the round-trips. */
export interface LogOutcome {
  readonly admissions: readonly Admission[];
  readonly perAgentAdmitted: readonly number[];
  readonly waitsMs: readonly number[];
  readonly roundTrips: number;
}

function outcome(agents: number): { admissions: Admission[]; perAgentAdmitted: number[]; waitsMs: number[] } {
  return { admissions: [], perAgentAdmitted: Array.from({ length: agents }, () => 0), waitsMs: [] };
}

function recorder(o: ReturnType<typeof outcome>, a: Arrival, replyUs: number): Admitted {
  return (tUs, waitedUs) => {
    o.perAgentAdmitted[a.agent] = (o.perAgentAdmitted[a.agent] ?? 0) + a.cost;
    o.admissions.push({ tUs, cost: a.cost });
    if (a.waitMs > 0) o.waitsMs.push((waitedUs + replyUs) / 1000);
  };
}

/** centralLog — a round-trip per request to one exact sliding-window log across a network of `spec` (decided one way later). */
export function centralLog(
  workload: Workload,
  agents: number,
  limitTokens: number,
  windowUs: number,
  spec: NetworkSpec,
  seed: number,
): LogOutcome {
  const network = new Network({ ...spec, lossRate: 0, duplicateRate: 0 }, [], seededRandom(seed));
  const decided = workload.arrivals.map((a) => ({ a, atUs: network.arrivals(a.agent, a.tUs)[0] ?? a.tUs })).sort((x, y) => x.atUs - y.atUs);
  const o = outcome(agents);
  const log = new SlidingLog(limitTokens, windowUs);
  for (const { a, atUs } of decided) {
    const oneWayUs = atUs - a.tUs;
    const waitUs = a.waitMs > 0 ? Math.max(1, a.waitMs * 1000 - 2 * oneWayUs) : 0;
    log.offer(a.cost, atUs, waitUs, recorder(o, a, 2 * oneWayUs));
  }
  log.finish();
  return { ...o, roundTrips: workload.arrivals.length };
}

/** localLogs — an exact log of N/agents (at least 1) per W for each agent incarnation, no coordination. */
export function localLogs(workload: Workload, agents: number, limitTokens: number, windowUs: number): LogOutcome {
  const perLimit = Math.max(1, Math.floor(limitTokens / agents));
  const logs = new Map<string, SlidingLog>();
  const o = outcome(agents);
  for (const a of workload.arrivals) {
    const key = `${a.agent}.${a.incarnation}`;
    let log = logs.get(key);
    if (log === undefined) {
      log = new SlidingLog(perLimit, windowUs);
      logs.set(key, log);
    }
    log.offer(a.cost, a.tUs, a.waitMs * 1000, recorder(o, a, 0));
  }
  for (const log of logs.values()) log.finish();
  return { ...o, roundTrips: 0 };
}
