/**
 * @tokenlease/sim — the deterministic simulator as a library: the real
 * coordinator and agent cores over a simulated network, store and clock,
 * with faults, checking the envelope after every admission. The sweep runs
 * its fleets here; `tokenlease-sim` (main.ts) runs random scenarios.
 */
export { runSimulation, simWorkload } from './simulation.js';
export { describeScenario, randomScenario, SCENARIO_DURATION_US_DEFAULT, SCENARIO_MIXES, type ScenarioMix } from './scenario.js';
export { convergenceProblem, recoveredRate } from './converge.js';
export { faultsEndUs } from './fault-span.js';
export { concurrencyPool, windowOf, windowPool, type SimConfig, type SimPool, type SimResult } from './sim-config.js';
export { Network, type NetworkSpec } from './network.js';
export { TAKE_TIMEOUT_MS_DEFAULT, type Arrival, type Workload, type WorkloadName, type WorkloadSpec } from './workload.js';
