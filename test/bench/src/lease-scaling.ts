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
 * the next seq, the lease id and tokens from their last grant, and a clock
 * reading, as a real agent sends, so the pool's clock check runs) in
 * batches of distinct agents, handed over as the service's intake loop
 * hands a backlog (each READ_AHEAD_MAX named to `readAhead` first, then
 * each to `receive`). Only the core's calls are timed: `readAhead`,
 * `receive`, the deadline the adapter asks after each, and the ticks
 * virtual time makes due (every TICK_MS_MAX at most, as the adapter's
 * timer); building the requests and reading the grants is not. Virtual
 * time starts at a host uptime of 30 days (HOST_UPTIME_US: times as large
 * as a running coordinator's, so heap numbers as in production) and
 * advances VIRTUAL_US_PER_CALL per request.
 *
 * Time is the process's CPU time (user + system, all its threads, so the
 * garbage collector's too), not the wall clock: on a shared machine the
 * wall clock also counts the time other processes had the CPU, which
 * halved or thirded the figure at a load average of 8–10 on two cores. So
 * a figure is acquires per second of one core given to the coordinator.
 *
 * Each (mode, n) is measured in a child process of its own, so no count
 * inherits another's heap, and the counts of a mode take turns of
 * `turnMs` of CPU time (turns.ts), so a slow minute of a shared machine
 * falls on every count alike; a figure is its renewals over all its turns
 * per CPU second, and each turn's figure is kept, so that the share of 1k
 * a count keeps can be read pass by pass, each pass's counts measured in
 * the same second or two. `--lease-scaling-probe` measures one count
 * alone, by hand.
 *
 * Beside each figure:
 * - the garbage collector's time over the measured renewals
 *   (v8.GCProfiler), per renewal: the collections the whole loop set off,
 *   building the requests included, so a little above the core's own
 *   share, but enough to tell how much of a fall with n is the collector;
 * - the floor at that n: the least any renewal must do with its lease
 *   table, finding a random agent's lease as the pool does (by the row its
 *   lease id names, checked against its agent id) in a request just
 *   decoded and checking its secret, timed alone over the same table
 *   (ns). With many leases each of those reads misses the cache. The
 *   floor reads one request at a time, each read waiting for the last;
 *   reading ahead overlaps the waits of a batch, so the core loses less
 *   from 1k to 100k than the floor grows.
 */
import { GCProfiler } from 'node:v8';
import {
  CoordinatorCore,
  parseCoordinatorConfig,
  READ_AHEAD_MAX,
  setCoordinatorHeapFlags,
  TICK_MS_MAX,
} from '@tokenlease/coordinator/internal';
import { decodeRequest, subjectFor } from '@tokenlease/shared';
import { seededRandom, type Random } from '@tokenlease/shared/testing';
import { serveTurns, takeTurns, type Renewed } from './turns.js';
import { SimulatedAgents } from './simulated-agents.js';
import {
  BATCH_SIZE,
  BatchReplies,
  batchRequests,
  distinctPicks,
  HOST_UPTIME_US,
  SEED,
  VIRTUAL_US_PER_CALL,
  WARMUP_MS,
} from './renewal-batches.js';
import type { RowSketchRound } from './row-sketch.js';

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
/** FLOOR_LOOKUPS — lookups timed for the floor at each count. */
const FLOOR_LOOKUPS = 200_000;

/** ScalingRound — one mode at one lease count, measured in a process of its own. */
export interface ScalingRound {
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
  /** The floor: finding a random agent's lease and checking its secret, ns each (median of batches). */
  readonly floorNs: number;
}

/** ScalingFigure — one mode at one lease count over all its turns, and each turn's acquires per second. */
export interface ScalingFigure extends ScalingRound {
  readonly perTurn: readonly number[];
}

