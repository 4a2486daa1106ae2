/**
 * @tokenlease/coordinator/internal — for the project's tools (simulator,
 * sweep, benchmarks, tests): the public API and the cores, drivers and
 * parts they drive directly. Not a stable API for users.
 */
export * from './index.js';
export { CoordinatorCore } from './core/coordinator-core.js';
export { Pool, type Delivery } from './core/pool.js';
export { LeaseTable, type LeaseRecord } from './core/lease-table.js';
export { parseCoordinatorConfig, type CoordinatorConfig, type PoolConfig, DEFAULT_TTL_MS, MIN_TTL_MS, MAX_TTL_MS } from './core/config.js';
export { waterFill, exactShares } from './core/water-fill.js';
export { CoordinatorError, type CoordinatorErrorCode } from './errors.js';
export { loadConfigFile } from './adapters/config-file.js';
export { TICK_MS_MAX } from './adapters/tick-timer.js';
export { startCoordinatorService, type CoordinatorService, type ServiceOptions } from './adapters/service.js';
export { connectRedisStore, parseRedisUrl, type StateStore, type Claim, type RedisStoreOptions } from './adapters/redis-store.js';
export {
  resolveRedisOptions,
  checkRedisUrl,
  REDIS_ENV,
  REDIS_FLAGS,
  type RedisConnectOptions,
  type RedisTls,
} from './core/redis-options.js';
export { parseClusterUrl, isClusterUrl, type RedisSeed, type ClusterUrl } from './core/redis-cluster-url.js';
export { confirmWrite, type ConfirmedWrite } from './core/replica-confirm.js';
export { createLogger, REDACT_PATHS, LOG_LEVELS } from './adapters/logger.js';
export {
  startDurableService,
  DEFAULT_OWNERSHIP_TTL_MS,
  type DurableService,
  type DurableServiceOptions,
} from './adapters/durable-service.js';
export { CATCH_ALL_UNIT, preferredOwner, planOwnership, ownershipUnits, rendezvousScore, type OwnershipPlan } from './core/ownership.js';
export {
  isDamaged,
  type PersistedPool,
  type PersistedLease,
  type PoolChanges,
  type DamagedPool,
  type StoredPool,
} from './core/pool-state.js';
export { stateProblem } from './core/pool-takeover.js';
export {
  WriteLane,
  refuseBatch,
  type Batch,
  type ChangeSource,
  type LaneStep,
  type LaneWrite,
  type WriteOutcome,
} from './core/write-lane.js';
export { routeCatchAll, type CatchAllRoute } from './core/ownership.js';
export type { PoolFault } from './core/coordinator-core.js';
export {
  RelayCore,
  type RelayCreditFactory,
  type UplinkIdentity,
  type UplinkIdentitySource,
  type UpstreamLeaseView,
} from './core/relay-core.js';
export { RelayCredit } from './core/relay-credit.js';
export { Uplink, type UplinkOptions } from './core/uplink.js';
export { parseRelayConfig, type RelayConfig, type UplinkSettings } from './core/relay-config.js';
export { RelayDriver, type RelayCommand, type RelayDriverOptions, type RelayLog, type UpstreamOutcome } from './core/relay-driver.js';
export { OwnershipDriver, LEGACY_KEY, OWNER_SEEN_US, type Held, type OwnershipDriverOptions } from './core/ownership-driver.js';
export type { OwnershipCommand, ReplyLabel, LogLine } from './core/ownership-commands.js';
export type { StoreCall, StoreResult, StoreAnswers, StoreOp, Members } from './core/ownership-store.js';
export { BeatPlan, HEARTBEAT_RETRY_MS } from './core/beat-plan.js';
