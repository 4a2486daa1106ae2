export { Agent, type AgentOptions, type AgentEvent, type LimiterOptions } from './adapters/agent.js';
export { defaultInboxPrefix, type AgentNatsOptions } from './adapters/agent-bus.js';
export { redactUrl } from '@tokenlease/shared';
/** busFromConnection — a Bus over an existing nats.js connection (Agent.connect's `connection` option does this itself). */
export { busFromConnection, type NatsConnection } from '@tokenlease/shared/nats';
export { Limiter, type LimiterStats } from './adapters/limiter.js';
export { AgentMetrics, AGENT_POOL_LABELS_MAX, type AgentMetricsOptions } from './adapters/agent-metrics.js';
export { AgentError, type AgentErrorCode } from './errors.js';
export { LeaseKeeper, type SendAction, type KeeperStats, type PoolLimits } from './core/lease-keeper.js';
export { LeaseSlot, type DenialReason } from './core/lease-slot.js';
export { keeperOptions, DEFAULT_KEEPER_OPTIONS, type KeeperOptions } from './core/keeper-options.js';
export { DemandMeter } from './core/demand-meter.js';
export { takeAllAt, type SlotCharge } from './core/take-all.js';
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
