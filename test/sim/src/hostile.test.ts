import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { waterFill } from './fair-share.js';
import { fairShareProblem, judgesShares } from './hostile-fairness.js';
import { describeScenario, randomScenario } from './scenario.js';
import type { SimConfig, SimResult } from './sim-config.js';
import { runSimulation } from './simulation.js';

describe('waterFill', () => {
  it.each([
    // capacity, [demand, weight]…, shares
    [
      100,
      [
        [10, 1],
        [Infinity, 1],
        [Infinity, 1],
      ],
      [10, 45, 45],
    ],
    [
      100,
      [
        [Infinity, 1],
        [Infinity, 3],
      ],
      [25, 75],
    ],
    [
      100,
      [
        [30, 1],
        [30, 1],
      ],
      [30, 30],
    ],
    [
      90,
      [
        [Infinity, 1],
        [Infinity, 1],
        [Infinity, 1],
      ],
      [30, 30, 30],
    ],
    [0, [[5, 1]], [0]],
    [
      100,
      [
        [Infinity, 2],
        [Infinity, 0.5],
      ],
      [80, 20],
    ],
  ] as const)('shares %i as weighted max-min (%j)', (capacity, claims, shares) => {
    const out = waterFill(
      capacity,
      claims.map(([demand, weight]) => ({ demand, weight })),
    );
    out.forEach((share, i) => expect(share).toBeCloseTo(shares[i] as number, 9));
  });
});

describe('hostile clients', () => {
  // One honest agent asking 3× the refill beside five sybils that fill
  // leases of 20 (all of B = 100 between them) and renew every 10 ms, each
  // renewal only when the pool's status shows no request held. Six takers:
  // the honest agent's fair share is a sixth of the refill. The broken
  // coordinator counts the pool contended only while a request waits at the
  // instant of a renewal (the rule before holding fairness over a TTL), so
  // the sybils' leases are extended for good and B never comes round.
  const besideSybils = (seed: number, broken: boolean): SimConfig => ({
    seed,
    agents: 1,
    durationUs: 20_000_000,
    pool: { capacity: 100, refill: makeRate(100, 1000), leaseTtlMs: 1000, maxLeaseTokens: 20 },
    workload: { name: 'steady', load: 3 },
    network: { latencyUs: 1000, lossRate: 0, duplicateRate: 0 },
    partitions: [],
    faults: [],
    driftMax: 0.01,
    hostile: { sybils: { count: 5, tokens: 20, renewMs: 10, betweenHolds: true } },
    ...(broken ? { broken: 'instant-only-waiters' as const } : {}),
  });
  const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);
  const admitted = (r: SimResult): number => r.fairShare?.shares[0]?.admittedTokens ?? 0;

  it('keep an honest agent at its fair share; the fair-share check catches instant-only-waiters on most seeds', () => {
    let caught = 0;
    const figures: string[] = [];
    for (const seed of SEEDS) {
      const config = besideSybils(seed, false);
      const honest = runSimulation(config);
      expect(honest.violations, `SEED=${seed}`).toEqual([]);
      expect(fairShareProblem(config, honest), `SEED=${seed}`).toBeNull();
      const brokenConfig = besideSybils(seed, true);
      const broken = runSimulation(brokenConfig);
      expect(broken.violations, `SEED=${seed}: the envelope holds either way`).toEqual([]);
      if (fairShareProblem(brokenConfig, broken) !== null) caught += 1;
      figures.push(`${admitted(honest)}/${admitted(broken)}`);
    }
    const fair = runSimulation(besideSybils(1, false)).fairShare?.shares[0]?.fairTokens ?? 0;
    console.log(
      `sim: instant-only-waiters caught by the fair-share check on ${caught} of ${SEEDS.length} seeds; ` +
        `honest agent admitted (real/broken) ${figures.join(' ')} of a fair share of ${fair.toFixed(0)}`,
    );
    expect(caught).toBeGreaterThanOrEqual(10);
  });

  it('keep a rate pool’s honest agents at their shares once failovers let the sybils top up their caps (seed 141)', () => {
    // Durable, three failovers and a pause: after each, the level refills in the quiet period and sybils that never
    // spend take it into their caps. Before caps shared B as chunk leases do, three of the seven honest agents got a
    // fair rate with a cap of 0 and admitted nothing in the judged window.
    const c = randomScenario(141);
    expect(c.pool.leaseMode).toBe('rate');
    expect(c.hostile?.sybils?.count).toBe(4);
    const result = runSimulation(c);
    expect(result.violations, describeScenario(c)).toEqual([]);
    expect(fairShareProblem(c, result), describeScenario(c)).toBeNull();
    // The check's slack (two leases of 22) is more than 40% of a share of 95: each agent must get half of it here.
    const shares = result.fairShare?.shares ?? [];
    expect(shares.length).toBe(7);
    for (const share of shares) expect(share.admittedTokens, `slot ${share.slot}`).toBeGreaterThanOrEqual(0.5 * share.fairTokens);
  });

  it('keep every check, fair shares too, over drawn scenarios with hostile clients', () => {
    const configs = Array.from({ length: 200 }, (_, i) => randomScenario(7000 + i)).filter((c) => c.hostile !== undefined);
    const picked = configs.filter(judgesShares).slice(0, 8);
    for (const c of picked) {
      const result = runSimulation(c);
      expect(result.violations, `SEED=${c.seed}: ${describeScenario(c)}`).toEqual([]);
      expect(fairShareProblem(c, result), `SEED=${c.seed}: ${describeScenario(c)}`).toBeNull();
    }
    expect(picked.length).toBe(8);
  });
});
