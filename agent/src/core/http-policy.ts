/**
 * HttpPolicy: what the HTTP middleware answers, as pure functions: the pool
 * a request's key names, the status and problem body of a refusal, and the
 * `RateLimit-Policy` / `RateLimit` fields (draft-ietf-httpapi-ratelimit-
 * headers) in structured-field syntax. The adapters (adapters/http.ts,
 * adapters/fastify.ts) read requests and write responses; they decide
 * nothing.
 *
 * Rules:
 * - A keyed rule names its pools `<rule>:<digest>`: the adapter hashes the
 *   key with a keyed hash (adapters/key-hash.ts), so no raw key reaches a
 *   subject, a log, a metric label, the status page or a pool listing, and
 *   a key of any length names a pool. The digest is also the `pk`
 *   (partition key) parameter of both fields, as a byte sequence.
 * - A request without a key is refused with the status the rule says (400
 *   or 401): it is never charged to a shared pool by accident. A rule keyed
 *   by route where the route pattern is unknown (middleware mounted before
 *   routing) is a loud 500: the raw path would make every URL a pool.
 * - A denial is 429 with `Retry-After` in whole seconds, rounded up, at
 *   least 1; a cost no lease of the pool can ever hold is 413 with its own
 *   problem type and no `Retry-After` (retrying the same request never
 *   helps); a pool the coordinator does not know is 500 (the service's
 *   configuration is wrong, not the client); while no coordinator can
 *   grant, 503 with `Retry-After` when failing closed. Bodies are RFC 9457
 *   problem details (`application/problem+json`).
 * - `RateLimit-Policy: "<name>";q=<quota>;w=<window>` never understates:
 *   no window of `w` seconds ever sees more than `q` tokens admitted for
 *   the partition across the whole fleet. For a bucket, w is the refill
 *   period in whole seconds (at least 1, rounded to the nearest) and q is
 *   B + A + the refill over w, rounded up (the promise B + A + r·T with
 *   T = w); for a sliding-window pool, w is its window in whole seconds
 *   (rounded up) and q its limit times the windows w spans.
 * - `RateLimit: "<name>";r=<remaining>;t=<seconds>` for a leased limit: r
 *   is a lower bound, what this instance holds for the partition now and
 *   admits without asking anyone (not the pool's level, which only the
 *   coordinator knows: a request after r=0 may well be admitted once the
 *   lease is topped up); t is the seconds, rounded up, until this instance
 *   expects to admit one token more than r (about one round-trip while the
 *   pool has tokens; longer when it is short).
 * - Other formats (option `headers`): `draft-7` (one `RateLimit:
 *   limit=q, remaining=r, reset=t` and `RateLimit-Policy: q;w=w`),
 *   `draft-6` (`RateLimit-Limit`, `-Remaining`, `-Reset` and the policy),
 *   `x-ratelimit` (`X-RateLimit-Limit`, `-Remaining`, and `-Reset` as a Unix
 *   time in seconds) or `off`. They hold one limit: of the charged pools,
 *   the one with the fewest tokens remaining.
 * - A pool whose limits are not known yet (no grant) is left out of the
 *   fields; a response with no such pool carries none.
 * - Shadow mode: a request admitted only because a pool is in shadow mode
 *   may carry (option `shadowHeader`) `TokenLease-Shadow-Limited:
 *   "<name>";reason=<reason>`, one member per pool that would have limited
 *   it, so downstream services can see it.
 */
import type { PoolLimits } from './lease-keeper.js';
import type { DenialReason } from './lease-slot.js';

const MS_PER_S = 1000;

/** ProblemType — the problems the middleware answers with; `type` is `urn:tokenlease:problem:<ProblemType>`. */
export type ProblemType =
  | 'rate-limited'
  | 'never-fits'
  | 'unknown-pool'
  | 'unavailable'
  | 'missing-key'
  | 'unknown-route'
  | 'concurrency-limited'
  | 'not-concurrency';

