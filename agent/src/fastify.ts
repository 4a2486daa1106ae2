/** @tokenlease/agent/fastify — the rate limit as a Fastify plugin (adapters/fastify.ts). */
export { fastifyRateLimit, type HttpLimitOptions, type KeySource, type PoolRule, type RequestView } from './adapters/fastify.js';
