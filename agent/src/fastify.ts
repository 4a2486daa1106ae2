/**
 * @tokenlease/agent/fastify — the rate limit and the concurrency limit as Fastify plugins (adapters/fastify.ts).
 *
 * @module @tokenlease/agent/fastify
 */
export {
  fastifyRateLimit,
  fastifyConcurrencyLimit,
  type ConcurrencyLimitOptions,
  type OverrunFunction,
  keyPoolName,
  KEY_SECRET_BYTES_MIN,
  type CostFunction,
  type FastifyLike,
  type FastifyRateLimitOptions,
  type FastifyReplyLike,
  type FastifyRequestLike,
  type RouteOptionsLike,
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
  type ResponseView,
  type SuccessFunction,
} from './adapters/fastify.js';
