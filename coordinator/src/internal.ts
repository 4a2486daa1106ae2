/**
 * @tokenlease/coordinator/internal — for the project's tools (simulator,
 * sweep, benchmarks, tests): the public API and the cores, drivers and
 * parts they drive directly. Not a stable API for users.
 */
export * from './index.js';
export { CoordinatorCore } from './core/coordinator-core.js';
export { READ_AHEAD_MAX } from './core/read-ahead.js';
export { Pool, type Delivery } from './core/pool.js';
export { LeaseTable, type LeaseRecord } from './core/lease-table.js';
export { LeaseIdForm } from './core/lease-id.js';
export { waterFill, exactShares } from './core/water-fill.js';
export { TICK_MS_MAX } from './adapters/tick-timer.js';
export { setCoordinatorHeapFlags } from './adapters/heap-flags.js';
export { type Claim } from './adapters/redis-store.js';
export { checkRedisUrl } from './core/redis-options.js';
export { commandLineReference } from './core/command-line-reference.js';
export { COMMAND_LINES, COORDINATOR_COMMAND, OPERATOR_COMMAND, RELAY_COMMAND } from './core/command-lines.js';
export { parseClusterUrl, isClusterUrl, type RedisSeed, type ClusterUrl } from './core/redis-cluster-url.js';
export { confirmWrite, type ConfirmedWrite } from './core/replica-confirm.js';
export { onlineReplicas } from './core/replica-shortfall.js';
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
export { RelayDriver, type RelayCommand, type RelayDriverOptions, type RelayLog, type UpstreamOutcome } from './core/relay-driver.js';
export { OwnershipDriver, LEGACY_KEY, OWNER_SEEN_US, type Held, type OwnershipDriverOptions } from './core/ownership-driver.js';
export type { OwnershipCommand, ReplyLabel, LogLine } from './core/ownership-commands.js';
export type { StoreCall, StoreResult, StoreAnswers, StoreOp, Members } from './core/ownership-store.js';
export { BeatPlan, HEARTBEAT_RETRY_MS } from './core/beat-plan.js';
export { poolsFileJsonSchema, relayFileJsonSchema, poolsFileReference, relayFileReference } from './core/config-reference.js';
