/**
 * @tokenlease/chaos — the chaos suite as a library: its scenarios, the fleet
 * they run (private NATS, Redis, coordinator and agent processes) and the
 * verdict on each row. `tokenlease-chaos` (main.ts) runs them.
 */
export { parseChaosArgs, ChaosArgsError, SCENARIO_NAMES, type ChaosArgs, type ScenarioName } from './args.js';
export { ChaosFleet, OWNERSHIP_TTL_MS, type ChaosPool } from './chaos-fleet.js';
export { CHAOS_POOL, SCENARIOS, type ScenarioOptions, type ScenarioRow } from './scenarios.js';
export { BURST_POOL } from './redis-scenarios.js';
export { RELAY_ROOT_POOL } from './relay-scenario.js';
export { rowProblems } from './verdict.js';
