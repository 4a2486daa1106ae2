/**
 * The schema of the HTTP middleware's options (createHttpLimit,
 * fastifyRateLimit; the engine is adapters/http-limit.ts): each option
 * alone, its form, default and meaning, said once. HttpLimit checks the
 * options with it, then what depends on several of them (a keyed rule
 * needs `keySecret`, a pool name with its key's hash must fit); the
 * reference docs/reference/http-options.md is generated from it.
 *
 * Options the middleware does not know are left alone: Fastify's plugin
 * passes its own (`global`) through the same object.
 */
import { expectedLimitsFormProblem } from '@tokenlease/shared';
import { referenceMeta } from '@tokenlease/shared/reference';
import { z } from 'zod';
import { HEADER_FORMATS, SHADOW_HEADER_DEFAULT, statusCodeProblem } from './http-policy.js';

const shown = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** HTTP_FIELD_NAME — an HTTP field name (RFC 9110 token), as a response header is named. */
export const HTTP_FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** GRACE_MS_DEFAULT — how long a request waits for tokens expected within that long, unless `graceMs` says, ms. */
export const GRACE_MS_DEFAULT = 100;

/** Reference — an option's form in words, default and meaning (what the JSON Schema alone would not say of a function). */
interface Reference {
  readonly form?: string;
  readonly default?: string;
  readonly description: string;
}

function described<T extends z.ZodType>(schema: T, reference: Reference): T {
  return schema.meta(referenceMeta(reference));
}

const flag = (reference: Reference) =>
  described(z.boolean({ error: (issue) => `must be true or false, got ${shown(issue.input)}` }), reference).optional();

const ms = (reference: Reference) => {
  const problem = (issue: { input?: unknown }): string => `must be a whole number of ms >= 0, got ${String(issue.input)}`;
  return described(z.int({ error: problem }).min(0, { error: problem }), reference).optional();
};

/** fn — a function option, checked as one and described in words. */
const fn = (of: string, reference: Reference) =>
  described(
    z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', { error: `must be a function of ${of}` }),
    reference,
  ).optional();

/** checked — an option checked by a rule kept elsewhere, its problem worded by that rule (and the value shown, with `showValue`). */
function checked<T>(
  problemOf: (value: unknown) => string | null,
  jsonForm: Record<string, unknown>,
  reference: Reference,
  showValue = false,
) {
  return described(
    z
      .custom<T>(() => true)
      .superRefine((value, ctx) => {
        const problem = problemOf(value);
        if (problem !== null) ctx.addIssue({ code: 'custom', message: showValue ? `${problem}, got ${String(value)}` : problem });
      })
      .meta(jsonForm),
    reference,
  ).optional();
}

/** POOL_RULE — one entry of `pools`: a pool charged for each request, or one per key. */
export const POOL_RULE = z.object({
  name: described(z.string({ error: 'must be a pool name' }), {
    form: 'pool name',
    description: 'The pool charged; with a `key`, the prefix of the pools charged, one per key (its keyed hash after a `:`).',
  }),
  key: described(
    z.custom<unknown>(
      (value) =>
        typeof value === 'function' ||
        (typeof value === 'object' && value !== null && ('header' in value || 'ip' in value || 'route' in value)),
      { error: 'must be a function of the request, { header }, { ip: true } or { route: true }' },
    ),
    {
      form: '`(req) => string | undefined` (sync or async), `{ header }`, `{ ip: true }` or `{ route: true }`',
      default: 'none: one pool',
      description: 'What the request is limited by: each key its own pool, named by the keyed hash of the key (never the key).',
    },
  ).optional(),
  cost: described(
    z.custom<unknown>(() => true),
    {
      form: 'whole number, or `(req) => number` (sync or async)',
      default: '1',
      description: 'Tokens the request costs in this pool.',
    },
  ).optional(),
  missingKeyStatus: described(
    z.union([z.literal(400), z.literal(401)], { error: (issue) => `must be 400 or 401, got ${shown(issue.input)}` }),
    { form: '`400` or `401`', default: '400', description: 'The status of a request its key function finds no key in.' },
  ).optional(),
  shadow: flag({ default: 'false', description: 'Shadow mode for this pool: what it would refuse is let through and counted apart.' }),
  expectedLimits: checked(
    expectedLimitsFormProblem,
    { type: 'object' },
    {
      form: '`{ capacityTokens, maxLeaseTokens, refillTokens, refillPeriodMs, allowanceTokens? }`',
      default: 'none',
      description: 'What the pool is, from this service’s own configuration: grants stating more are refused as implausible.',
    },
  ),
});

