/**
 * The rate limit as node:http and Express/Connect middleware
 * (`@tokenlease/agent/http`). It moves bytes only: HttpLimit charges the
 * pools, HttpPolicy decides statuses and fields.
 *
 * `createHttpLimit(options)` returns a function that is both:
 * - Express/Connect middleware, `(req, res, next)`: calls `next()` when
 *   admitted, answers the refusal itself otherwise;
 * - a node:http helper, `await limit(req, res)`: resolves true when
 *   admitted (the handler goes on), false after it answered the refusal.
 * Every response it touches gets the rate-limit fields (`RateLimit-Policy`
 * and `RateLimit` unless option `headers` says otherwise). Key and cost
 * functions get `req` itself: Express's request under Express;
 * `requestWasSuccessful` gets `req` and `res`. With `skipFailedRequests` or
 * `skipSuccessfulRequests` it watches `res` end ('finish', or 'close'
 * before it finished) and hands the outcome to HttpLimit.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpLimit, type HttpLimitOptions, type RequestView, type Verdict } from './http-limit.js';
import { ConcurrencyLimit, type ConcurrencyLimitOptions } from './concurrency-limit.js';

export type { ConcurrencyLimitOptions, OverrunFunction } from './concurrency-limit.js';

export type {
  Charged,
  CostFunction,
  HttpLimitOptions,
  KeyFunction,
  KeySource,
  PoolRule,
  RequestView,
  ResponseView,
  SkipFunction,
  SuccessFunction,
  Verdict,
} from './http-limit.js';
export type { DenialMessage, HeaderFormat, Problem, ProblemType } from '../core/http-policy.js';
export { keyPoolName, KEY_SECRET_BYTES_MIN, type KeySecret } from './key-hash.js';

/** What Express adds to a request, when it is there: the client address after `trust proxy`, and the matched route. */
interface ExpressExtras {
  readonly ip?: string;
  readonly baseUrl?: string;
  readonly route?: { readonly path?: unknown };
}

/** HttpLimitMiddleware — Express/Connect middleware, and `await limit(req, res)` for node:http. */
export type HttpLimitMiddleware<Req extends IncomingMessage = IncomingMessage> = (
  req: Req,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => Promise<boolean>;

/**
 * viewOf — what the middleware reads of `req`. The route is Express's
 * matched pattern (`baseUrl` + `route.path`) where the middleware runs on a
 * route; before routing (`app.use`) or under node:http it is unknown, and
 * never the raw path, which would make every URL a partition.
 */
function viewOf<Req extends IncomingMessage>(req: Req): RequestView<Req> {
  const extras = req as Req & ExpressExtras;
  const routePath = typeof extras.route?.path === 'string' ? `${extras.baseUrl ?? ''}${extras.route.path}` : undefined;
  return {
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
    ip: extras.ip ?? req.socket.remoteAddress,
    route: routePath,
    native: req,
  };
}

/** answer — writes `verdict`'s fields, and its refusal when refused. */
function answer(res: ServerResponse, verdict: Verdict): void {
  if (res.headersSent) return;
  for (const [name, value] of verdict.headers) res.setHeader(name, value);
  if (verdict.admitted) return;
  const { status, problem, retryAfterSeconds, body } = verdict.refusal;
  if (retryAfterSeconds !== null) res.setHeader('Retry-After', String(retryAfterSeconds));
  res.statusCode = status;
  res.setHeader('Content-Type', body?.contentType ?? 'application/problem+json');
  res.end(body?.text ?? JSON.stringify(problem));
}

/**
 * createHttpLimit — the middleware for `options` (see HttpLimitOptions).
 * Throws AgentError('invalid-argument') for bad options.
 */
export function createHttpLimit<Req extends IncomingMessage = IncomingMessage>(
  options: HttpLimitOptions<Req, ServerResponse>,
): HttpLimitMiddleware<Req> {
  const limit = new HttpLimit<Req, ServerResponse>(options);
  return async (req, res, next) => {
    let verdict: Verdict;
    try {
      verdict = await limit.check(viewOf(req));
    } catch (error) {
      if (next === undefined) throw error;
      next(error);
      return false;
    }
    answer(res, verdict);
    if (!verdict.admitted) return false;
    limit.settleAtEnd(verdict, req, res, res);
    next?.();
    return true;
  };
}

/** ConcurrencyLimitMiddleware — Express/Connect middleware, and `await limit(req, res)` for node:http; `inFlight`: this agent's requests holding slots now. */
export type ConcurrencyLimitMiddleware<Req extends IncomingMessage = IncomingMessage> = ((
  req: Req,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => Promise<boolean>) & { readonly inFlight: number };

/**
 * createConcurrencyLimit — middleware that lets at most N requests run at
 * once across the fleet (N: the concurrency pool's limit; see
 * ConcurrencyLimitOptions). Admitted, it calls `next()` (resolves true) and
 * releases the slot when the response finishes or closes; refused, it
 * answers 503 with `Retry-After` itself (resolves false). Beside a rate
 * limit, mount both: each charges its own pool. Throws
 * AgentError('invalid-argument') for bad options.
 */
export function createConcurrencyLimit<Req extends IncomingMessage = IncomingMessage>(
  options: ConcurrencyLimitOptions<Req>,
): ConcurrencyLimitMiddleware<Req> {
  const limit = new ConcurrencyLimit<Req>(options);
  const middleware = async (req: Req, res: ServerResponse, next?: (error?: unknown) => void): Promise<boolean> => {
    const entry = await limit.enter(req);
    if (!entry.admitted) {
      answer(res, { admitted: false, headers: [], refusal: entry.refusal });
      return false;
    }
    limit.watch(entry, req, res);
    next?.();
    return true;
  };
  return Object.defineProperty(middleware, 'inFlight', { get: () => limit.inFlight }) as ConcurrencyLimitMiddleware<Req>;
}
