/**
 * Trees: the configuration side of a fleet under relays (TreeSpec): which
 * relay an agent slot leases from, the root's pool, the network cuts a
 * relay's partition makes, the flat fleet of the same size and workload
 * (the yardstick of a tree), and random tree scenarios with faults of
 * relays and agents, drawn from one seed.
 */
import { makeRate } from '@tokenlease/shared';
import { seededRandom } from '@tokenlease/shared/testing';
import type { Partition } from './network.js';
import type { ScenarioMix } from './scenario.js';
import { windowPool, type Fault, type SimConfig, type SimPool, type TreeSpec } from './sim-config.js';
import { relayLink } from './sim-events.js';
import type { WorkloadSpec } from './workload.js';

/** relayOfSlot — the relay agent slot `slot` leases from in `tree`, or null: the root. */
export function relayOfSlot(tree: TreeSpec, slot: number): number | null {
  const rootAgents = tree.rootAgents ?? 0;
  return slot < rootAgents ? null : (slot - rootAgents) % tree.relays;
}

/** rootPoolOf — the pool as the root serves it: a tree's root leases up to `rootMaxLeaseTokens` (default B), a relay's chunk. */
export function rootPoolOf(config: SimConfig): SimPool {
  const tree = config.tree;
  return tree === undefined ? config.pool : { ...config.pool, maxLeaseTokens: tree.rootMaxLeaseTokens ?? config.pool.capacity };
}

/**
 * relayPartitionsOf — the network's cuts for the relays' partitions: from
 * the root, the relay's own link; from its agents, each agent's link (an
 * agent under a relay talks to nothing else). Times from the start of traffic.
 */
export function relayPartitionsOf(config: SimConfig): Partition[] {
  const tree = config.tree;
  const out: Partition[] = [];
  for (const f of config.faults) {
    if (f.kind !== 'partition-relay') continue;
    if (tree === undefined) throw new Error('a partition-relay fault needs a tree');
    const slots = Array.from({ length: config.agents }, (_, s) => s).filter((s) => relayOfSlot(tree, s) === f.relay);
    out.push({ agents: f.from === 'root' ? [relayLink(f.relay)] : slots, fromUs: f.atUs, toUs: f.atUs + f.forUs });
  }
  return out;
}

/** flatTwinOf — the same fleet, workload, network and agent faults with every agent on the root: the yardstick of a tree. */
export function flatTwinOf(config: SimConfig): SimConfig {
  const { tree: _tree, ...flat } = config;
  return {
    ...flat,
    faults: config.faults.filter((f) => f.kind !== 'crash-relay' && f.kind !== 'pause-relay' && f.kind !== 'partition-relay'),
  };
}

/** TREE_AGENTS_DEFAULT — agents in a tree scenario unless said otherwise. */
export const TREE_AGENTS_DEFAULT = 24;
/**
 * TREE_RELAY_DRIFT_MAX — how far a relay's clock may drift in a tree
 * scenario: with the agents' 4%, their relative drift stays within the
 * agents' 10% margin, as it must against any coordinator.
 */
export const TREE_RELAY_DRIFT_MAX = 0.01;
/** Faults and partitions start this long into a run at the earliest, µs: leases are out by then. */
const FAULTS_FROM_US = 1_000_000;

/**
 * treeScenario — a tree of `relays` relays over `agents` agents (up to two
 * of them on the root directly), drawn from `seed`: a bucket of B = 20 per
 * agent refilled at 2B/s (or a window pool of that B per 500 ms: in
 * TREE_WINDOW_SHARE of them for the `mixed` mix, all for `window`, none
 * for `bucket`), per-agent leases of a quarter of the agent's
 * share of B, a relay's chunk up to B/relays; a steady, bursty or zipf
 * workload of 1.2 to 3 times the refill; a network of 0.2 to 3 ms with some
 * loss and duplicates; relay clocks drifting up to TREE_RELAY_DRIFT_MAX.
 * With `faults`, in the first half of the run: one to
 * three relay faults (crash, pause past the TTL, partition from the root or
 * from its agents) and up to two agent crashes or pauses and an agent
 * partition.
 */