/** HeaderFormat — which rate-limit fields responses carry (see the rules); `draft-11` by default. */
export type HeaderFormat = 'draft-11' | 'draft-7' | 'draft-6' | 'x-ratelimit' | 'off';
export const HEADER_FORMATS: readonly HeaderFormat[] = ['draft-11', 'draft-7', 'draft-6', 'x-ratelimit', 'off'];

/** Problem — an RFC 9457 problem details body. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /** The pool (policy) concerned. */
  readonly pool: string;
  readonly retryAfterSeconds?: number;
}

/** Refusal — the status, body and `Retry-After` (null: none) of a refused request. */
export interface Refusal {
  readonly status: number;
  readonly problem: Problem;
  readonly retryAfterSeconds: number | null;
  /** The body sent instead of the problem, when the service chose one (options `message`); its media type with it. */
  readonly body?: { readonly contentType: string; readonly text: string };
}

/** DenialMessage — what a service answers a rate-limited request with instead of the problem: text, or a JSON value. */
export type DenialMessage = string | Readonly<Record<string, unknown>>;

/**
 * customised — `refusal` with the service's own status and body for a
 * rate-limited request (options `statusCode`, `message`); every other
 * refusal as it is, so a misconfiguration or an outage is never dressed up
 * as a rate limit.
 */
export function customised(refusal: Refusal, statusCode: number | null, message: DenialMessage | null): Refusal {
  const type = refusal.problem.type;
  if (type !== 'urn:tokenlease:problem:rate-limited' && type !== 'urn:tokenlease:problem:concurrency-limited') return refusal;
  const status = statusCode ?? refusal.status;
  const problem = { ...refusal.problem, status };
  if (message === null) return { ...refusal, status, problem };
  const body =
    typeof message === 'string'
      ? { contentType: 'text/plain; charset=utf-8', text: message }
      : { contentType: 'application/json', text: JSON.stringify(message) };
  return { ...refusal, status, problem, body };
}

/** statusCodeProblem — why `code` cannot be the status of a rate-limited answer, or null. */
export function statusCodeProblem(code: unknown): string | null {
  return typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599 ? null : 'must be an HTTP status from 400 to 599';
}

/** LimitView — one charged pool as the fields show it. */
export interface LimitView {
  /** The policy name (the rule's name). */
  readonly policy: string;
  readonly limits: PoolLimits | null;
  /** Tokens this instance may admit now from its lease. */
  readonly remainingTokens: number;
  /** Expected wait until one token more than `remainingTokens` can be admitted, ms. */
  readonly moreAfterMs: number;
  /** The keyed hash of the partition's key (the `pk` parameter); null for an unkeyed pool. */
  readonly partitionKey: Uint8Array | null;
}

/** retryAfterSeconds — a wait in ms as `Retry-After` says it: whole seconds, rounded up, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / MS_PER_S));
}

/** quotaWindow — the most the fleet admits for the pool in any window of `windowSeconds` (see the rules). */
export function quotaWindow(limits: PoolLimits): { readonly quotaTokens: number; readonly windowSeconds: number } {
  const periodMs = limits.refillPeriodMs;
  if (limits.window) {
    const windowSeconds = Math.max(1, Math.ceil(periodMs / MS_PER_S));
    return { quotaTokens: limits.capacityTokens * Math.ceil((windowSeconds * MS_PER_S) / periodMs), windowSeconds };
  }
  const windowSeconds = Math.max(1, Math.round(periodMs / MS_PER_S));
  const refilled = Math.ceil((limits.refillTokens * windowSeconds * MS_PER_S) / periodMs);
  return { quotaTokens: limits.capacityTokens + limits.allowanceTokens + refilled, windowSeconds };
}

