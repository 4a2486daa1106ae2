/**
 * npm run sim -- [--scenarios N] [--seed S] [--duration 20s] [--pools mixed|bucket|window] [--json]
 * npm run sim -- --tree K [--agents N] [--calm] [--pools mixed|bucket|window] [--scenarios N] [--seed S] [--duration 20s]
 *
 * Runs N random scenarios (seeds S, S+1, …) through the simulator and
 * prints one line each, then a summary (memory and durable scenarios,
 * how many of them in rate mode and how many window pools, failovers,
 * re-claims and takeovers, scenarios with hostile clients and those judged
 * for fair shares, violations); exits 1 if any check failed, printing the
 * command that replays the failing seed alone. `--pools` picks the pools
 * drawn: the usual mix (default), buckets only, window pools only, or
 * concurrency pools only (at most N requests in flight, judged by the
 * in-flight check of @tokenlease/shared/testing).
 *
 * `--tree K` runs tree scenarios instead (tree.ts treeScenario: K relays
 * over N agents, default 24, with relay and agent faults unless `--calm`,
 * buckets and window pools as `--pools` says),
 * each next to its flat twin, and prints utilization and round-trips at
 * the root per 1,000 admissions for both (tree-report.ts).
 */
import { parseArgs } from 'node:util';
import { describeScenario, randomScenario, SCENARIO_DURATION_US_DEFAULT, SCENARIO_MIXES, type ScenarioMix } from './scenario.js';
import { convergenceProblem, recoveredRate } from './converge.js';
import { fairShareProblem, judgesShares } from './hostile-fairness.js';
import type { SimConfig, SimResult } from './sim-config.js';
import { runSimulation } from './simulation.js';
import { TREE_AGENTS_DEFAULT } from './tree.js';
import { runTreeScenarios } from './tree-report.js';

const US_PER_S = 1_000_000;
/** Scenarios a run simulates unless --scenarios says. */
const SCENARIOS_DEFAULT = 100;

/** USAGE — the `--help` text. */
export const USAGE = `Usage: tokenlease-sim [flags]   (in the repository: npm run sim -- [flags])

Runs random scenarios (seeds S, S+1, ...) of the real coordinator and agent
cores in virtual time, under message loss, partitions, crashes, pauses,
clock drift, failover and hostile clients, and checks after every admission
that no window of length T admitted more than B + A + r*T. Prints one line
per scenario and a summary; exits 1 if any check failed, printing the
command that replays the failing seed alone.

  --scenarios N        scenarios to run (default ${SCENARIOS_DEFAULT})
  --seed S             the first scenario's seed (default: random, printed)
  --duration Ns        simulated traffic per scenario (default ${SCENARIO_DURATION_US_DEFAULT / US_PER_S}s)
  --pools MIX          the pools drawn: ${SCENARIO_MIXES.join(', ')} (default mixed)
  --json               one JSON object per scenario on stdout (JSON Lines), the other lines on stderr;
                       not with --tree
  --tree K             tree scenarios instead: K relays over --agents N agents (default ${TREE_AGENTS_DEFAULT}),
                       each next to its flat twin, with utilization and round-trips at the root
  --agents N           agents of a tree scenario
  --calm               tree scenarios without relay and agent faults
  --help               this text

Examples:
  tokenlease-sim --scenarios 1000 --seed 1
  tokenlease-sim --scenarios 1 --seed 1294299812 --duration 20s
  tokenlease-sim --tree 4 --agents 24 --scenarios 5

Docs: the README of the repository and its docs/tools.md.`;

/** Tally — what a batch of scenarios did, for the summary line. */
class Tally {
  durable = 0;
  rate = 0;
  windows = 0;
  concurrency = 0;
  shadows = 0;
  shadowTokens = 0;
  failovers = 0;
  deposed = 0;
  reclaimFaults = 0;
  reclaims = 0;
  lateOutcomes = 0;
  takeovers = 0;
  fencedWrites = 0;
  hostile = 0;
  fairJudged = 0;
  unfair = 0;
  violations = 0;

  add(config: SimConfig, result: SimResult, violations: number, unfair: boolean): void {
    if (config.hostile !== undefined) this.hostile += 1;
    if (config.hostile !== undefined && judgesShares(config) && result.fairShare !== null) this.fairJudged += 1;
    if (unfair) this.unfair += 1;
    const failovers = config.faults.filter((f) => f.kind === 'failover-coordinator');
    if (config.durable !== undefined) this.durable += 1;
    if (config.pool.leaseMode === 'rate') this.rate += 1;
    if (config.pool.window === true) this.windows += 1;
    if (config.pool.concurrency !== undefined) this.concurrency += 1;
    if (config.shadow !== undefined) this.shadows += 1;
    this.shadowTokens += result.shadowAdmittedTokens;
    this.failovers += failovers.length;
    this.deposed += failovers.filter((f) => f.deposedUs !== undefined).length;
    this.reclaimFaults += config.faults.filter((f) => f.kind === 'reclaim-coordinator').length;
    this.reclaims += result.reclaims;
    this.lateOutcomes += result.lateOutcomes;
    this.takeovers += result.takeovers;
    this.fencedWrites += result.fencedWrites;
    this.violations += violations;
  }

