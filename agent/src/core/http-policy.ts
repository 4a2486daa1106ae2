/**
 * HttpPolicy: what the HTTP middleware answers, as pure functions: the pool
 * a request's key names, the status and problem body of a refusal, and the
 * `RateLimit-Policy` / `RateLimit` fields (draft-ietf-httpapi-ratelimit-
 * headers) in structured-field syntax. The adapters (adapters/http.ts,
 * adapters/fastify.ts) read requests and write responses; they decide
 * nothing.
 *
 * Rules:
 * - A key becomes part of a pool name (`<rule>:<key>`) only through
 *   `encodeKey`: characters a pool name may not hold (`.`, `*`, `>`, space,
 *   non-ASCII) and `%` itself are percent-encoded (UTF-8), so two different
 *   keys never name the same pool; a key that would make the name longer
 *   than a pool name may be is refused (400), and so is an empty one.
 * - A request without a key is refused with the status the rule says (400
 *   or 401): it is never charged to a shared pool by accident.
 * - A denial is 429 with `Retry-After` in whole seconds, rounded up, at
 *   least 1; a cost no lease of the pool can ever hold is 429 without
 *   `Retry-After` (no wait helps); a pool the coordinator does not know is
 *   500 (the service's configuration is wrong, not the client); while no
 *   coordinator can grant, 503 with `Retry-After` when failing closed.
 *   Bodies are RFC 9457 problem details (`application/problem+json`).
 * - `RateLimit-Policy: "<name>";q=<quota>;w=<window>`: the pool's refill,
 *   `refillTokens` per `refillPeriodMs`, stated per whole seconds: w is the
 *   period in seconds (at least 1, rounded to the nearest second) and q the
 *   tokens refilled in w, rounded down. The pool's burst is its capacity.
 * - `RateLimit: "<name>";r=<remaining>;t=<seconds>` for a leased limit: r
 *   is what this instance may still admit now from its lease (not the
 *   pool's level, which only the coordinator knows); t is the seconds,
 *   rounded up, until this instance expects to admit one token more than r
 *   (about one round-trip while the pool has tokens; longer when it is
 *   short).
 * - A pool whose limits are not known yet (no grant) is left out of both
 *   fields; a response with no such pool carries neither.
 * - Shadow mode: a request admitted only because a pool is in shadow mode
 *   may carry (option `shadowHeader`) `TokenLease-Shadow-Limited:
 *   "<name>";reason=<reason>`, one member per pool that would have limited
 *   it, so downstream services can see it.
 */
import type { PoolLimits } from './lease-keeper.js';
import type { DenialReason } from './lease-slot.js';

/** POOL_NAME_CHARS_MAX — the longest pool name the protocol carries (shared's POOL_NAME_LENGTH_MAX). */
const POOL_NAME_CHARS_MAX = 128;
const MS_PER_S = 1000;

/** ProblemType — the problems the middleware answers with; `type` is `urn:tokenlease:problem:<ProblemType>`. */
export type ProblemType = 'rate-limited' | 'never-fits' | 'unknown-pool' | 'unavailable' | 'missing-key' | 'invalid-key';

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
}

/** encodeKey — the pool name `<prefix>:<key>` with the key percent-encoded (see the rules), or null when empty or too long. */
export function encodeKey(prefix: string, key: string): string | null {
  if (key.length === 0) return null;
  let encoded = '';
  for (const byte of new TextEncoder().encode(key)) {
    const plain = byte > 0x20 && byte < 0x7f && byte !== 0x2e && byte !== 0x2a && byte !== 0x3e && byte !== 0x25;
    encoded += plain ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (prefix.length + 1 + encoded.length > POOL_NAME_CHARS_MAX) return null;
  }
  return `${prefix}:${encoded}`;
}

/** retryAfterSeconds — a wait in ms as `Retry-After` says it: whole seconds, rounded up, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / MS_PER_S));
}

/** quotaWindow — the pool's refill as a quota of tokens per window of whole seconds (see the rules). */
export function quotaWindow(limits: PoolLimits): { readonly quotaTokens: number; readonly windowSeconds: number } {
  const windowSeconds = Math.max(1, Math.round(limits.refillPeriodMs / MS_PER_S));
  const quotaTokens = Math.floor((limits.refillTokens * windowSeconds * MS_PER_S) / limits.refillPeriodMs);
  return { quotaTokens, windowSeconds };
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

/** rateLimitPolicyField — the `RateLimit-Policy` value for `views`, or null when no pool's limits are known. */
export function rateLimitPolicyField(views: readonly LimitView[]): string | null {
  const items: string[] = [];
  for (const view of views) {
    if (view.limits === null) continue;
    const { quotaTokens, windowSeconds } = quotaWindow(view.limits);
    items.push(`${sfString(view.policy)};q=${quotaTokens};w=${windowSeconds}`);
  }
  return items.length === 0 ? null : items.join(', ');
}

/** rateLimitField — the `RateLimit` value for `views`, or null when no pool's limits are known. */
export function rateLimitField(views: readonly LimitView[]): string | null {
  const items: string[] = [];
  for (const view of views) {
    if (view.limits === null) continue;
    const remaining = Math.max(0, Math.floor(view.remainingTokens));
    items.push(`${sfString(view.policy)};r=${remaining};t=${Math.ceil(Math.max(0, view.moreAfterMs) / MS_PER_S)}`);
  }
  return items.length === 0 ? null : items.join(', ');
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
      'Request too costly',
      429,
      `this request costs more than pool ${policy} can ever admit at once`,
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

/** missingKey — the refusal for a request without the key rule `policy` needs (`status` 400 or 401). */
export function missingKey(policy: string, status: 400 | 401, what: string): Refusal {
  const title = status === 401 ? 'Unauthorized' : 'Bad Request';
  return problem('missing-key', title, status, `the request has no ${what}, which rate limit ${policy} needs`, policy, null);
}

/** invalidKey — the refusal for a key too long (or empty) to name a pool. */
export function invalidKey(policy: string, what: string): Refusal {
  return problem('invalid-key', 'Bad Request', 400, `the request's ${what} cannot name a pool of rate limit ${policy}`, policy, null);
}