export function treeScenario(
  seed: number,
  relays: number,
  agents = TREE_AGENTS_DEFAULT,
  durationUs = 20_000_000,
  faults = true,
  mix: ScenarioMix = 'mixed',
): SimConfig {
  const r = seededRandom(seed);
  const capacity = 20 * agents;
  const leaseTtlMs = [500, 1000, 2000][r.int(0, 2)] as number;
  const ttlUs = leaseTtlMs * 1000;
  const load = 1.2 + r.next() * 1.8;
  const workloads: WorkloadSpec[] = [
    { name: 'steady', load },
    { name: 'bursty', load, onMs: r.int(200, 1000), offMs: r.int(100, 2000) },
    { name: 'zipf', load, exponent: 0.5 + r.next() },
  ];
  const at = (): number => r.int(FAULTS_FROM_US, durationUs / 2);
  const drawn: Fault[] = [];
  const partitions: Partition[] = [];
  if (faults) {
    for (let i = r.int(1, 3); i > 0; i -= 1) {
      const relay = r.int(0, relays - 1);
      const kind = (['crash-relay', 'pause-relay', 'partition-relay'] as const)[r.int(0, 2)] ?? 'crash-relay';
      if (kind === 'crash-relay') drawn.push({ kind, relay, atUs: at(), downUs: r.int(100_000, 2_000_000) });
      else if (kind === 'pause-relay') drawn.push({ kind, relay, atUs: at(), forUs: r.int(ttlUs / 2, 3 * ttlUs) });
      else drawn.push({ kind, relay, from: r.next() < 0.5 ? 'root' : 'agents', atUs: at(), forUs: r.int(ttlUs / 2, 3 * ttlUs) });
    }
    for (let i = r.int(0, 2); i > 0; i -= 1) {
      const agent = r.int(0, agents - 1);
      if (r.next() < 0.5) drawn.push({ kind: 'crash-agent', agent, atUs: at(), downUs: r.int(200_000, 2_000_000) });
      else drawn.push({ kind: 'pause-agent', agent, atUs: at(), forUs: r.int(ttlUs, 3 * ttlUs) });
    }
    if (r.next() < 0.5) {
      const fromUs = at();
      partitions.push({ agents: [r.int(0, agents - 1)], fromUs, toUs: fromUs + r.int(ttlUs / 2, 2 * ttlUs) });
    }
  }
  return {
    seed,
    agents,
    durationUs,
    pool: poolOf(mix === 'window' || (mix === 'mixed' && r.next() < TREE_WINDOW_SHARE), capacity, {
      leaseTtlMs,
      maxLeaseTokens: 5,
      minGrantTokens: 1,
      relayClasses: { relay: agents },
    }),
    workload: workloads[r.int(0, workloads.length - 1)] as WorkloadSpec,
    network: {
      latencyUs: r.int(200, 3000),
      lossRate: r.next() < 0.5 ? 0 : r.next() * 0.03,
      duplicateRate: r.next() < 0.5 ? 0 : r.next() * 0.03,
    },
    partitions,
    faults: drawn,
    driftMax: 0.04,
    tree: {
      relays,
      rootAgents: r.int(0, 2),
      rootMaxLeaseTokens: Math.max(1, Math.floor(capacity / relays)),
      uplink: { agentClass: 'relay' },
      relayDrift: Array.from({ length: relays }, () => (r.next() * 2 - 1) * TREE_RELAY_DRIFT_MAX),
    },
  };
}

/** TREE_WINDOW_SHARE — the share of tree scenarios whose pool is a sliding window rather than a bucket. */
export const TREE_WINDOW_SHARE = 0.3;

/** poolOf — a tree scenario's pool: B refilled at 2B/s, or at most B in every window of 500 ms. */
function poolOf(window: boolean, capacity: number, rest: Omit<SimPool, 'capacity' | 'refill' | 'window'>): SimPool {
  return window ? windowPool(capacity, 500, rest) : { ...rest, capacity, refill: makeRate(2 * capacity, 1000) };
}

/** describeTree — the tree part of a scenario's one-line description. */
export function describeTree(c: SimConfig): string {
  const t = c.tree;
  if (t === undefined) return 'flat';
  return `tree of ${t.relays} relays (${t.rootAgents ?? 0} agents on the root, relay chunks up to ${rootPoolOf(c).maxLeaseTokens})`;
}