/** HTTP_LIMIT_OPTIONS — the options createHttpLimit and fastifyRateLimit take. */
export const HTTP_LIMIT_OPTIONS = z.object({
  agent: described(
    z.custom<unknown>((value) => typeof value === 'object' && value !== null, { error: 'must be an Agent' }),
    {
      form: '`Agent`',
      description: 'The agent whose limiters the middleware charges.',
    },
  ),
  pools: described(z.array(POOL_RULE, { error: 'must be a list of pool rules' }).min(1, { error: 'names no pool' }), {
    form: 'list of pool rules (below)',
    description: 'Pools charged together, all or nothing (e.g. a global pool and a tenant pool). At least one.',
  }),
  keySecret: described(
    z.custom<unknown>(() => true),
    {
      form: 'string or bytes, at least 16 bytes',
      default: 'none',
      description:
        'The secret keyed rules hash their keys with into pool names; the same on every instance. Needed by a rule with a `key`.',
    },
  ).optional(),
  headers: described(
    z.enum(HEADER_FORMATS, { error: (issue) => `must be one of ${HEADER_FORMATS.join(', ')}, got ${shown(issue.input)}` }),
    { default: 'draft-11', description: 'The rate-limit fields responses carry.' },
  ).optional(),
  skip: fn('the request', {
    form: '`(req) => boolean` (sync or async)',
    default: 'none',
    description: 'True for a request that is not limited at all (a health check, an allow-listed client): not charged, no fields.',
  }),
  statusCode: checked(
    statusCodeProblem,
    { type: 'integer', minimum: 400, maximum: 599 },
    { default: '429', description: 'The status of a rate-limited answer. Other refusals (413, 500, 503, 400/401) keep theirs.' },
    true,
  ),
  message: described(
    z.custom<unknown>((value) => typeof value === 'string' || (typeof value === 'object' && value !== null), {
      error: 'must be a string or an object',
    }),
    {
      form: 'string (text/plain) or a JSON value',
      default: 'the problem details',
      description: 'The body of a rate-limited answer instead of the problem.',
    },
  ).optional(),
  waitMs: ms({ default: '0', description: 'Shaping: how long a request may wait for its tokens, ms (0: no wait beyond `graceMs`).' }),
  graceMs: ms({
    default: String(GRACE_MS_DEFAULT),
    description: 'How long a request waits for tokens expected within that long, ms. 0: never.',
  }),
  unavailable: described(
    z.enum(['fail-closed', 'allow'], { error: (issue) => `must be "fail-closed" or "allow", got ${shown(issue.input)}` }),
    { default: 'fail-closed', description: 'When no coordinator can grant: answer 503, or let requests through uncharged.' },
  ).optional(),
  shadowHeader: described(
    z.custom<boolean | string>((value) => typeof value === 'boolean' || (typeof value === 'string' && HTTP_FIELD_NAME.test(value)), {
      error: (issue) => `must be true, false or a header name, got ${shown(issue.input)}`,
    }),
    {
      form: '`true`, `false` or a header name',
      default: 'false',
      description: `A field on a response shadow mode let through (true: \`${SHADOW_HEADER_DEFAULT}\`).`,
    },
  ).optional(),
  skipFailedRequests: flag({
    default: 'false',
    description: 'A request that failed gives its tokens back as it ends, so only successful ones count.',
  }),
  skipSuccessfulRequests: flag({
    default: 'false',
    description: 'A request that succeeded gives its tokens back as it ends, so only failed ones count.',
  }),
  requestWasSuccessful: fn('the request and the response', {
    form: '`(req, res) => boolean` (sync or async)',
    default: 'its status is below 400',
    description: 'Whether a finished request succeeded, for the two options above.',
  }),
  record: described(
    z.custom<unknown>((value) => typeof value === 'object' && value !== null && !('pools' in value), {
      error: "must be an object with a path (its pools are the rules' own)",
    }),
    {
      form: "the agent's `record` options but `pools`",
      default: 'none',
      description: 'Record the requests’ arrivals at the rules’ pools (every key’s for a keyed rule) to plan a limit on them.',
    },
  ).optional(),
});

/**
 * httpOptionsProblem — the first problem the schema finds in `options`, as
 * its one line says it (`option waitMs must be …`, `pool api: option
 * shadow must be …`), or null.
 */
export function httpOptionsProblem(options: unknown): string | null {
  const result = HTTP_LIMIT_OPTIONS.safeParse(options);
  if (result.success) return null;
  const issue = result.error.issues[0];
  if (issue === undefined) return null;
  const [first, index, field] = issue.path;
  if (first === 'pools' && typeof index === 'number' && field !== undefined) {
    const name = (options as { pools: readonly { name?: unknown }[] }).pools[index]?.name;
    return `pool ${String(name)}: option ${String(field)} ${issue.message}`;
  }
  return `option ${String(first ?? 'options')} ${issue.message}`;
}