/** SHADOW_HEADER_DEFAULT — the header naming the pools that would have limited a request admitted in shadow mode. */
export const SHADOW_HEADER_DEFAULT = 'TokenLease-Shadow-Limited';

/** shadowLimitedField — the shadow header's value for the pools (policy names) that would have limited a request and why; null for none. */
export function shadowLimitedField(limited: ReadonlyArray<{ readonly policy: string; readonly reason: DenialReason }>): string | null {
  if (limited.length === 0) return null;
  return limited.map((item) => `${sfString(item.policy)};reason=${item.reason}`).join(', ');
}

/** sfString — `text` as a structured-field string (RFC 8941): quoted, `"` and `\` escaped; other characters must be printable ASCII. */
export function sfString(text: string): string {
  if (!/^[\x20-\x7e]*$/.test(text)) throw new RangeError(`not printable ASCII: ${JSON.stringify(text)}`);
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** sfBinary — `bytes` as a structured-field byte sequence (RFC 8941): base64 between colons. */
export function sfBinary(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return `:${btoa(text)}:`;
}

const pk = (view: LimitView): string => (view.partitionKey === null ? '' : `;pk=${sfBinary(view.partitionKey)}`);
const remainingOf = (view: LimitView): number => Math.max(0, Math.floor(view.remainingTokens));
const resetOf = (view: LimitView): number => Math.ceil(Math.max(0, view.moreAfterMs) / MS_PER_S);

/** rateLimitPolicyField — the draft-11 `RateLimit-Policy` value for `views`, or null when no pool's limits are known. */
export function rateLimitPolicyField(views: readonly LimitView[]): string | null {
  const items: string[] = [];
  for (const view of views) {
    if (view.limits === null) continue;
    const { quotaTokens, windowSeconds } = quotaWindow(view.limits);
    items.push(`${sfString(view.policy)};q=${quotaTokens};w=${windowSeconds}${pk(view)}`);
  }
  return items.length === 0 ? null : items.join(', ');
}

/** rateLimitField — the draft-11 `RateLimit` value for `views`, or null when no pool's limits are known. */
export function rateLimitField(views: readonly LimitView[]): string | null {
  const items: string[] = [];
  for (const view of views) {
    if (view.limits === null) continue;
    items.push(`${sfString(view.policy)};r=${remainingOf(view)};t=${resetOf(view)}${pk(view)}`);
  }
  return items.length === 0 ? null : items.join(', ');
}

/**
 * limitFields — the response fields for `views` in `format` (see the
 * rules); `nowMs` (Unix ms) dates `X-RateLimit-Reset`.
 */
export function limitFields(format: HeaderFormat, views: readonly LimitView[], nowMs: number): Array<readonly [string, string]> {
  if (format === 'off') return [];
  if (format === 'draft-11') {
    const out: Array<readonly [string, string]> = [];
    const policy = rateLimitPolicyField(views);
    const limit = rateLimitField(views);
    if (policy !== null) out.push(['RateLimit-Policy', policy]);
    if (limit !== null) out.push(['RateLimit', limit]);
    return out;
  }
  let tightest: (LimitView & { readonly limits: PoolLimits }) | null = null;
  for (const view of views) {
    if (view.limits !== null && (tightest === null || remainingOf(view) < remainingOf(tightest)))
      tightest = { ...view, limits: view.limits };
  }
  if (tightest === null) return [];
  const { quotaTokens: q, windowSeconds: w } = quotaWindow(tightest.limits);
  const [r, t] = [remainingOf(tightest), resetOf(tightest)];
  if (format === 'draft-7')
    return [
      ['RateLimit-Policy', `${q};w=${w}`],
      ['RateLimit', `limit=${q}, remaining=${r}, reset=${t}`],
    ];
  if (format === 'draft-6')
    return [
      ['RateLimit-Policy', `${q};w=${w}`],
      ['RateLimit-Limit', String(q)],
      ['RateLimit-Remaining', String(r)],
      ['RateLimit-Reset', String(t)],
    ];
  const resetAt = Math.ceil(nowMs / MS_PER_S) + t;
  return [
    ['X-RateLimit-Limit', String(q)],
    ['X-RateLimit-Remaining', String(r)],
    ['X-RateLimit-Reset', String(resetAt)],
  ];
}

function problem(type: ProblemType, title: string, status: number, detail: string, pool: string, retryAfter: number | null): Refusal {
  const body: Problem = {
    type: `urn:tokenlease:problem:${type}`,
    title,
    status,
    detail,
    pool,
    ...(retryAfter === null ? {} : { retryAfterSeconds: retryAfter }),
  };
  return { status, problem: body, retryAfterSeconds: retryAfter };
}

/**
 * denial — the refusal for a request denied by `pool` (policy `policy`)
 * for `reason`, with the expected wait `retryAfterMs` (null: none helps).
 * `unavailable`: no coordinator could grant at the last attempt (then 503
 * when failing closed).
 */
export function denial(policy: string, pool: string, reason: DenialReason, retryAfterMs: number | null, unavailable: boolean): Refusal {
  if (reason === 'unknown-pool') {
    return problem('unknown-pool', 'Rate limit misconfigured', 500, `the coordinator knows no pool named ${pool}`, policy, null);
  }
  if (reason === 'never-fits' || retryAfterMs === null) {
    return problem(
      'never-fits',
      'Request costs more than the limit allows',
      413,
      `this request costs more than pool ${policy} can ever admit at once; retrying it never helps`,
      policy,
      null,
    );
  }
  const seconds = retryAfterSeconds(retryAfterMs);
  if (unavailable) {
    return problem(
      'unavailable',
      'Rate limiter unavailable',
      503,
      `no coordinator can grant tokens of pool ${policy} now`,
      policy,
      seconds,
    );
  }
  return problem('rate-limited', 'Too Many Requests', 429, `pool ${policy} admits no more now; retry after ${seconds} s`, policy, seconds);
}

/**
 * slotDenial — the refusal for a request that found no free slot of
 * concurrency pool `pool` (policy `policy`) within its wait: 503 with the
 * expected wait (at least 1 s) while the coordinator can grant; the
 * unavailable and unknown-pool answers as for tokens otherwise.
 */
export function slotDenial(policy: string, pool: string, reason: DenialReason, retryAfterMs: number, unavailable: boolean): Refusal {
  if (reason === 'unknown-pool' || unavailable) return denial(policy, pool, reason, retryAfterMs, unavailable);
  const seconds = retryAfterSeconds(retryAfterMs);
  return problem(
    'concurrency-limited',
    'All slots busy',
    503,
    `every slot of pool ${policy} is in use now; retry after ${seconds} s`,
    policy,
    seconds,
  );
}

/** notConcurrency — the refusal when a concurrency limit names a pool that leases tokens. */
export function notConcurrency(policy: string): Refusal {
  return problem(
    'not-concurrency',
    'Rate limit misconfigured',
    500,
    `pool ${policy} leases tokens, not slots: a concurrency limit needs a pool configured with "concurrency"`,
    policy,
    null,
  );
}

/** missingKey — the refusal for a request without the key rule `policy` needs (`status` 400 or 401). */
export function missingKey(policy: string, status: 400 | 401, what: string): Refusal {
  const title = status === 401 ? 'Unauthorized' : 'Bad Request';
  return problem('missing-key', title, status, `the request has no ${what}, which rate limit ${policy} needs`, policy, null);
}

/** unknownRoute — the refusal when rule `policy` keys by route and the route pattern is not known where the middleware runs. */
export function unknownRoute(policy: string): Refusal {
  return problem(
    'unknown-route',
    'Rate limit misconfigured',
    500,
    `rate limit ${policy} keys by route, but runs before routing here: mount it on the routes it limits`,
    policy,
    null,
  );
}
