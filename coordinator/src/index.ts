/**
 * @tokenlease/coordinator — the coordinator as a library: the services the
 * bins run (memory and durable), their configuration, the Redis store, the
 * logger, and typed errors. The cores, drivers and their parts, which the
 * project's tools (simulator, benchmarks, tests) drive directly, are
 * `@tokenlease/coordinator/internal`, not part of this API.
 *
 * @module @tokenlease/coordinator
 */
export {
  parseCoordinatorConfig,
  type CoordinatorConfig,
  type PoolConfig,
  type TemplateConfig,
  type LeaseMode,
  type WindowLimit,
  type SlotLimit,
  DEFAULT_TTL_MS,
  MIN_TTL_MS,
  MAX_TTL_MS,
} from './core/config.js';
export { CoordinatorError, type CoordinatorErrorCode } from './errors.js';
export { loadConfigFile } from './adapters/config-file.js';
export { startCoordinatorService, type CoordinatorService, type ServiceOptions } from './adapters/service.js';
export type { ReconfigureSummary } from './core/pool-registry.js';
export type { ServiceObserver, StoreWriteOutcome } from './adapters/metrics.js';
export { connectRedisStore, parseRedisUrl, type StateStore, type RedisStoreOptions } from './adapters/redis-store.js';
export { resolveRedisOptions, type RedisConnectOptions, type RedisTls } from './core/redis-options.js';
export { REDIS_ENV, REDIS_FLAGS, type RedisField } from './core/redis-settings.js';
export type { RedisSeed } from './core/redis-cluster-url.js';
export { createLogger, REDACT_PATHS } from './adapters/logger.js';
export { LOG_LEVELS } from './core/command-lines.js';
export { startDurableService, type DurableService, type DurableServiceOptions } from './adapters/durable-service.js';
export { DEFAULT_OWNERSHIP_TTL_MS } from './core/ownership-driver.js';
export { parseRelayConfig, type RelayConfig, type UplinkSettings } from './core/relay-config.js';
