/**
 * Acquires per second against the number of live leases, for `npm run
 * bench`: the real coordinator core in process, bytes in through `receive`
 * as the NATS adapter hands them, so the figure is the coordinator's own
 * work and not the bus's.
 *
 * For each lease mode (rate, chunk) and each count n, a fresh core opens n
 * leases on one pool (distinct agents, each with its own secret, varied
 * demands whose sum is about twice the refill, so rate shares are set by
 * the water level at every n) with a TTL long enough that none expires;
 * then live agents picked at random renew their own lease (their secret,
 * the next seq, the lease id and tokens from their last grant) in batches
 * of distinct agents. Only the core's calls are timed: `receive`, the
 * deadline the adapter asks after each, and the ticks virtual time makes
 * due (every TICK_MS_MAX at most, as the adapter's timer); building the
 * requests and reading the grants is not. Virtual time advances
 * VIRTUAL_US_PER_CALL per request.
 *
 * Time is the process's CPU time (user + system, all its threads, so the
 * garbage collector's too), not the wall clock: on a shared machine the
 * wall clock also counts the time other processes had the CPU, which
 * halved or thirded the figure at a load average of 8–10 on two cores. So
 * a figure is acquires per second of one core given to the coordinator.
 *
 * Beside it, the garbage collector's time over the measured renewals
 * (v8.GCProfiler), per renewal: the collections the whole loop set off,
 * building the requests included, so a little above the core's own share,
 * but enough to tell how much of a fall with n is the collector.
 */
import { GCProfiler } from 'node:v8';
import { CoordinatorCore, parseCoordinatorConfig, TICK_MS_MAX } from '@tokenlease/coordinator/internal';
import { subjectFor, type Reply } from '@tokenlease/shared';
import { seededRandom, type Random } from '@tokenlease/shared/testing';
import { SimulatedAgents } from './simulated-agents.js';

/** LEASE_COUNTS — the numbers of live leases measured. */
export const LEASE_COUNTS = [1_000, 10_000, 100_000] as const;
export type LeaseCount = (typeof LEASE_COUNTS)[number];
export type LeaseModeName = 'rate' | 'chunk';

const POOL = 'scaling';
const PREFIX = 'tokenlease';
const CAPACITY_TOKENS = 1_000_000_000;
const REFILL_PER_SECOND = 1_000_000_000;
const TTL_MS = 600_000;
const US_PER_S = 1_000_000;
/** Virtual time per request: 100,000 requests per virtual second. */
const VIRTUAL_US_PER_CALL = 10;
const BATCH_SIZE = 500;
const WARMUP_MS = 200;
const SEED = 2026;

/** ScalingFigure — one mode at one lease count. */
export interface ScalingFigure {
  readonly mode: LeaseModeName;
  readonly leases: LeaseCount;
  readonly acquiresPerSecond: number;
  /** Renewals timed. */
  readonly calls: number;
  /** The garbage collector's time over the measured renewals, per renewal, µs. */
  readonly gcUsPerCall: number;
  /** Their CPU time, ms. */
  readonly cpuMs: number;
  /** Wall time to open the n leases, ms (not part of the figure). */
  readonly openMs: number;
}

class ScalingRun {
  private readonly core: CoordinatorCore<number>;
  private readonly subject = subjectFor(PREFIX, 'acquire', POOL);
  private readonly agents: SimulatedAgents;
  private nowUs: number;
  private nextTickUs: number;
  private readonly picks: number[];

  constructor(
    private readonly mode: LeaseModeName,
    private readonly n: number,
    private readonly random: Random,
  ) {
    const pool = {
      capacity: CAPACITY_TOKENS,
      refill: `${REFILL_PER_SECOND}/s`,
      leaseTtlMs: TTL_MS,
      maxLeaseTokens: 1000,
      minGrantTokens: 1,
      maxLeases: 2 * n,
      leaseMode: mode,
    };
    const config = parseCoordinatorConfig('bench', { subjectPrefix: PREFIX, pools: { [POOL]: pool } });
    this.core = new CoordinatorCore<number>(config, 1, 0);
    // Past the quiet period (one TTL), so the pool refills and rates are assigned.
    this.nowUs = (TTL_MS / 1000 + 1) * US_PER_S;
    this.nextTickUs = this.nowUs;
    // Demands average 2·refill/n, so the sum is about twice the refill at every n.
    this.agents = new SimulatedAgents(n, random, POOL, Math.max(2, Math.floor((4 * REFILL_PER_SECOND) / n)));
    this.picks = Array.from({ length: n }, (_, i) => i);
  }

