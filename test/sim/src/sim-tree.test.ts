/**
 * The simulator on trees (a root, relays and agents): every check at the
 * root over every admission of the tree through relay, agent and root
 * faults, shares across relays and the root, round-trips at the root
 * against the same fleet flat, and relays and stores broken on purpose
 * caught (a relay that does not cut its grants to its lease, one that
 * serves on after its upstream lease is lost, a takeover that forgets).
 */
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { seedFromEnv } from '@tokenlease/shared/testing';
import { convergenceProblem, recoveredRate } from './converge.js';
import { describeScenario } from './scenario.js';
import type { Broken, SimConfig, SimResult } from './sim-config.js';
import { runSimulation } from './simulation.js';
import { relayOfSlot, treeScenario } from './tree.js';
import { compareTree, formatFigures } from './tree-report.js';

/** convergenceApplies — whether the convergence check judged a run: saturated after its faults, a bucket pool. */
function convergenceApplies(config: SimConfig, result: SimResult): boolean {
  return config.pool.window !== true && config.faults.length + config.partitions.length > 0 && recoveredRate(config, result) !== null;
}

describe('a tree of relays', () => {
  /** Tokens admitted by the agents under a relay. */
  const relayedTokens = (config: SimConfig, result: SimResult): number =>
    result.perAgentAdmitted.reduce(
      (sum, t, slot) => (config.tree !== undefined && relayOfSlot(config.tree, slot) !== null ? sum + t : sum),
      0,
    );
  const TREE_SCENARIOS = Number(process.env['SIM_TREE_SCENARIOS'] ?? '10');

  it(`keeps every check at the root over ${TREE_SCENARIOS} random tree scenarios with relay and agent faults`, () => {
    const seed = seedFromEnv();
    const replay = (s: number): string => `npm run sim -- --tree 3 --agents 12 --scenarios 1 --seed ${s} --duration 10s`;
    console.log(`sim: ${TREE_SCENARIOS} tree scenarios from SEED=${seed} (replay one: ${replay(seed)})`);
    const failures: string[] = [];
    let relayFaults = 0;
    let restarts = 0;
    let relayed = 0;
    let closest = -Infinity;
    let judged = 0;
    for (let i = 0; i < TREE_SCENARIOS; i += 1) {
      const config = treeScenario((seed + i) >>> 0, 3, 12, 10_000_000);
      const result = runSimulation(config);
      relayFaults += config.faults.filter((f) => f.kind.endsWith('-relay')).length;
      restarts += result.relayRestarts;
      relayed += relayedTokens(config, result);
      closest = Math.max(closest, result.worstExcessTokens);
      // Once the faults have settled, a saturated tree admits what it does without them.
      const converged = convergenceProblem(config, result);
      if (convergenceApplies(config, result)) judged += 1;
      const violations = converged === null ? result.violations : [...result.violations, converged];
      if (violations.length > 0) {
        failures.push(
          `seed ${config.seed} (${describeScenario(config)}):\n  ${violations.slice(0, 5).join('\n  ')}\n  replay: ${replay(config.seed)}`,
        );
      }
    }
    console.log(
      `sim: trees: ${relayFaults} relay faults, ${restarts} relay restarts; closest window ${(-closest).toFixed(2)} tokens under the envelope; ${judged} saturated after their faults, judged against their fault-free twins`,
    );
    expect(failures, failures.join('\n')).toEqual([]);
    expect(relayFaults).toBeGreaterThanOrEqual(TREE_SCENARIOS);
    // Agents under relays did admit.
    expect(relayed).toBeGreaterThan(0);
  });

  // Two relays over eight agents (two on the root), every fault a tree has:
  // a relay crash, a relay pause past the TTL, a relay cut from the root and
  // one cut from its agents, an agent crash and pause under a relay.
  const everyFault = (seed: number): SimConfig => ({
    seed,
    agents: 8,
    durationUs: 12_000_000,
    pool: { capacity: 100, refill: makeRate(200, 1000), leaseTtlMs: 500, maxLeaseTokens: 8, minGrantTokens: 1 },
    workload: { name: 'steady', load: 2 },
    network: { latencyUs: 1000, lossRate: 0.01, duplicateRate: 0.01 },
    partitions: [],
    faults: [
      { kind: 'crash-relay', relay: 0, atUs: 2_000_000, downUs: 300_000 },
      { kind: 'pause-relay', relay: 1, atUs: 3_500_000, forUs: 1_200_000 },
      { kind: 'partition-relay', relay: 0, from: 'root', atUs: 5_500_000, forUs: 1_000_000 },
      { kind: 'partition-relay', relay: 1, from: 'agents', atUs: 7_000_000, forUs: 800_000 },
      { kind: 'crash-agent', agent: 2, atUs: 8_000_000, downUs: 500_000 },
      { kind: 'pause-agent', agent: 3, atUs: 9_000_000, forUs: 1_000_000 },
    ],
    driftMax: 0.04,
    tree: { relays: 2, rootAgents: 2, rootMaxLeaseTokens: 40 },
  });

  it.each([1, 2, 3])('keeps every check through every fault a tree has (seed %i), and is a function of its seed', (seed) => {
    const result = runSimulation(everyFault(seed));
    expect(result.violations).toEqual([]);
    expect(result.relayRestarts).toBe(1);
    expect(result.worstExcessTokens).toBeLessThanOrEqual(0);
    expect(relayedTokens(everyFault(seed), result)).toBeGreaterThan(0);
    expect(runSimulation(everyFault(seed))).toEqual(result);
  });

  // The root in durable mode, failing over twice (once deposed while it
  // still runs), under the relays' own faults: a takeover adopts the
  // relays' leases from the store as it adopts agents'.
  const durableTree = (seed: number, broken?: Broken): SimConfig => {
    const base = everyFault(seed);
    return {
      ...base,
      durable: { writeUsMin: 100, writeUsMax: 2000 },
      faults: [
        ...base.faults,
        { kind: 'failover-coordinator', atUs: 2_500_000, downUs: 400_000 },
        { kind: 'failover-coordinator', atUs: 6_000_000, downUs: 300_000, deposedUs: 200_000 },
      ],
      ...(broken === undefined ? {} : { broken }),
    };
  };
  // Bursts every 1.5 s with the root failing over between them, while the
  // relays and their agents hold what is left of their leases.
  const burstyDurableTree = (seed: number, broken?: Broken): SimConfig => {
    const bursts = relayBursts(seed, false);
    return {
      ...bursts,
      pool: { ...bursts.pool, leaseTtlMs: 1000 },
      faults: [1, 2, 3, 4, 5].map((s) => ({
        kind: 'failover-coordinator' as const,
        atUs: s * 1_500_000 + 500_000,
        downUs: 50_000,
        deposedUs: 100_000,
      })),
      durable: { writeUsMin: 100, writeUsMax: 2000 },
      tree: { relays: 2, rootMaxLeaseTokens: 30 },
      ...(broken === undefined ? {} : { broken }),
    };
  };

  it.each([1, 2, 3])('keeps every check with a durable root failing over under the tree (seed %i)', (seed) => {
    const config = durableTree(seed);
    const result = runSimulation(config);
    expect(result.violations).toEqual([]);
    // One claim per failover at least: the root's members run the ownership driver, and a member joining may move the pool once more.
    expect(result.takeovers).toBeGreaterThanOrEqual(2);
    expect(result.worstExcessTokens).toBeLessThanOrEqual(0);
    expect(relayedTokens(config, result)).toBeGreaterThan(0);
  });

  it('catches a takeover that forgets the relays’ kept leases: the envelope fails at the root for some seeds', () => {
    const honest = [1, 2, 3, 4].map((seed) => runSimulation(burstyDurableTree(seed)));
    expect(honest.flatMap((r) => r.violations)).toEqual([]);
    const excess = [1, 2, 3, 4].map((seed) => runSimulation(burstyDurableTree(seed, 'forget-kept-leases')));
    const fmt = (rs: readonly SimResult[]): string => rs.map((r) => r.worstExcessTokens.toFixed(1)).join(', ');
    console.log(`sim: forget-kept-leases under a tree: worst excess ${fmt(excess)} tokens (honest: ${fmt(honest)})`);
    expect(excess.some((r) => r.worstExcessTokens > 1 && r.violations.some((v) => v.includes('envelope exceeded')))).toBe(true);
  });

  // Relay clocks drift in every random tree (within 1%). One that runs 20%
  // fast, beyond what the agents' 10% margin leaves beside their own 4%,
  // stops counting its agents' leases while they may still spend: the
  // expiry check catches it.
  const driftingRelays = (seed: number, drift: number): SimConfig => ({
    ...relayBursts(seed, false),
    agents: 8,
    faults: [],
    driftMax: 0.04,
    tree: { relays: 2, rootMaxLeaseTokens: 30, relayDrift: [drift, drift] },
  });

  it('catches relays whose clocks run faster than the agents’ margin allows: the expiry check fails for some seeds', () => {
    const within = [1, 2, 3, 4].map((seed) => runSimulation(driftingRelays(seed, 0.01)));
    expect(within.flatMap((r) => r.violations)).toEqual([]);
    const beyond = [1, 2, 3, 4].map((seed) => runSimulation(driftingRelays(seed, 0.2)));
    const late = beyond.flatMap((r) => r.violations.filter((v) => v.includes("after the coordinator's expiry")));
    console.log(`sim: relays 20% fast: ${late.length} spends after the relay's expiry over 4 seeds (1% fast: none)`);
    expect(late.length).toBeGreaterThan(0);
  });

  // Whether a2.0 holds a lease when it crashes depends on the seed (seeds 2, 4, 5, 7 and 8 of 1–8 when this was written).
  it('audits a crashed agent’s lease at its relay (the audit can fail there)', () => {
    const caught = [1, 2, 3, 4].filter((seed) =>
      runSimulation({ ...everyFault(seed), reclaimDeadlineUs: 1 }).violations.some((v) => /lease of a2\.0 .* not reclaimed/.test(v)),
    );
    expect(caught.length).toBeGreaterThan(0);
  });

  // Four saturating agents on the root and four under one relay. Asking as
  // one agent, the relay gets about a fifth of the refill; asking under a
  // relay class with its fleet weight, its agents get what the root's do.
  const relayShare = (seed: number, relayClasses?: Record<string, number>): SimConfig => ({
    seed,
    agents: 8,
    durationUs: 10_000_000,
    pool: {
      capacity: 80,
      refill: makeRate(160, 1000),
      leaseTtlMs: 500,
      maxLeaseTokens: 5,
      minGrantTokens: 1,
      ...(relayClasses ? { relayClasses } : {}),
    },
    workload: { name: 'steady', load: 2 },
    network: { latencyUs: 1000, lossRate: 0, duplicateRate: 0 },
    partitions: [],
    faults: [],
    driftMax: 0.01,
    tree: { relays: 1, rootAgents: 4, rootMaxLeaseTokens: 40, uplink: { agentClass: 'relay' } },
  });
  /** Tokens per agent under the relay against per agent on the root. */
  const relayedRatio = (config: SimConfig, result: SimResult): number => {
    const tree = config.tree as NonNullable<SimConfig['tree']>;
    let [onRoot, underRelay] = [0, 0];
    result.perAgentAdmitted.forEach((t, slot) => {
      if (relayOfSlot(tree, slot) === null) onRoot += t;
      else underRelay += t;
    });
    return underRelay / onRoot;
  };

  it.each([1, 2, 3])('shares across a relay and the root by the fleet behind the relay under a relay class (seed %i)', (seed) => {
    const weighed = relayShare(seed, { relay: 100 });
    const fair = runSimulation(weighed);
    const one = runSimulation(relayShare(seed));
    const [fairRatio, oneRatio] = [relayedRatio(weighed, fair), relayedRatio(relayShare(seed), one)];
    console.log(
      `sim: relay share (seed ${seed}): per agent under the relay / on the root ${fairRatio.toFixed(3)} with its fleet weight, ${oneRatio.toFixed(3)} as one agent`,
    );
    expect(fair.violations).toEqual([]);
    expect(fairRatio).toBeGreaterThan(0.85);
    expect(fairRatio).toBeLessThan(1.15);
    expect(oneRatio).toBeLessThan(0.6);
  });

  // Bursts every 1.5 s; between them agents under a relay hold what is left
  // of their leases while the root's level fills to B again. A relay crash
  // and a pause besides. The broken relay grants its agents its pool's full
  // TTL (2 s) rather than cutting it to its own lease's end: they spend
  // tokens the root stopped counting, beside the B it then lends again.
  const relayBursts = (seed: number, broken: boolean): SimConfig => ({
    seed,
    agents: 6,
    durationUs: 10_000_000,
    pool: { capacity: 60, refill: makeRate(120, 1000), leaseTtlMs: 500, maxLeaseTokens: 10, minGrantTokens: 1 },
    workload: { name: 'bursty', load: 1, onMs: 100, offMs: 1400 },
    network: { latencyUs: 1000, lossRate: 0, duplicateRate: 0 },
    partitions: [],
    faults: [
      { kind: 'crash-relay', relay: 0, atUs: 3_000_000, downUs: 200_000 },
      { kind: 'pause-relay', relay: 1, atUs: 6_000_000, forUs: 600_000 },
    ],
    driftMax: 0.01,
    tree: { relays: 2, rootMaxLeaseTokens: 30, relayLeaseTtlMs: 2000 },
    ...(broken ? { broken: 'relay-no-ttl-cap' as const } : {}),
  });

  it.each([1, 2, 3, 4])(
    'catches a relay that does not cut its grants to its own lease’s end (seed %i): the envelope fails at the root',
    (seed) => {
      const honest = runSimulation(relayBursts(seed, false));
      expect(honest.violations).toEqual([]);
      const broken = runSimulation(relayBursts(seed, true));
      console.log(
        `sim: relay-no-ttl-cap (seed ${seed}): honest closest ${(-honest.worstExcessTokens).toFixed(1)} under, broken ${broken.worstExcessTokens.toFixed(1)} over the envelope`,
      );
      expect(broken.worstExcessTokens).toBeGreaterThan(1);
      expect(broken.violations.some((v) => v.includes('envelope exceeded'))).toBe(true);
    },
  );

  // Bursts every 1.5 s while each relay in turn is cut from the root for
  // 2.5 s, five TTLs: its upstream lease ends, and the root lends B to the
  // other relay. The broken relay's credit does not notice the end
  // (spend-after-upstream-lost): its agents keep spending what its level
  // held, beside what the root lends again.
  const upstreamLost = (seed: number, broken: boolean): SimConfig => ({
    ...relayBursts(seed, false),
    faults: [
      { kind: 'partition-relay', relay: 0, from: 'root', atUs: 2_500_000, forUs: 2_500_000 },
      { kind: 'partition-relay', relay: 1, from: 'root', atUs: 5_500_000, forUs: 2_500_000 },
    ],
    tree: { relays: 2, rootMaxLeaseTokens: 60 },
    ...(broken ? { broken: 'spend-after-upstream-lost' as const } : {}),
  });

  // Whether a seed's bursts fall where the lost lease's level is spent varies: the broken relay goes over
  // the envelope on most seeds (18 of these 24, 23 of seeds 1–30, when this was written), the honest one on none.
  it('catches a relay whose agents keep spending after its upstream lease is lost: the envelope fails at the root on most seeds', () => {
    const seeds = Array.from({ length: 24 }, (_, i) => i + 1);
    let caught = 0;
    for (const seed of seeds) {
      const honest = runSimulation(upstreamLost(seed, false));
      expect(honest.violations, `honest, seed ${seed}`).toEqual([]);
      const broken = runSimulation(upstreamLost(seed, true));
      const over = broken.worstExcessTokens > 1 && broken.violations.some((v) => v.includes('envelope exceeded'));
      if (over) caught += 1;
      console.log(
        `sim: spend-after-upstream-lost (seed ${seed}): honest closest ${(-honest.worstExcessTokens).toFixed(1)} under, broken ${broken.worstExcessTokens.toFixed(1)} over the envelope${over ? '' : ' (not caught)'}`,
      );
    }
    expect(caught, `caught on ${caught} of ${seeds.length} seeds`).toBeGreaterThanOrEqual(16);
  });

  it('asks the root far less than a flat fleet of the same size for about the same admissions', () => {
    const { tree, flat } = compareTree(treeScenario(2026, 4, 24, 10_000_000, false, 'bucket'));
    console.log(`sim: seed 2026, 4 relays, 24 agents, no faults\n  ${formatFigures('tree', tree)}\n  ${formatFigures('flat', flat)}`);
    expect(tree.result.violations).toEqual([]);
    expect(flat.result.violations).toEqual([]);
    expect(tree.rootRoundTripsPer1k).toBeLessThan(flat.rootRoundTripsPer1k / 3);
    expect(tree.utilization).toBeGreaterThan(0.9);
  });

  it('refuses a relay partition without a tree', () => {
    const config = { ...everyFault(1), faults: [{ kind: 'partition-relay' as const, relay: 0, from: 'root' as const, atUs: 1, forUs: 1 }] };
    const { tree: _tree, ...flat } = config;
    expect(() => runSimulation(flat)).toThrow(/needs a tree/);
  });
});
