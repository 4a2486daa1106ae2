/**
 * @tokenlease/agent/internal — for the project's tools (simulator, sweep,
 * benchmarks, tests): the public API and the cores the agent runs (its
 * driver, lease keeper, take queue, demand meter). Not a stable API for users.
 */
export * from './index.js';
export { LeaseKeeper, type SendAction, type KeeperStats, type PoolLimits } from './core/lease-keeper.js';
export { keeperOptions, DEFAULT_KEEPER_OPTIONS, KEEPER_OPTIONS, type KeeperOptions } from './core/keeper-options.js';
export { DemandMeter } from './core/demand-meter.js';
export { giveBackAllAt, takeAllAt, type SlotCharge } from './core/take-all.js';
export { TakeQueue, TAKE_TIMEOUT_MS_DEFAULT, type TakeArrival, type TakeDecisions, type TakeQueueHost } from './core/take-queue.js';
export {
  AgentDriver,
  AgentPool,
  KEEPER_TICK_MS_MAX,
  type AgentCommand,
  type AgentDriverOptions,
  type DriverEvent,
  type PoolWaiters,
} from './core/agent-driver.js';
export { keeperOptionsReference, httpOptionsReference } from './core/option-references.js';
