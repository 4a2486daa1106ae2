export { CoordinatorCore } from './core/coordinator-core.js';
export { Pool, type Delivery } from './core/pool.js';
export { LeaseTable, type LeaseRecord } from './core/lease-table.js';
export { parseCoordinatorConfig, type CoordinatorConfig, type PoolConfig, DEFAULT_TTL_MS } from './core/config.js';
export { CoordinatorError, type CoordinatorErrorCode } from './errors.js';
export { loadConfigFile } from './adapters/config-file.js';
export { startCoordinatorService, type CoordinatorService, type ServiceOptions } from './adapters/service.js';