  line(scenarios: number): string {
    return (
      `${scenarios - this.durable} memory-mode and ${this.durable} durable scenarios, ${this.rate} of them with rate leases, ${this.windows} window pools, ${this.concurrency} concurrency pools, ` +
      `${this.shadows} with shadow mode switched (${this.shadowTokens} tokens admitted beyond leases while shadowed); ` +
      `${this.failovers} failovers (${this.deposed} of a deposed owner), ${this.reclaimFaults} re-claim faults ` +
      `(${this.reclaims} re-claims, ${this.lateOutcomes} outcomes landing after their ownership ended), ` +
      `${this.takeovers} takeovers from the store, ` +
      `${this.fencedWrites} writes fenced; ${this.hostile} with hostile clients (${this.fairJudged} judged for fair shares, ${this.unfair} unfair); ` +
      `${this.violations} violations`
    );
  }
}

function main(): number {
  const { values } = parseArgs({
    options: {
      scenarios: { type: 'string' },
      seed: { type: 'string' },
      duration: { type: 'string' },
      pools: { type: 'string' },
      json: { type: 'boolean' },
      tree: { type: 'string' },
      agents: { type: 'string' },
      calm: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help === true) {
    console.log(USAGE);
    return 0;
  }
  const scenarios = values.scenarios === undefined ? SCENARIOS_DEFAULT : Number(values.scenarios);
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
  const durationS = values.duration === undefined ? SCENARIO_DURATION_US_DEFAULT / US_PER_S : Number(values.duration.replace(/s$/, ''));
  if (!Number.isSafeInteger(scenarios) || scenarios < 1) throw new Error('--scenarios must be a positive integer');
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error('--seed must be a non-negative integer');
  if (!(durationS >= 1)) throw new Error('--duration must be at least 1s');
  if (values.tree !== undefined) {
    if (values.json === true) throw new Error('--json is not available with --tree (tree scenarios print text lines)');
    const relays = Number(values.tree);
    const agents = values.agents === undefined ? TREE_AGENTS_DEFAULT : Number(values.agents);
    if (!Number.isSafeInteger(relays) || relays < 1) throw new Error('--tree must be a positive integer (relays)');
    if (!Number.isSafeInteger(agents) || agents < 1) throw new Error('--agents must be a positive integer');
    const run = {
      seed,
      scenarios,
      relays,
      agents,
      durationUs: durationS * US_PER_S,
      calm: values.calm === true,
      mix: readMix(values.pools),
    };
    return runTreeScenarios(run, (line) => console.log(line)) === 0 ? 0 : 1;
  }
  const mix = readMix(values.pools);
  const pools = mix === 'mixed' ? '' : ` --pools ${mix}`;
  // With --json, stdout is one JSON object per scenario and nothing else; the readable lines go to stderr.
  const say = values.json === true ? (text: string) => console.error(text) : (text: string) => console.log(text);
  say(`simulating ${scenarios} scenarios (${mix} pools) from SEED=${seed}, ${durationS} s of traffic each`);
  let failed = 0;
  let simulated = 0;
  const tally = new Tally();
  const started = performance.now();
  for (let i = 0; i < scenarios; i += 1) {
    const config = randomScenario(seed + i, durationS * US_PER_S, mix);
    const result = runSimulation(config);
    simulated += result.simulatedSeconds;
    const recovered = recoveredRate(config, result);
    const converged = convergenceProblem(config, result);
    const fair = fairShareProblem(config, result);
    const violations = [...result.violations, ...(converged === null ? [] : [converged]), ...(fair === null ? [] : [fair])];
    const ok = violations.length === 0;
    if (!ok) failed += 1;
    tally.add(config, result, violations.length, fair !== null);
    const line =
      values.json === true
        ? JSON.stringify({
            seed: config.seed,
            ok,
            admitted: result.admittedTokens,
            worstExcessTokens: result.worstExcessTokens,
            fullestWindowTokens: result.fullestWindowTokens,
            peakInFlight: result.peakInFlight,
            meanInFlight: result.meanInFlight,
            recovered,
            roundTrips: result.roundTrips,
            violations,
          })
        : `${ok ? 'ok  ' : 'FAIL'} seed ${config.seed}: ${describeScenario(config)} → admitted ${result.admittedTokens}, closest ${(-result.worstExcessTokens).toFixed(2)} under the envelope` +
          (result.fullestWindowTokens === null ? '' : `, fullest window ${result.fullestWindowTokens} of N=${config.pool.capacity}`) +
          (result.peakInFlight === null
            ? ''
            : `, at most ${result.peakInFlight} in flight of N=${config.pool.capacity} (mean ${(result.meanInFlight ?? 0).toFixed(1)})`) +
          (recovered === null ? '' : `, rate after faults ${(recovered * 100).toFixed(0)}% of r`);
    console.log(line);
    if (!ok) {
      for (const v of violations) say(`    ${v}`);
      say(`    replay: npm run sim -- --scenarios 1 --seed ${config.seed} --duration ${durationS}s${pools}`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  say(tally.line(scenarios));
  say(`${scenarios - failed} passed, ${failed} failed (${simulated.toFixed(0)} simulated seconds in ${seconds.toFixed(1)} s)`);
  return failed === 0 ? 0 : 1;
}

function readMix(text: string | undefined): ScenarioMix {
  if (text === undefined) return 'mixed';
  const mix = SCENARIO_MIXES.find((m) => m === text);
  if (mix === undefined) throw new Error(`--pools must be one of ${SCENARIO_MIXES.join(', ')}, not ${JSON.stringify(text)}`);
  return mix;
}

try {
  process.exitCode = main();
} catch (error) {
  console.error(`sim: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 2;
}