  /** open — every agent's first acquire; returns the wall time it took, ms. */
  open(): number {
    const startMs = performance.now();
    for (let i = 0; i < this.n; i += BATCH_SIZE) {
      const batch = this.picks.slice(i, i + BATCH_SIZE);
      this.run(batch, this.payloads(batch));
    }
    const opened = this.agents.opened;
    const live = this.core.pool(POOL)?.leases.size ?? 0;
    if (opened !== this.n || live !== this.n) throw new Error(`${this.mode} pool: ${opened} leases opened, ${live} live, of ${this.n}`);
    return performance.now() - startMs;
  }

  /** measure — renewals by random live agents for `ms` of CPU time in the core (after a warm-up); returns the renewals timed, that time, and the collector's time meanwhile (µs). */
  measure(ms: number): { calls: number; cpuMs: number; gcUs: number } {
    this.renewFor(WARMUP_MS);
    const profiler = new GCProfiler();
    profiler.start();
    const { calls, cpuMs } = this.renewFor(ms);
    const gcUs = profiler.stop().statistics.reduce((sum, s) => sum + s.cost, 0);
    const live = this.core.pool(POOL)?.leases.size ?? 0;
    if (live !== this.n)
      throw new Error(`${this.mode} pool: ${live} live leases after renewing, of ${this.n}; some expired or were refused`);
    return { calls, cpuMs, gcUs };
  }

  private renewFor(ms: number): { calls: number; cpuMs: number } {
    let calls = 0;
    let cpuMs = 0;
    while (cpuMs < ms) {
      const batch = this.distinctAgents(Math.min(BATCH_SIZE, this.n));
      cpuMs += this.run(batch, this.payloads(batch));
      calls += batch.length;
    }
    return { calls, cpuMs };
  }

  /** distinctAgents — `k` distinct agent indexes at random (a partial Fisher–Yates shuffle of `picks`). */
  private distinctAgents(k: number): number[] {
    const picks = this.picks;
    for (let i = 0; i < k; i += 1) {
      const j = i + Math.floor(this.random.next() * (picks.length - i));
      const t = picks[i] as number;
      picks[i] = picks[j] as number;
      picks[j] = t;
    }
    return picks.slice(0, k);
  }

  /** payloads — each agent's next acquire. */
  private payloads(batch: readonly number[]): Uint8Array[] {
    return batch.map((index) => this.agents.request(index));
  }

  /** run — hands the batch's requests to the core, one at a time as the adapter does; returns the CPU time it took, ms. */
  private run(batch: readonly number[], payloads: readonly Uint8Array[]): number {
    const replies: Reply[] = [];
    const start = process.cpuUsage();
    for (let i = 0; i < payloads.length; i += 1) {
      this.nowUs += VIRTUAL_US_PER_CALL;
      if (this.nowUs >= this.nextTickUs) {
        this.core.tick(this.nowUs);
        this.nextTickUs = Math.min(this.nowUs + TICK_MS_MAX * 1000, this.core.nextDeadlineUs());
      }
      const out = this.core.receive(this.subject, payloads[i] as Uint8Array, i, this.nowUs);
      this.nextTickUs = Math.min(this.nextTickUs, this.core.touchedDeadlineUs());
      for (const d of out) replies[d.to] = d.reply;
    }
    const cpu = process.cpuUsage(start);
    for (const [i, index] of batch.entries()) this.agents.settle(index, replies[i], `${this.mode} pool`);
    return (cpu.user + cpu.system) / 1000;
  }
}

/** leaseScaling — acquires per CPU second on a `mode` pool at each count of live leases, `measureMs` of CPU time each. */
export function leaseScaling(mode: LeaseModeName, measureMs: number, counts: readonly LeaseCount[] = LEASE_COUNTS): ScalingFigure[] {
  return counts.map((leases) => {
    const run = new ScalingRun(mode, leases, seededRandom(SEED + leases));
    const openMs = run.open();
    const { calls, cpuMs, gcUs } = run.measure(measureMs);
    return {
      mode,
      leases,
      acquiresPerSecond: Math.round(calls / (cpuMs / 1000)),
      calls,
      gcUsPerCall: Math.round((gcUs / calls) * 100) / 100,
      cpuMs: Math.round(cpuMs),
      openMs: Math.round(openMs),
    };
  });
}
