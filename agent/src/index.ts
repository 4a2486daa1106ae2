/**
 * @tokenlease/agent — the library a service embeds: the Agent and its
 * limiters (`tryTake`, `take`, `tryTakeAll`, and `giveBack` for requests
 * that should not count), their options, trace recording, metrics and
 * typed errors. The HTTP middleware is `@tokenlease/agent/http` and
 * `@tokenlease/agent/fastify`. The cores the agent runs (its driver, lease
 * keeper, take queue), which the project's tools drive directly, are
 * `@tokenlease/agent/internal`, not part of this API.
 *
 * @module @tokenlease/agent
 */
export { Agent, type AgentOptions, type AgentEvent, type LimiterOptions } from './adapters/agent.js';
export type { DriverEvent } from './core/agent-driver.js';
export { defaultInboxPrefix, type AgentNatsOptions } from './adapters/agent-bus.js';
export { redactUrl } from '@tokenlease/shared';
// busFromConnection — a Bus over an existing nats.js connection (Agent.connect's `connection` option does this itself).
export { busFromConnection, type NatsConnection } from '@tokenlease/shared/nats';
export { Limiter, type LimiterStats } from './adapters/limiter.js';
export { AgentMetrics, AGENT_POOL_LABELS_MAX, type AgentMetricsOptions } from './adapters/agent-metrics.js';
export { AgentError, type AgentErrorCode } from './errors.js';
export type { KeeperStats, PoolLimits } from './core/lease-keeper.js';
export { LeaseSlot, RECEIPT_DENIED, RECEIPT_NONE, type DenialReason } from './core/lease-slot.js';
export { HOLDS_MAX, SlotHolds } from './core/slot-holds.js';
export type { SlotCharge } from './core/take-all.js';
export { DEFAULT_KEEPER_OPTIONS, type KeeperOptions } from './core/keeper-options.js';
export type { ExpectedLimits } from '@tokenlease/shared';
export { TAKE_TIMEOUT_MS_DEFAULT } from './core/take-queue.js';
export type { RecordOptions, RecordingEvent, RecordingStats, RecordingStopReason } from './adapters/trace-recording.js';
