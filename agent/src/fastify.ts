/** @tokenlease/agent/fastify — the rate limit as a Fastify plugin (adapters/fastify.ts). */
export {
  fastifyRateLimit,
  keyPoolName,
  KEY_SECRET_BYTES_MIN,
  type CostFunction,
  type FastifyRequestLike,
  type HeaderFormat,
  type DenialMessage,
  type SkipFunction,
  type HttpLimitOptions,
  type KeyFunction,
  type KeySecret,
  type KeySource,
  type PoolRule,
  type Problem,
  type ProblemType,
  type RequestView,
} from './adapters/fastify.js';
