/**
 * runSweep — every lease size × TTL × usage-report interval combination
 * (chunk leases), every
 * refresh interval × TTL (rate leases), and the two baselines, on the very
 * same arrivals (one seed), each reduced to one SweepRow.
 * Rate rows' leases are capped only by the agent's share of B
 * (maxLeaseTokens = B); settings.ts says which TTLs they run with.
 * A chunk row with a report interval above 0 runs its agents with keeper
 * reportMs set to it; the simulator counts the reports it publishes apart
 * from the round-trips, and the row carries them apart (reportsPer1k beside
 * roundTripsPer1k; cost.ts adds them up).
 */
import { DEFAULT_TTL_MS } from '@tokenlease/coordinator';
import type { Rate } from '@tokenlease/shared';
import {
  type SimConfig,
  type SimResult,
  runSimulation,
  simWorkload,
  TAKE_TIMEOUT_MS_DEFAULT,
  type Workload,
  type WorkloadSpec,
} from '@tokenlease/sim';
import { central, local, type BaselineOutcome } from './baselines.js';
import { idealAdmitted } from './ideal.js';
import { jain, jainOverShare, p99 } from './fairness.js';
import type { SweepRow } from './row.js';
import { tokenleaseSettings, type Setting, type SettingsInput } from './settings.js';

export type { LeaseMode } from './settings.js';

/** SweepInput — what one sweep runs: the fleet, the pool, the workload, the settings to try (SettingsInput), the network and the seed. */
export interface SweepInput extends SettingsInput {
  /** Agents in the simulated fleet, ≥ 1. */
  readonly agents: number;
  /** B, the pool's capacity, tokens. */
  readonly capacityTokens: number;
  /** r, the pool's refill rate (exact ratio). */
  readonly refill: Rate;
  readonly workload: WorkloadSpec;
  /** Mean one-way network delay, µs. */
  readonly latencyUs: number;
  /** Simulated time per combination, ms. */
  readonly durationMs: number;
  /** Seed of every random draw of the run, in [0, 2^32 − 1]. */
  readonly seed: number;
  /**
   * Recorded arrivals to replay (trace.ts) instead of drawing `workload`'s:
   * its agent slots below `agents`, its arrivals before `durationMs`. The
   * central baseline then decides each request at its arrival, in arrival
   * order, so it admits exactly what an exact bucket replayed over the
   * trace admits. Absent: the workload's draw.
   */
  readonly trace?: Workload;
}

interface Common {
  readonly ideal: number;
  readonly offeredCount: number;
  readonly perAgentOffered: readonly number[];
  readonly takes: number;
  readonly takeTimeoutMs: number;
}

const BASELINE: Setting = { leaseSize: null, refreshMs: null, ttlMs: null, allowance: 0, reportMs: null };

function rowOf(
  strategy: SweepRow['strategy'],
  setting: Setting,
  c: Common,
  r: {
    admittedTokens: number;
    admittedCount: number;
    deniedCount: number;
    roundTrips: number;
    reports?: number;
    strandedTokens: number | null;
    perAgentAdmitted: readonly number[];
    waitsMs: readonly number[];
    worstExcessTokens: number;
  },
): SweepRow {
  const timeouts = Math.max(0, c.takes - r.waitsMs.length);
  return {
    strategy,
    ...setting,
    admitted: r.admittedTokens,
    idealAdmitted: c.ideal,
    utilization: c.ideal === 0 ? 1 : r.admittedTokens / c.ideal,
    overAdmitted: Math.max(0, r.worstExcessTokens),
    roundTripsPer1k: r.admittedCount === 0 ? 0 : (1000 * r.roundTrips) / r.admittedCount,
    reportsPer1k: r.admittedCount === 0 ? 0 : (1000 * (r.reports ?? 0)) / r.admittedCount,
    strandedTokens: r.strandedTokens,
    jain: jain(r.perAgentAdmitted, c.perAgentOffered),
    jainOverShare: jainOverShare(r.perAgentAdmitted, c.perAgentOffered),
    p99WaitMs: p99([...r.waitsMs, ...Array.from({ length: timeouts }, () => c.takeTimeoutMs)]),
    denialRate: c.offeredCount === 0 ? 0 : r.deniedCount / c.offeredCount,
    requests: c.offeredCount,
  };
}

