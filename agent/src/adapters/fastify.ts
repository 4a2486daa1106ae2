/**
 * The rate limit as a Fastify plugin (`@tokenlease/agent/fastify`),
 * registered the Fastify way:
 *
 *   await app.register(fastifyRateLimit, { agent, pools: [{ name: 'api' }] });
 *
 * It adds an `onRequest` hook; the plugin is marked `skip-override` (as
 * fastify-plugin does), so the hook applies to the routes of the instance
 * that registered it, not only inside a child scope. It moves bytes only:
 * HttpLimit charges the pools, HttpPolicy decides statuses and fields.
 * Typed structurally, so the agent needs no Fastify at build or run time.
 *
 * Per route, as @fastify/rate-limit users write it, a route's
 * `config.rateLimit` overrides the plugin's options for that route:
 *
 *   app.get('/search', { config: { rateLimit: { pools: [{ name: 'search' }] } } }, handler);
 *   app.get('/health', { config: { rateLimit: false } }, handler); // not limited
 *
 * and `global: false` limits only the routes that say so. A route's
 * options are checked when the route is added (a bad one fails the
 * route's registration), and each route's limit is made once.
 *
 * With `skipFailedRequests` or `skipSuccessfulRequests` the hook watches
 * `reply.raw` end ('finish', or 'close' before it finished: Fastify's
 * onResponse misses a client that went away) and hands the outcome to
 * HttpLimit; `requestWasSuccessful` gets the request and the reply.
 */
import { AgentError } from '../errors.js';
import { HttpLimit, type EndingResponse, type HttpLimitOptions, type RequestView, type Verdict } from './http-limit.js';
import { ConcurrencyLimit, type ConcurrencyLimitOptions, type DestroyableResponse } from './concurrency-limit.js';

/** RouteRateLimit — a route's `config.rateLimit`: false (not limited), or options over the plugin's (all but the agent). */
export type RouteRateLimit<Req = FastifyRequestLike, Res = FastifyReplyLike> = false | Partial<Omit<HttpLimitOptions<Req, Res>, 'agent'>>;

/** FastifyRateLimitOptions — HttpLimitOptions, `pools` optional with `global: false` (each limited route names its own). */
export type FastifyRateLimitOptions<Req = FastifyRequestLike, Res = FastifyReplyLike> = Omit<HttpLimitOptions<Req, Res>, 'pools'> & {
  readonly pools?: HttpLimitOptions<Req, Res>['pools'];
  /** False: only routes with a `config.rateLimit` of their own are limited. Default true. */
  readonly global?: boolean;
};

/** What the hook reads of a Fastify request; key and cost functions get the request itself. */
export interface FastifyRequestLike {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly ip: string;
  readonly url: string;
  readonly routeOptions?: { readonly url?: string | undefined; readonly config?: unknown };
}

/** RouteOptionsLike — what the plugin reads of a route as it is added. */
export interface RouteOptionsLike {
  readonly url?: string;
  readonly config?: unknown;
}

/** What the hook writes on a Fastify reply, and reads of it as it ends; `requestWasSuccessful` gets the reply itself. */
export interface FastifyReplyLike {
  /** header — sets the response header `name`. */
  header(name: string, value: string): unknown;
  /** code — sets the response status. */
  code(status: number): unknown;
  /** send — sends `body` as the response. */
  send(body: Uint8Array): unknown;
  readonly statusCode: number;
  readonly raw: EndingResponse & Partial<Pick<DestroyableResponse, 'destroy'>>;
}

/** FastifyLike — what the plugin needs of a Fastify instance. */
export interface FastifyLike {
  /** addHook — `onRequest`: the hook that limits each request. */
  addHook(name: 'onRequest', hook: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<void>): unknown;
  /** addHook — `onRoute`: the hook that reads each route's options as it is added. */
  addHook(name: 'onRoute', hook: (route: RouteOptionsLike) => void): unknown;
}

/** routeRateLimit — a route config's `rateLimit`: undefined when it has none. */
function routeRateLimit(config: unknown): unknown {
  return typeof config === 'object' && config !== null && Object.hasOwn(config, 'rateLimit')
    ? (config as { rateLimit: unknown }).rateLimit
    : undefined;
}

/** viewOf — what the hook reads of `request`: the route is the route's pattern (`routeOptions.url`), never the raw path. */
function viewOf(request: FastifyRequestLike): RequestView<FastifyRequestLike> {
  return {
    header: (name) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
    ip: request.ip,
    route: request.routeOptions?.url,
    native: request,
  };
}

function answer(reply: FastifyReplyLike, verdict: Verdict): void {
  for (const [name, value] of verdict.headers) reply.header(name, value);
  if (verdict.admitted) return;
  const { status, problem, retryAfterSeconds, body } = verdict.refusal;
  if (retryAfterSeconds !== null) reply.header('Retry-After', String(retryAfterSeconds));
  reply.header('Content-Type', body?.contentType ?? 'application/problem+json');
  reply.code(status);
  // Bytes, so Fastify adds no charset to the problem's media type.
  reply.send(new TextEncoder().encode(body?.text ?? JSON.stringify(problem)));
}