class ScalingRun {
  private readonly core: CoordinatorCore<number>;
  private readonly subject = subjectFor(PREFIX, 'acquire', POOL);
  private readonly agents: SimulatedAgents;
  private nowUs: number;
  private nextTickUs: number;
  private readonly picks: number[];
  private readonly replies = new BatchReplies();

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
    this.core = new CoordinatorCore<number>(config, 1, HOST_UPTIME_US);
    // Past the quiet period (one TTL), so the pool refills and rates are assigned.
    this.nowUs = HOST_UPTIME_US + (TTL_MS / 1000 + 1) * US_PER_S;
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
    return { calls, cpuMs, gcUs };
  }

  /** allLive — throws unless every lease opened is still live (none expired nor was refused). */
  allLive(): void {
    const live = this.core.pool(POOL)?.leases.size ?? 0;
    if (live !== this.n)
      throw new Error(`${this.mode} pool: ${live} live leases after renewing, of ${this.n}; some expired or were refused`);
  }

  /**
   * floorNs — ns per lookup of a random agent's lease by the agent and
   * lease ids of a request just decoded, with its secret checked: the
   * median over batches of BATCH_SIZE distinct agents (decoding untimed).
   * Call last: it sends nothing to the core, so the agents' sequence
   * numbers run ahead of it.
   */
  floorNs(lookups: number): number {
    const leases = this.core.pool(POOL)?.leases;
    if (leases === undefined) throw new Error(`${this.mode} pool: gone before its floor was timed`);
    const perBatchNs: number[] = [];
    let found = 0;
    for (let done = 0; done < lookups; done += BATCH_SIZE) {
      const batch = this.distinctAgents(Math.min(BATCH_SIZE, this.n));
      const requests = this.payloads(batch).map((bytes) => {
        const decoded = decodeRequest(bytes);
        if (!decoded.ok || decoded.value.op !== 'acquire') throw new Error(`${this.mode} pool: a renewal did not decode`);
        return decoded.value;
      });
      const start = process.hrtime.bigint();
      for (const req of requests) {
        const record = leases.find(req.agentId, req.leaseId);
        if (record !== undefined && record.secret === req.leaseSecret) found += 1;
      }
      perBatchNs.push(Number(process.hrtime.bigint() - start) / requests.length);
    }
    if (found !== perBatchNs.length * Math.min(BATCH_SIZE, this.n))
      throw new Error(`${this.mode} pool: a lease was not found by its agent`);
    perBatchNs.sort((a, b) => a - b);
    return Math.round(perBatchNs[perBatchNs.length >> 1] as number);
  }

  /** renewFor — renewals by random live agents for `ms` of CPU time in the core. */
  renewFor(ms: number): Renewed {
    let calls = 0;
    let cpuMs = 0;
    while (cpuMs < ms) {
      const batch = this.distinctAgents(Math.min(BATCH_SIZE, this.n));
      cpuMs += this.run(batch, this.payloads(batch));
      calls += batch.length;
    }
    return { calls, cpuMs };
  }

  /** distinctAgents — `k` distinct agent indexes at random. */
  private distinctAgents(k: number): number[] {
    return distinctPicks(this.picks, k, this.random);
  }

  /** payloads — each agent's next acquire, its clock reading the virtual time it will be handed to the core at. */
  private payloads(batch: readonly number[]): Uint8Array[] {
    return batchRequests(this.agents, batch, this.nowUs);
  }

  /**
   * run — hands the batch's requests to the core as the service's intake
   * loop does: each READ_AHEAD_MAX of them named to `readAhead` first, then
   * one at a time to `receive`; returns the CPU time it took, ms.
   */
  private run(batch: readonly number[], payloads: readonly Uint8Array[]): number {
    const replies = this.replies;
    const start = process.cpuUsage();
    for (let i = 0; i < payloads.length; i += 1) {
      if (i % READ_AHEAD_MAX === 0) this.core.readAhead(payloads.slice(i, i + READ_AHEAD_MAX));
      this.nowUs += VIRTUAL_US_PER_CALL;
      if (this.nowUs >= this.nextTickUs) {
        this.core.tick(this.nowUs);
        this.nextTickUs = Math.min(this.nowUs + TICK_MS_MAX * 1000, this.core.nextDeadlineUs());
      }
      const out = this.core.receive(this.subject, payloads[i] as Uint8Array, i, this.nowUs);
      this.nextTickUs = Math.min(this.nextTickUs, this.core.touchedDeadlineUs());
      for (const d of out) replies.note(d.to, d.reply);
    }
    const cpu = process.cpuUsage(start);
    replies.settle(this.agents, batch, `${this.mode} pool`);
    return (cpu.user + cpu.system) / 1000;
  }
}

