/**
 * runSweep — every lease size × TTL combination, and the two baselines, on
 * the very same arrivals (one seed), each reduced to one SweepRow.
 */
import type { Rate } from '@tokenlease/shared';
import type { SimConfig, SimResult } from '../sim/sim-config.js';
import { runSimulation, simWorkload } from '../sim/simulation.js';
import type { Workload, WorkloadSpec } from '../sim/workload.js';
import { central, local, type BaselineOutcome } from './baselines.js';
import { idealAdmitted } from './ideal.js';
import { jain, p99 } from './fairness.js';
import type { SweepRow } from './row.js';

export interface SweepInput {
  readonly agents: number;
  readonly capacity: number;
  readonly refill: Rate;
  readonly workload: WorkloadSpec;
  readonly leaseSizes: readonly number[];
  readonly ttlsMs: readonly number[];
  /** Allowances A to try (0 = the strict envelope). */
  readonly allowances: readonly number[];
  readonly latencyUs: number;
  readonly durationMs: number;
  readonly seed: number;
}

interface Common {
  readonly ideal: number;
  readonly offeredCount: number;
  readonly perAgentOffered: readonly number[];
  readonly takes: number;
  readonly takeTimeoutMs: number;
}

function rowOf(strategy: SweepRow['strategy'], leaseSize: number | null, ttlMs: number | null, allowance: number, c: Common, r: {
  admittedTokens: number; admittedCount: number; deniedCount: number; roundTrips: number; strandedTokens: number;
  perAgentAdmitted: readonly number[]; waitsMs: readonly number[]; worstExcessTokens: number;
}): SweepRow {
  const timeouts = Math.max(0, c.takes - r.waitsMs.length);
  return {
    strategy,
    leaseSize,
    ttlMs,
    allowance,
    admitted: r.admittedTokens,
    idealAdmitted: c.ideal,
    utilization: c.ideal === 0 ? 1 : r.admittedTokens / c.ideal,
    overAdmitted: Math.max(0, r.worstExcessTokens),
    roundTripsPer1k: r.admittedCount === 0 ? 0 : (1000 * r.roundTrips) / r.admittedCount,
    strandedTokens: r.strandedTokens,
    jain: jain(r.perAgentAdmitted, c.perAgentOffered),
    p99WaitMs: p99([...r.waitsMs, ...Array.from({ length: timeouts }, () => c.takeTimeoutMs)]),
    denialRate: c.offeredCount === 0 ? 0 : r.deniedCount / c.offeredCount,
    requests: c.offeredCount,
  };
}

function leaseRow(input: SweepInput, leaseSize: number, ttlMs: number, allowance: number, common: Common): SweepRow {
  const config: SimConfig = {
    seed: input.seed,
    agents: input.agents,
    durationUs: input.durationMs * 1000,
    pool: { capacity: input.capacity, refill: input.refill, leaseTtlMs: ttlMs, maxLeaseTokens: leaseSize, allowance },
    workload: input.workload,
    network: { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 },
    partitions: [],
    faults: [],
    driftMax: 0,
  };
  const r: SimResult = runSimulation(config);
  if (r.violations.length > 0) throw new Error(`lease ${leaseSize}, TTL ${ttlMs} ms, allowance ${allowance} broke a check: ${r.violations[0]}`);
  return rowOf('lease', leaseSize, ttlMs, allowance, common, { ...r, waitsMs: r.takeWaitsMs });
}

function baselineRow(strategy: 'central' | 'local', b: BaselineOutcome, common: Common): SweepRow {
  return rowOf(strategy, null, null, 0, common, { ...b, strandedTokens: 0 });
}

function commonOf(input: SweepInput, workload: Workload): Common {
  const perAgentOffered = Array.from({ length: input.agents }, () => 0);
  let takes = 0;
  for (const a of workload.arrivals) {
    perAgentOffered[a.agent] = (perAgentOffered[a.agent] ?? 0) + a.cost;
    if (a.waitMs > 0) takes += 1;
  }
  return {
    ideal: idealAdmitted(workload.arrivals, input.capacity, input.refill),
    offeredCount: workload.arrivals.length,
    perAgentOffered,
    takes,
    takeTimeoutMs: input.workload.takeTimeoutMs ?? 200,
  };
}

/** runSweep — rows for every combination (by allowance, TTL, then lease size), then the central and local baselines. */
export function runSweep(input: SweepInput, onRow: (row: SweepRow) => void = () => {}): SweepRow[] {
  const workload = simWorkload({
    seed: input.seed, agents: input.agents, durationUs: input.durationMs * 1000,
    pool: { capacity: input.capacity, refill: input.refill, leaseTtlMs: 1000, maxLeaseTokens: 1 },
    workload: input.workload, network: { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 }, partitions: [], faults: [], driftMax: 0,
  });
  const common = commonOf(input, workload);
  const rows: SweepRow[] = [];
  const add = (row: SweepRow): void => {
    rows.push(row);
    onRow(row);
  };
  for (const allowance of input.allowances) {
    for (const ttlMs of input.ttlsMs) for (const leaseSize of input.leaseSizes) add(leaseRow(input, leaseSize, ttlMs, allowance, common));
  }
  add(baselineRow('central', central(workload, input.agents, input.capacity, input.refill, { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 }, input.seed), common));
  add(baselineRow('local', local(workload, input.agents, input.capacity, input.refill), common));
  return rows;
}