/** simulatedRow — one tokenlease setting, simulated: chunk leases of `leaseSize`, or rate leases renewed every `refreshMs`. */
function simulatedRow(input: SweepInput, setting: Setting & { readonly ttlMs: number }, common: Common): SweepRow {
  const rate = setting.refreshMs !== null;
  const reportMs = setting.reportMs ?? 0;
  const config: SimConfig = {
    seed: input.seed,
    agents: input.agents,
    durationUs: input.durationMs * 1000,
    pool: {
      capacity: input.capacityTokens,
      refill: input.refill,
      leaseTtlMs: setting.ttlMs,
      maxLeaseTokens: setting.leaseSize ?? input.capacityTokens,
      allowance: setting.allowance,
      ...(rate ? { leaseMode: 'rate' as const } : {}),
    },
    workload: input.workload,
    ...(input.trace === undefined ? {} : { replay: input.trace }),
    network: { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 },
    partitions: [],
    faults: [],
    driftMax: 0,
    keeper: { ...(setting.refreshMs === null ? {} : { refreshMs: setting.refreshMs }), ...(reportMs > 0 ? { reportMs } : {}) },
  };
  const r: SimResult = runSimulation(config);
  if (r.violations.length > 0) {
    const what = rate ? `rate leases, refresh ${setting.refreshMs} ms` : `lease ${setting.leaseSize}, reports every ${reportMs} ms`;
    throw new Error(`${what}, TTL ${setting.ttlMs} ms, allowance ${setting.allowance} broke a check: ${r.violations[0]}`);
  }
  return rowOf(rate ? 'rate' : 'lease', setting, common, { ...r, strandedTokens: rate ? null : r.strandedTokens, waitsMs: r.takeWaitsMs });
}

function baselineRow(strategy: 'central' | 'local', b: BaselineOutcome, common: Common): SweepRow {
  return rowOf(strategy, BASELINE, common, { ...b, strandedTokens: 0 });
}

function commonOf(input: SweepInput, workload: Workload): Common {
  const perAgentOffered = Array.from({ length: input.agents }, () => 0);
  let takes = 0;
  for (const a of workload.arrivals) {
    perAgentOffered[a.agent] = (perAgentOffered[a.agent] ?? 0) + a.cost;
    if (a.waitMs > 0) takes += 1;
  }
  return {
    ideal: idealAdmitted(workload.arrivals, input.capacityTokens, input.refill),
    offeredCount: workload.arrivals.length,
    perAgentOffered,
    takes,
    takeTimeoutMs: input.workload.takeTimeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT,
  };
}

/**
 * arrivalsOf — the arrivals every row of the sweep faces: the trace's when
 * one is replayed, else simWorkload's. simWorkload reads
 * the seed, fleet, duration, refill and workload of a config; the lease
 * fields are placeholders it never reads.
 */
export function arrivalsOf(input: SweepInput): Workload {
  if (input.trace !== undefined) return input.trace;
  return simWorkload({
    seed: input.seed,
    agents: input.agents,
    durationUs: input.durationMs * 1000,
    pool: { capacity: input.capacityTokens, refill: input.refill, leaseTtlMs: DEFAULT_TTL_MS, maxLeaseTokens: 1 },
    workload: input.workload,
    network: { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 },
    partitions: [],
    faults: [],
    driftMax: 0,
  });
}

/** runSweep — rows for every setting (tokenleaseSettings' order), then the central and local baselines. */
export function runSweep(input: SweepInput, onRow: (row: SweepRow) => void = () => {}): SweepRow[] {
  const workload = arrivalsOf(input);
  const common = commonOf(input, workload);
  const rows: SweepRow[] = [];
  const add = (row: SweepRow): void => {
    rows.push(row);
    onRow(row);
  };
  for (const setting of tokenleaseSettings(input)) add(simulatedRow(input, setting, common));
  add(
    baselineRow(
      'central',
      central(
        workload,
        input.agents,
        input.capacityTokens,
        input.refill,
        input.trace === undefined ? { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 } : null,
        input.seed,
      ),
      common,
    ),
  );
  add(baselineRow('local', local(workload, input.agents, input.capacityTokens, input.refill), common));
  return rows;
}
