export { TokenleaseError, assertInvariant, type SharedErrorCode, type ErrorDetails } from './errors.js';
export * from './core/rate.js';
export * from './core/token-scale.js';
export * from './core/bucket.js';
export * from './protocol/subjects.js';
export * from './protocol/messages.js';
export * from './protocol/limits.js';
export * from './protocol/codec.js';
export * from './adapters/nats-bus.js';
