/**
 * @tokenlease/agent/http — the rate limit and the concurrency limit as node:http and Express/Connect middleware (adapters/http.ts).
 *
 * @module @tokenlease/agent/http
 */
export {
  createHttpLimit,
  createConcurrencyLimit,
  type ConcurrencyLimitMiddleware,
  type ConcurrencyLimitOptions,
  type OverrunFunction,
  type Charged,
  type HttpLimitMiddleware,
  type HttpLimitOptions,
  type KeySource,
  type PoolRule,
  type RequestView,
  type ResponseView,
  type SuccessFunction,
  type Verdict,
  type Problem,
  type ProblemType,
  type HeaderFormat,
  type DenialMessage,
  type SkipFunction,
  type KeyFunction,
  type CostFunction,
  type KeySecret,
  keyPoolName,
  KEY_SECRET_BYTES_MIN,
} from './adapters/http.js';
export { HttpLimit, type EndingResponse } from './adapters/http-limit.js';
export { ConcurrencyLimit, type DestroyableResponse, type Entry } from './adapters/concurrency-limit.js';
export type { Refusal } from './core/http-policy.js';