/**
 * fastifyRateLimit — the plugin; `options` as HttpLimitOptions. Registering
 * it with bad options fails the registration with AgentError('invalid-argument').
 */
export function fastifyRateLimit(fastify: FastifyLike, options: FastifyRateLimitOptions, done: (error?: Error) => void): void {
  let everyRoute: HttpLimit<FastifyRequestLike, FastifyReplyLike> | null;
  try {
    if (options.global !== undefined && typeof options.global !== 'boolean')
      throw new AgentError('invalid-argument', `option global must be true or false, got ${JSON.stringify(options.global)}`);
    everyRoute = options.global === false ? null : new HttpLimit({ ...options, pools: options.pools ?? [] });
  } catch (error) {
    done(error instanceof Error ? error : new Error(String(error)));
    return;
  }
  // Each route's own limit, made once, keyed by its `config.rateLimit` object (Fastify copies the config, not what it holds).
  const routes = new WeakMap<object, HttpLimit<FastifyRequestLike, FastifyReplyLike>>();
  const routeLimit = (own: unknown, url: string | undefined): HttpLimit<FastifyRequestLike, FastifyReplyLike> => {
    if (typeof own !== 'object' || own === null || Array.isArray(own))
      throw new AgentError('invalid-argument', `route ${url ?? '?'}: config.rateLimit must be false or an object of options`);
    let limit = routes.get(own);
    if (limit === undefined) {
      const merged = { ...options, ...(own as RouteRateLimit), agent: options.agent };
      try {
        limit = new HttpLimit({ ...merged, pools: merged.pools ?? [] });
      } catch (error) {
        if (error instanceof AgentError)
          throw new AgentError('invalid-argument', `route ${url ?? '?'}: ${error.message}`, { cause: error });
        throw error;
      }
      routes.set(own, limit);
    }
    return limit;
  };
  fastify.addHook('onRoute', (route) => {
    const own = routeRateLimit(route.config);
    if (own !== undefined && own !== false) routeLimit(own, route.url);
  });
  fastify.addHook('onRequest', async (request, reply) => {
    const own = routeRateLimit(request.routeOptions?.config);
    const limit = own === undefined ? everyRoute : own === false ? null : routeLimit(own, request.routeOptions?.url);
    if (limit === null) return;
    const verdict = await limit.check(viewOf(request));
    answer(reply, verdict);
    limit.settleAtEnd(verdict, request, reply.raw, reply);
  });
  done();
}

// fastify-plugin's conventions, without depending on it: no encapsulation, a name, the Fastify versions it runs on.
Object.assign(fastifyRateLimit, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: '@tokenlease/agent/fastify',
  [Symbol.for('plugin-meta')]: { name: '@tokenlease/agent/fastify', fastify: '4.x || 5.x' },
});

/**
 * fastifyConcurrencyLimit — at most N requests of the instance's routes in
 * flight across the fleet (N: the concurrency pool's limit), registered as
 * `await app.register(fastifyConcurrencyLimit, { agent, pool: 'db' })`,
 * beside `fastifyRateLimit` or alone: an `onRequest` hook takes a slot (or
 * answers 503 with `Retry-After`), and `reply.raw` ending (finished, or
 * closed before: Fastify's onResponse misses a client that went away)
 * releases it. Registering it with bad options fails the registration with
 * AgentError('invalid-argument').
 */
export function fastifyConcurrencyLimit(
  fastify: FastifyLike,
  options: ConcurrencyLimitOptions<FastifyRequestLike>,
  done: (error?: Error) => void,
): void {
  let limit: ConcurrencyLimit<FastifyRequestLike>;
  try {
    limit = new ConcurrencyLimit(options);
  } catch (error) {
    done(error instanceof Error ? error : new Error(String(error)));
    return;
  }
  fastify.addHook('onRequest', async (request, reply) => {
    const entry = await limit.enter(request);
    if (!entry.admitted) {
      answer(reply, { admitted: false, headers: [], refusal: entry.refusal });
      return;
    }
    const raw = reply.raw;
    if (typeof raw.destroy !== 'function')
      throw new AgentError('invalid-argument', 'reply.raw is not a node response: it cannot be destroyed');
    limit.watch(entry, request, raw as DestroyableResponse);
  });
  done();
}

Object.assign(fastifyConcurrencyLimit, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: '@tokenlease/agent/fastify concurrency',
  [Symbol.for('plugin-meta')]: { name: '@tokenlease/agent/fastify-concurrency', fastify: '4.x || 5.x' },
});

export type { ConcurrencyLimitOptions, OverrunFunction } from './concurrency-limit.js';
export type {
  CostFunction,
  HttpLimitOptions,
  KeyFunction,
  KeySource,
  PoolRule,
  RequestView,
  ResponseView,
  SkipFunction,
  SuccessFunction,
} from './http-limit.js';
export type { DenialMessage, HeaderFormat, Problem, ProblemType } from '../core/http-policy.js';
export { keyPoolName, KEY_SECRET_BYTES_MIN, type KeySecret } from './key-hash.js';
