/**
 * What a tree costs and saves at the root: a tree scenario next to its flat
 * twin (the same agents, workload, network and agent faults, every agent on
 * the root: flatTwinOf), each with
 * - utilization: tokens admitted over the ideal, the fewer of the tokens
 *   offered and B + r·T over the traffic (no limiter with the envelope
 *   admits more; for bursty demand a loose bound, the same for both);
 * - round-trips at the root per 1,000 admissions: request attempts that
 *   reached for the root (the agents' on it, the relays') per 1,000
 *   admitted requests.
 * `runTreeScenarios` is what `tokenlease-sim --tree k` prints; a tree
 * fails it on any check, or when, saturated after its faults, it falls
 * short of its fault-free twin (converge.ts).
 */
import { convergenceProblem } from './converge.js';
import { describeScenario, type ScenarioMix } from './scenario.js';
import type { SimConfig, SimResult } from './sim-config.js';
import { runSimulation } from './simulation.js';
import { describeTree, flatTwinOf, treeScenario } from './tree.js';

const US_PER_S = 1_000_000;

export interface FleetFigures {
  readonly result: SimResult;
  readonly idealTokens: number;
  /** admitted / ideal, a fraction (1 when the ideal is 0). */
  readonly utilization: number;
  readonly rootRoundTripsPer1k: number;
}

/** fleetFigures — utilization and round-trips at the root of one run of `config`. */
export function fleetFigures(config: SimConfig, result: SimResult): FleetFigures {
  const p = config.pool;
  const refillTokens = (p.refill.tokens * config.durationUs) / (p.refill.periodMs * 1000);
  const idealTokens = Math.min(result.offeredTokens, p.capacity + (p.allowance ?? 0) + refillTokens);
  return {
    result,
    idealTokens,
    utilization: idealTokens === 0 ? 1 : result.admittedTokens / idealTokens,
    rootRoundTripsPer1k: result.admittedCount === 0 ? 0 : (1000 * result.rootRoundTrips) / result.admittedCount,
  };
}

/** compareTree — a tree scenario and its flat twin, run. */
export function compareTree(config: SimConfig): { readonly tree: FleetFigures; readonly flat: FleetFigures } {
  const flat = flatTwinOf(config);
  return { tree: fleetFigures(config, runSimulation(config)), flat: fleetFigures(flat, runSimulation(flat)) };
}

/** formatFigures — one line of figures, named `label`. */
export function formatFigures(label: string, f: FleetFigures): string {
  const r = f.result;
  return (
    `${label}: admitted ${r.admittedTokens} of ideal ${Math.round(f.idealTokens)} tokens (${(f.utilization * 100).toFixed(1)}%), ` +
    `${f.rootRoundTripsPer1k.toFixed(1)} round-trips at the root per 1,000 admissions (${r.rootRoundTrips} of ${r.roundTrips} round-trips), ` +
    `closest ${(-r.worstExcessTokens).toFixed(2)} under the envelope`
  );
}

/** TreeRun — what `runTreeScenarios` runs: `scenarios` tree scenarios from `seed` (treeScenario), with faults unless `calm`. */
export interface TreeRun {
  readonly seed: number;
  readonly scenarios: number;
  readonly relays: number;
  readonly agents: number;
  readonly durationUs: number;
  readonly calm: boolean;
  /** Which pools the scenarios draw (treeScenario); default mixed. */
  readonly mix?: ScenarioMix;
}

/** runTreeScenarios — runs and prints each scenario's tree and flat figures, then their totals; returns how many failed a check. */
export function runTreeScenarios(run: TreeRun, log: (line: string) => void): number {
  const mix = run.mix ?? 'mixed';
  const flags = `${run.calm ? ' --calm' : ''}${mix === 'mixed' ? '' : ` --pools ${mix}`}`;
  const replay = (seed: number): string =>
    `npm run sim -- --tree ${run.relays} --agents ${run.agents} --scenarios 1 --seed ${seed} --duration ${run.durationUs / US_PER_S}s${flags}`;
  log(
    `simulating ${run.scenarios} tree scenarios (${run.relays} relays, ${run.agents} agents${run.calm ? ', no faults' : ', with faults'}, ${mix} pools) from SEED=${run.seed}, each next to its flat twin`,
  );
  let failed = 0;
  const sums = { tree: new Totals(), flat: new Totals() };
  for (let i = 0; i < run.scenarios; i += 1) {
    const config = treeScenario(run.seed + i, run.relays, run.agents, run.durationUs, !run.calm, mix);
    const { tree, flat } = compareTree(config);
    const converged = convergenceProblem(config, tree.result);
    const violations = [
      ...tree.result.violations,
      ...(converged === null ? [] : [converged]),
      ...flat.result.violations.map((v) => `flat twin: ${v}`),
    ];
    if (violations.length > 0) failed += 1;
    sums.tree.add(tree);
    sums.flat.add(flat);
    log(`${violations.length === 0 ? 'ok  ' : 'FAIL'} seed ${config.seed}: ${describeTree(config)}, ${describeScenario(config)}`);
    log(`    ${formatFigures('tree', tree)}`);
    log(`    ${formatFigures('flat', flat)}`);
    for (const v of violations.slice(0, 5)) log(`    ${v}`);
    if (violations.length > 0) log(`    replay: ${replay(config.seed)}`);
  }
  log(`all: tree ${sums.tree.line()}; flat ${sums.flat.line()}`);
  log(`${run.scenarios - failed} passed, ${failed} failed`);
  return failed;
}

/** Totals — admitted, ideal and root round-trips summed over scenarios. */
class Totals {
  private admitted = 0;
  private ideal = 0;
  private admissions = 0;
  private rootRoundTrips = 0;

  add(f: FleetFigures): void {
    this.admitted += f.result.admittedTokens;
    this.ideal += f.idealTokens;
    this.admissions += f.result.admittedCount;
    this.rootRoundTrips += f.result.rootRoundTrips;
  }

  line(): string {
    const utilization = this.ideal === 0 ? 1 : this.admitted / this.ideal;
    const perK = this.admissions === 0 ? 0 : (1000 * this.rootRoundTrips) / this.admissions;
    return `${(utilization * 100).toFixed(1)}% of ideal, ${perK.toFixed(1)} root round-trips per 1,000 admissions`;
  }
}
