/**
 * The concurrency sweep: its two semaphore baselines on hand-made arrivals
 * (a slot is held from the grant until the release reaches the semaphore;
 * each agent's own semaphore gets its part of N), and a small sweep whose
 * every row keeps at most N in flight on identical arrivals.
 */
import { describe, expect, it } from 'vitest';
import type { Arrival, Workload } from '@tokenlease/sim';
import {
  centralSemaphore,
  concurrencyRecommendation,
  localSemaphores,
  renderConcurrencyTable,
  runConcurrencySweep,
} from './concurrency-sweep.js';
import { parseSweepArgs } from './args.js';

const at = (tUs: number, agent = 0): Arrival => ({ tUs, agent, incarnation: 0, cost: 1, waitMs: 0 });
const workloadOf = (arrivals: Arrival[]): Workload => ({ arrivals, presence: [], demandPerSecond: [] });

describe('the semaphore baselines', () => {
  it('central: grants while fewer than N hold a slot, each held until its release arrives (service plus two one-way delays)', () => {
    const arrivals = [at(0), at(1_000), at(2_000), at(12_000), at(12_500)];
    const services = Float64Array.from([10_000, 10_000, 10_000, 10_000, 10_000]);
    const o = centralSemaphore(workloadOf(arrivals), 1, 2, services, { latencyUs: 0, lossRate: 0, duplicateRate: 0 }, 1);
    // 0 and 1 ms take both slots; 2 ms is refused; 12 ms finds the first free again (released at 10 ms), 12.5 ms the second (11 ms).
    expect(o).toMatchObject({ admitted: 4, peakInFlight: 2, heldUs: 40_000, roundTrips: 9 });
  });

  it('local: each agent gets its part of N, the remainder to the first agents, and never another agent’s', () => {
    const arrivals = [at(0, 0), at(1, 0), at(2, 0), at(3, 1), at(4, 1), at(5, 2)];
    const services = new Float64Array(arrivals.length).fill(1_000_000);
    const o = localSemaphores(workloadOf(arrivals), 3, 4, services);
    // N = 4 over 3 agents: 2, 1, 1.
    expect(o.perAgentAdmitted).toEqual([2, 1, 1]);
    expect(o.peakInFlight).toBe(4);
    expect(o.roundTrips).toBe(0);
  });
});

describe('runConcurrencySweep', () => {
  const args = parseSweepArgs(
    [
      ...['--agents', '6', '--concurrency', '12/1s', '--service', '50ms', '--workload', 'steady:load=1.2'],
      ...['--lease-sizes', '2,12', '--ttls', '1s', '--reports', '0', '--duration', '8s', '--seed', '11'],
    ],
    () => 11,
  );
  const pool = args.concurrency;
  if (pool === null) throw new Error('no concurrency pool parsed');
  const rows = runConcurrencySweep(args, pool);
  const central = rows.find((r) => r.strategy === 'central-semaphore');

  it('returns a row per lease setting, then the two baselines, on identical arrivals', () => {
    expect(rows.map((r) => `${r.strategy}:${r.leaseSize}`)).toEqual([
      'lease:2',
      'lease:12',
      'central-semaphore:null',
      'local-semaphores:null',
    ]);
    expect(new Set(rows.map((r) => r.requests)).size).toBe(1);
  });

  it('keeps at most N in flight in every row, and measures utilization against the central semaphore', () => {
    for (const row of rows) {
      expect(row.peakInFlight, row.strategy).toBeLessThanOrEqual(12);
      expect(row.admitted).toBeGreaterThan(0);
      expect(row.semaphoreAdmitted).toBe(central?.admitted);
      expect(row.busy).toBeGreaterThan(0);
      expect(row.busy).toBeLessThanOrEqual(1);
    }
    expect(central?.utilization).toBe(1);
    // The demand (1.2 × N) fills the semaphore.
    expect(central?.peakInFlight).toBe(12);
    // A semaphore pays a round-trip to take each slot and one to give it back; leases far fewer.
    expect(central?.roundTripsPer1k).toBeGreaterThan(2000);
    for (const row of rows.filter((r) => r.strategy === 'lease')) expect(row.roundTripsPer1k).toBeLessThan(1000);
  });

  it('is the same sweep for the same seed, and renders a table with a line per row', () => {
    expect(runConcurrencySweep(args, pool)).toEqual(rows);
    expect(renderConcurrencyTable(rows).split('\n')).toHaveLength(rows.length + 4);
    const recommended = concurrencyRecommendation(rows, 0.01);
    expect(recommended?.strategy).toBe('lease');
    expect(concurrencyRecommendation(rows, 1.01)).toBeNull();
  });
});