/** scalingRound — one measurement of a `mode` pool with `leases` live leases, `measureMs` of CPU time; run in a process of its own. */
export function scalingRound(mode: LeaseModeName, leases: LeaseCount, measureMs: number): ScalingRound {
  setCoordinatorHeapFlags();
  const run = new ScalingRun(mode, leases, seededRandom(SEED + leases));
  const openMs = run.open();
  const { calls, cpuMs, gcUs } = run.measure(measureMs);
  run.allLive();
  return {
    mode,
    leases,
    acquiresPerSecond: Math.round(calls / (cpuMs / 1000)),
    calls,
    gcUsPerCall: Math.round((gcUs / calls) * 100) / 100,
    cpuMs: Math.round(cpuMs),
    openMs: Math.round(openMs),
    floorNs: run.floorNs(FLOOR_LOOKUPS),
  };
}

/** isLeaseCount — whether `n` is one of LEASE_COUNTS. */
export function isLeaseCount(n: number): n is LeaseCount {
  return (LEASE_COUNTS as readonly number[]).includes(n);
}

/**
 * scalingTurns — (in a child of `leaseScaling`) opens a `mode` pool's
 * `leases` leases, warms up, and renews in `turns` turns of `turnMs` of
 * CPU time as its parent cues (turns.ts); last, the time the opening took
 * and the floor.
 */
export function scalingTurns(mode: LeaseModeName, leases: LeaseCount, turnMs: number, turns: number): Promise<void> {
  setCoordinatorHeapFlags();
  const run = new ScalingRun(mode, leases, seededRandom(SEED + leases));
  const openMs = Math.round(run.open());
  run.renewFor(WARMUP_MS);
  return serveTurns(
    (ms) => run.renewFor(ms),
    turnMs,
    turns,
    () => {
      run.allLive();
      return { openMs, floorNs: run.floorNs(FLOOR_LOOKUPS) };
    },
  );
}

/**
 * leaseScaling — acquires per CPU second on a `mode` pool at each count of
 * live leases: a child of `script` per count (`--lease-scaling-turns`),
 * `turns` turns each of `turnMs` of CPU time, taken in turn.
 */
export async function leaseScaling(
  script: string,
  mode: LeaseModeName,
  turnMs: number,
  turns: number,
  counts: readonly LeaseCount[] = LEASE_COUNTS,
): Promise<ScalingFigure[]> {
  const args = (n: LeaseCount): string[] => ['--lease-scaling-turns', mode, String(n), String(turnMs), String(turns)];
  const measured = await takeTurns<{ openMs: number; floorNs: number }>(`lease-scaling-${mode}`, script, counts, args, turns);
  return measured.map((m) => ({
    mode,
    leases: m.leases,
    acquiresPerSecond: m.perSecond,
    calls: m.calls,
    gcUsPerCall: Math.round((m.gcUs / m.calls) * 100) / 100,
    cpuMs: Math.round(m.cpuMs),
    openMs: m.last.openMs,
    floorNs: m.last.floorNs,
    perTurn: m.perTurn,
  }));
}

/** RowSketchFigure — the row sketch at one lease count over all its turns, and each turn's renewals per second. */
export interface RowSketchFigure extends RowSketchRound {
  readonly perTurn: readonly number[];
}

/**
 * rowSketchScaling — renewals per CPU second of row-sketch.ts (the chunk
 * renewal on one off-heap row a lease) at each count, measured as
 * `leaseScaling` measures the core (`--row-sketch-turns`). What the sketch
 * loses from 1k to 100k is what the core would still lose with every
 * field of a lease in one row: the yardstick for the core's own fall.
 */
export async function rowSketchScaling(
  script: string,
  turnMs: number,
  turns: number,
  counts: readonly LeaseCount[] = LEASE_COUNTS,
): Promise<RowSketchFigure[]> {
  const args = (n: LeaseCount): string[] => ['--row-sketch-turns', String(n), String(turnMs), String(turns)];
  const measured = await takeTurns<null>('row-sketch', script, counts, args, turns);
  return measured.map((m) => ({
    leases: m.leases,
    renewalsPerSecond: m.perSecond,
    calls: m.calls,
    cpuMs: Math.round(m.cpuMs),
    perTurn: m.perTurn,
  }));
}
