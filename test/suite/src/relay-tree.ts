/**
 * What the relay suites set up: a root coordinator on a prefix of the
 * run's own (configured by `rootDoc`), the scratch directory beside it,
 * relay configuration files written there, and agent processes of steady
 * traffic under a relay.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startAgentProcess, startCoordinator, writeConfig, type CoordinatorOptions } from '@tokenlease/harness/fleet';
import type { Child } from '@tokenlease/harness/processes';
import { seededRun, type SeededRun } from './servers.js';

/** RelayRoot — a seeded run's root coordinator: its subject prefix and the directory of its files. */
export interface RelayRoot extends SeededRun {
  readonly dir: string;
  /** The root coordinator's process. */
  readonly coordinator: Child;
  /** The root's subject prefix: `<stem><seed>`. */
  readonly root: string;
}

/** startRelayRoot — a seeded run (`label`, `testFile`) and its root coordinator, configured by `rootDoc` on prefix `<stem><seed>`. */
export async function startRelayRoot(
  natsUrl: string,
  label: string,
  testFile: string,
  stem: string,
  rootDoc: (root: string) => object,
  options: CoordinatorOptions = {},
): Promise<RelayRoot> {
  const run = seededRun(label, testFile);
  const dir = scratchDir();
  const root = `${stem}${run.seed}`;
  const coordinator = await startCoordinator(natsUrl, writeConfig(dir, rootDoc(root)), options);
  return { ...run, dir, root, coordinator };
}

/** writeRelayConfig — `doc` as the relay configuration file `<dir>/<name>.json`; returns its path. */
export function writeRelayConfig(dir: string, name: string, doc: object): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(doc));
  return path;
}

/** SteadyAgents — how `startSteadyAgents` runs its agents: one per pool named, on `prefix`. */
export interface SteadyAgents {
  readonly prefix: string;
  /** One agent per entry, on that pool. */
  readonly pools: readonly string[];
  /** Agent names are `<name><k>`; logs `<dir>/<name><k>.log`. */
  readonly name: string;
  readonly durationMs: number;
  readonly perSecond: number;
  readonly failoverPrefixes?: readonly string[];
}

/** startSteadyAgents — agent processes of steady traffic as `spec` says, seeded from the run; their logs' paths and the processes. */
export async function startSteadyAgents(
  natsUrl: string,
  run: RelayRoot,
  spec: SteadyAgents,
): Promise<{ readonly paths: string[]; readonly agents: Child[] }> {
  const paths = spec.pools.map((_pool, k) => join(run.dir, `${spec.name}${k}.log`));
  const agents = await Promise.all(
    spec.pools.map((pool, k) =>
      startAgentProcess({
        natsUrl,
        subjectPrefix: spec.prefix,
        ...(spec.failoverPrefixes === undefined ? {} : { failoverPrefixes: [...spec.failoverPrefixes] }),
        pool,
        name: `${spec.name}${k}`,
        seed: run.random.int(0, 2 ** 31),
        durationMs: spec.durationMs,
        logPath: paths[k] as string,
        traffic: { kind: 'steady', perSecond: spec.perSecond },
      }),
    ),
  );
  return { paths, agents };
}
