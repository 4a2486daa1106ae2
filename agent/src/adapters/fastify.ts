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
 */
import { HttpLimit, type HttpLimitOptions, type RequestView, type Verdict } from './http-limit.js';

/** What the hook reads of a Fastify request; key and cost functions get the request itself. */
export interface FastifyRequestLike {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly ip: string;
  readonly url: string;
  readonly routeOptions?: { readonly url?: string | undefined };
}

/** What the hook writes on a Fastify reply. */
interface FastifyReplyLike {
  header(name: string, value: string): unknown;
  code(status: number): unknown;
  send(body: Uint8Array): unknown;
}

/** What the plugin needs of a Fastify instance. */
interface FastifyLike {
  addHook(name: 'onRequest', hook: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<void>): unknown;
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
export function fastifyRateLimit(fastify: FastifyLike, options: HttpLimitOptions<FastifyRequestLike>, done: (error?: Error) => void): void {
  let limit: HttpLimit<FastifyRequestLike>;
  try {
    limit = new HttpLimit(options);
  } catch (error) {
    done(error instanceof Error ? error : new Error(String(error)));
    return;
  }
  fastify.addHook('onRequest', async (request, reply) => {
    answer(reply, await limit.check(viewOf(request)));
  });
  done();
}

// fastify-plugin's conventions, without depending on it: no encapsulation, a name, the Fastify versions it runs on.
Object.assign(fastifyRateLimit, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: '@tokenlease/agent/fastify',
  [Symbol.for('plugin-meta')]: { name: '@tokenlease/agent/fastify', fastify: '4.x || 5.x' },
});

export type { CostFunction, HttpLimitOptions, KeyFunction, KeySource, PoolRule, RequestView, SkipFunction } from './http-limit.js';
export type { DenialMessage, HeaderFormat, Problem, ProblemType } from '../core/http-policy.js';
export { keyPoolName, KEY_SECRET_BYTES_MIN, type KeySecret } from './key-hash.js';
