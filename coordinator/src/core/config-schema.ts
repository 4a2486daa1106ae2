/**
 * The schema of a coordinator's pools file and of a relay's file: every
 * field, its form, its static bounds, its default and what it means, said
 * once. From it come the structural validation (config.ts and
 * relay-config.ts run it first, then check what depends on several fields),
 * the document types, the JSON Schema editors read (`schema/*.schema.json`)
 * and the generated configuration reference (config-reference.ts).
 *
 * Each schema's error hook words its problem as the rest of the
 * configuration errors are worded ("must be an integer in [1, 1000], got
 * 0"); schemaProblem turns the first issue into the field it concerns.
 *
 * Values are read by the readers from the document itself, never from the
 * schema's output: an output object is a plain object, and a name such as
 * `__proto__` (a valid class or pool name) would not survive the copy.
 */
import { referenceMeta } from '@tokenlease/shared/reference';
import { z } from 'zod';
import {
  assertSubjectPrefix,
  DRIFT_MARGIN_MAX,
  FLEET_WEIGHT_MAX,
  ID_FORM,
  ID_LENGTH_MAX,
  isProtocolId,
  leaseClientSettingProblem,
  LEASE_CLIENT_DEFAULTS,
  LEASE_CLIENT_MS_BOUNDS,
  makeRate,
  parseRate,
  poolNameProblem,
  RATE_TEXT_PATTERN,
  TokenleaseError,
  type LeaseClientSettings,
} from '@tokenlease/shared';

/** MIN_TTL_MS — the shortest lease TTL a pool may have, ms. */
export const MIN_TTL_MS = 10;
/** MAX_TTL_MS — the longest lease TTL a pool may have (one hour), ms; also the longest quiet period. */
export const MAX_TTL_MS = 3_600_000;
/** DEFAULT_TTL_MS — a pool's lease TTL when its `leaseTtlMs` is not set, ms. */
export const DEFAULT_TTL_MS = 2000;
export const DEFAULT_HOLD_MS_MAX = 250;
export const DEFAULT_IDLE_EVICT_MS = 60_000;
export const DEFAULT_MAX_LEASES = 100_000;
export const DEFAULT_MAX_WAITING = 10_000;
/** DEFAULT_CLOCK_DRIFT_LIMIT — a pool's `clockDriftLimit` when not set: 5%, half the agents' default drift margin (real monotonic clocks are off by parts per million). */
export const DEFAULT_CLOCK_DRIFT_LIMIT = 0.05;
/** CLOCK_DRIFT_LIMIT_BELOW — `clockDriftLimit` is below this. */
export const CLOCK_DRIFT_LIMIT_BELOW = 0.5;
export const LEASES_MAX = 10_000_000;
export const DEFAULT_MAX_POOLS = 100_000;
export const POOLS_MAX = 10_000_000;
export const IDLE_EVICT_MS_MAX = 86_400_000;
export const CLASS_WEIGHT_MAX = 1000;
/** OPERATOR_IDENTITIES_MAX — the most identity tokens `operatorIdentities` may name. */
export const OPERATOR_IDENTITIES_MAX = 100;
/** CLASS_IDENTITIES_MAX — the most identity tokens `classIdentities` may grant one class. */
export const CLASS_IDENTITIES_MAX = 1000;
/** GAP_MS_DEFAULT — the shortest gap between two requests of an uplink that were not due, ms, unless `uplink.gapMs` says. */
export const GAP_MS_DEFAULT = 20;
/** CONCURRENCY_LIMIT_MAX — the most slots a concurrency pool may have (an agent's slot handles number them within 2^22). */
export const CONCURRENCY_LIMIT_MAX = 1_000_000;
/** SLOT_HOLD_MS_MAX — the longest hold bound of a concurrency pool, ms: an hour. */
export const SLOT_HOLD_MS_MAX = 3_600_000;
const GAP_MS_MAX = 59_999;
/** An upstream identity: short enough that `<identity>.<relay id>.<12 hex>` stays a protocol id. */
export const UPLINK_IDENTITY_FORM = /^[A-Za-z0-9_-]{1,48}$/;

/** FieldDoc — what the reference says of a field besides its form: its default (a value, or how it is derived) and its meaning. */
export interface FieldDoc {
  readonly description: string;
  /** The default, as the reference shows it; absent: required, or none. */
  readonly default?: string;
  /** The form in words, where the one read off the JSON Schema would be a pattern. */
  readonly form?: string;
}

const shown = (value: unknown): string => JSON.stringify(value)?.slice(0, 140) ?? String(value);

/** doc — attaches a field's reference text; the description also reaches the JSON Schema (editors show it on hover). */
function doc<T extends z.ZodType>(schema: T, field: FieldDoc): T {
  return schema.meta(referenceMeta(field));
}

/**
 * integer — a safe integer in [min, max]; `maxName` words a bound that
 * depends on another field (the reader checks that one against its value).
 */
function integer(min: number, max: number, maxName?: string) {
  const problem = (issue: { input?: unknown }): string =>
    issue.input === undefined ? 'is required' : `must be an integer in [${min}, ${maxName ?? max}], got ${shown(issue.input)}`;
  return z.int({ error: problem }).min(min, { error: problem }).max(max, { error: problem });
}

/** fraction — a number in [0, below). */
function fraction(below: number) {
  const problem = (issue: { input?: unknown }): string => `must be a number in [0, ${below}), got ${shown(issue.input)}`;
  return z.number({ error: problem }).min(0, { error: problem }).lt(below, { error: problem });
}

const flag = () => z.boolean({ error: (issue) => `must be true or false, got ${shown(issue.input)}` });

/** RateInput — a rate as a document gives it: `"500/s"` or `{ tokens, periodMs }` (a window: `{ limit, windowMs }`). */
export type RateInput = string | Readonly<Record<string, number>>;

/**
 * rate — a rate field, checked by the rate parser itself (shared rate.ts),
 * whose error becomes the problem and stays as its cause; `keys` are the
 * names of the mapping form.
 */
function rate(keys: readonly [string, string], like: string) {
  const [tokensKey, periodKey] = keys;
  const form = {
    anyOf: [
      { type: 'string', pattern: RATE_TEXT_PATTERN },
      {
        type: 'object',
        properties: { [tokensKey]: { type: 'integer', minimum: 1 }, [periodKey]: { type: 'integer', minimum: 1 } },
        required: [tokensKey, periodKey],
        additionalProperties: false,
      },
    ],
  };
  return z
    .custom<RateInput>(() => true)
    .superRefine((value, ctx) => {
      const mapping = typeof value === 'object' && value !== null && !Array.isArray(value);
      if (typeof value !== 'string' && !mapping) {
        ctx.addIssue({ code: 'custom', message: `must be a string like ${like}` });
        return;
      }
      if (mapping) {
        const known = new Set(keys);
        const unknown = Object.keys(value).find((key) => !known.has(key));
        if (unknown !== undefined) {
          ctx.addIssue({ code: 'custom', path: [unknown], message: `is not a known field (known: ${keys.join(', ')})` });
          return;
        }
      }
      try {
        if (typeof value === 'string') parseRate(value);
        else makeRate(value[tokensKey] as number, value[periodKey] as number);
      } catch (error) {
        if (!(error instanceof TokenleaseError)) throw error;
        ctx.addIssue({ code: 'custom', message: error.message, params: { cause: error } });
      }
    })
    .meta(form);
}

/** agentClassKey — the name of an agent class, as a key of a mapping. */
const agentClassKey = () =>
  z
    .string()
    .refine(isProtocolId, { error: (issue) => `class ${shown(issue.input)} must be ${ID_FORM}` })
    .meta({ pattern: `^[!-~]{1,${ID_LENGTH_MAX}}$` });

/** NAME_CHARACTERS — what a pool name or identity token may hold (subjects.ts, poolNameProblem): printable ASCII but `.`, `*` and `>`. */
const NAME_CHARACTERS = '[!-)+-\\-/-=?-~]';

/** jsonSchemaOf — the JSON Schema of one part, to be nested in another's. */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return rest;
}

/**
 * mapOf — a mapping of names to values, each name checked by `key` and each
 * value by `value`. Not zod's record: that one passes over a `__proto__`
 * entry unchecked, and names off a document (a class, a pool) may be any
 * string, that one included (they are kept in Maps).
 */
function mapOf<V extends z.ZodType>(key: z.ZodType<string>, value: V, what: string) {
  return z
    .custom<Readonly<Record<string, z.input<V>>>>(() => true)
    .superRefine((mapping, ctx) => {
      if (typeof mapping !== 'object' || mapping === null || Array.isArray(mapping)) {
        ctx.addIssue({ code: 'custom', message: what });
        return;
      }
      for (const [name, entry] of Object.entries(mapping)) {
        const named = key.safeParse(name);
        if (!named.success) {
          ctx.addIssue({ code: 'custom', path: [name], message: named.error.issues[0]?.message ?? what, params: { key: true } });
          return;
        }
        const checked = value.safeParse(entry);
        if (!checked.success) {
          for (const issue of checked.error.issues) ctx.addIssue({ ...issue, path: [name, ...issue.path] });
          return;
        }
      }
    })
    .meta({ type: 'object', propertyNames: jsonSchemaOf(key), additionalProperties: jsonSchemaOf(value) });
}

function weights(max: number) {
  return mapOf(agentClassKey(), integer(1, max), 'must be a mapping of agent class to weight');
}

/** identityList — at most `max` distinct identity tokens (subject tokens). */
function identityList(max: number) {
  const entry = z.custom<string>((value) => poolNameProblem(value) === null, {
    error: (issue) => `entry ${shown(issue.input)} is no identity token: it ${poolNameProblem(issue.input)}`,
  });
  return z
    .array(entry.meta({ type: 'string', minLength: 1, maxLength: 128, pattern: `^${NAME_CHARACTERS}+$` }), {
      error: `must be a list of at most ${max} identity tokens`,
    })
    .max(max, { error: `must be a list of at most ${max} identity tokens` })
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      for (const identity of list) {
        if (seen.has(identity)) ctx.addIssue({ code: 'custom', message: `names ${shown(identity)} twice` });
        seen.add(identity);
      }
    })
    .meta({ uniqueItems: true });
}

function classIdentities() {
  return mapOf(agentClassKey(), identityList(CLASS_IDENTITIES_MAX), 'must be a mapping of agent class to a list of identity tokens');
}

/** strict — a mapping of exactly these fields, with the problem of a missing mapping or an unknown field worded as elsewhere. */
function strict<S extends z.ZodRawShape>(shape: S, what: string) {
  const known = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? `is not a known field (known: ${known})` : what),
  });
}

const poolShape = {
  concurrency: doc(
    strict(
      {
        limit: doc(integer(1, CONCURRENCY_LIMIT_MAX), { description: 'N: the most requests in flight across the fleet.' }),
        maxHoldMs: doc(integer(1, SLOT_HOLD_MS_MAX), {
          description: 'D: the longest one request holds its slot, ms; the agent counts it released then.',
        }),
      },
      'must be a mapping { limit, maxHoldMs }',
    ),
    {
      form: '`{ limit, maxHoldMs }`',
      description:
        'A concurrency pool: at most `limit` requests in flight across the fleet at any instant, each holding its slot at most `maxHoldMs` (its own field, not the pool-level `maxHoldMs` of held requests), instead of `capacity` and `refill`. Chunk leases only, no allowance, no relays.',
    },
  ).nullish(),
  window: doc(rate(['limit', 'windowMs'], '"100/min" or { limit, windowMs }'), {
    form: '`"<limit>/<period>"` such as `100/min`, or `{ limit, windowMs }`',
    description:
      'A strict sliding-window pool: at most `limit` admitted in every window of `windowMs` (`"100/min"` or `{ limit, windowMs }`), instead of `capacity` and `refill`. Chunk leases only, no allowance.',
  }).nullish(),
  refill: doc(rate(['tokens', 'periodMs'], '"500/s" or { tokens, periodMs }'), {
    form: '`"<tokens>/<period>"` (period units ms, s, sec, m, min, h, d), or `{ tokens, periodMs }`',
    description: 'r: `"<tokens>/<period>"` such as `500/s`, `2/1000ms`, `60/min`, or `{ tokens, periodMs }`. Required unless `window`.',
  }).nullish(),
  capacity: doc(integer(1, Number.MAX_SAFE_INTEGER), { description: 'B, tokens. Required unless `window`.' }).nullish(),
  allowance: doc(integer(0, Number.MAX_SAFE_INTEGER), {
    description:
      'A, tokens: how far leased tokens may exceed what the bucket would hold; the promise becomes B + A + r·T (0: strict). Not for window pools.',
    default: '0',
  }).nullish(),
  leaseTtlMs: doc(integer(MIN_TTL_MS, MAX_TTL_MS), {
    description: 'How long a lease lives unless renewed, ms.',
    default: String(DEFAULT_TTL_MS),
  }).nullish(),
  maxLeaseTokens: doc(integer(1, Number.MAX_SAFE_INTEGER, 'capacity'), {
    description: 'The most one lease may hold, tokens; at most `capacity`.',
    default: 'max(1, capacity / 10)',
  }).nullish(),
  minGrantTokens: doc(integer(1, Number.MAX_SAFE_INTEGER, 'maxLeaseTokens'), {
    description: 'The smallest grant worth a reply while the request may still be held (no crumbs); at most `maxLeaseTokens`.',
    default: 'ceil(maxLeaseTokens / 4)',
  }).nullish(),
  maxHoldMs: doc(integer(0, MAX_TTL_MS, 'leaseTtlMs / 2'), {
    description: 'The longest a request is held waiting for a worthwhile grant, ms; at most half the TTL.',
    default: `min(${DEFAULT_HOLD_MS_MAX}, leaseTtlMs / 4)`,
  }).nullish(),
  leaseMode: doc(z.enum(['chunk', 'rate'], { error: (issue) => `must be "chunk" or "rate", got ${shown(issue.input)}` }), {
    description:
      '`chunk`: leases hold tokens. `rate`: leases are small buckets refilled at a weighted max-min fair share of the refill, renewed about once per refresh interval; needs (capacity + allowance) × refill period in µs × 2 ≤ 2^52.',
    default: 'chunk',
  }).nullish(),
  maxLeases: doc(integer(1, LEASES_MAX), {
    description: 'Live leases the pool keeps at once; a request for one more is refused `unavailable`.',
    default: String(DEFAULT_MAX_LEASES),
  }).nullish(),
  maxWaiting: doc(integer(0, LEASES_MAX), {
    description: 'Requests the pool holds at once; one that would wait beyond is refused `unavailable`.',
    default: String(DEFAULT_MAX_WAITING),
  }).nullish(),
  maxLeasesPerIdentity: doc(integer(1, LEASES_MAX, 'maxLeases'), {
    description: 'Live leases of one identity token at once (`fault: peer` beyond); at most `maxLeases`.',
    default: 'ceil(maxLeases / 2)',
  }).nullish(),
  maxWaitingPerIdentity: doc(integer(0, LEASES_MAX, 'maxWaiting'), {
    description: 'Held requests of one identity token at once; at most `maxWaiting`.',
    default: 'ceil(maxWaiting / 2)',
  }).nullish(),
  clockDriftLimit: doc(fraction(CLOCK_DRIFT_LIMIT_BELOW), {
    description:
      "How far an agent's clock may run from the coordinator's, as a fraction of elapsed time, before its requests are refused `clock-drift` and a slow one's lease is counted for as long as it may spend it; 0 turns the check off.",
    default: String(DEFAULT_CLOCK_DRIFT_LIMIT),
  }).nullish(),
  classWeights: doc(weights(CLASS_WEIGHT_MAX), {
    form: `agent class → integer in [1, ${CLASS_WEIGHT_MAX}]`,
    description: `Agent class → integer weight in [1, ${CLASS_WEIGHT_MAX}] of its turns (chunk) or of its rate share (rate); a class not listed weighs 1.`,
    default: '{}',
  }).nullish(),
  relayClasses: doc(weights(FLEET_WEIGHT_MAX), {
    form: `agent class → integer in [1, ${FLEET_WEIGHT_MAX}]`,
    description: `Agent class → the most fleet weight, in [1, ${FLEET_WEIGHT_MAX}], a request of it may claim: a relay asking under it weighs as the fleet behind it. Chunk pools only; a class is named here or in \`classWeights\`, not both.`,
    default: '{}',
  }).nullish(),
  classIdentities: doc(classIdentities(), {
    form: 'agent class → list of identity tokens',
    description: `Agent class → the identity tokens (at most ${CLASS_IDENTITIES_MAX}) that may claim it here; replaces the top-level entry of that class. The class must be in \`classWeights\` or \`relayClasses\`.`,
    default: 'the top level’s',
  }).nullish(),
  shadow: doc(flag(), {
    description: 'Shadow mode: agents admit what they would deny and count it apart; the pool leases exactly as otherwise.',
    default: 'false',
  }).optional(),
};

const templateShape = {
  ...poolShape,
  idleEvictMs: doc(integer(MIN_TTL_MS, IDLE_EVICT_MS_MAX), {
    description: 'How long a pool made from the template stays once idle and full, ms; at least `leaseTtlMs`.',
    default: `max(${DEFAULT_IDLE_EVICT_MS}, leaseTtlMs)`,
  }).nullish(),
  maxPools: doc(integer(1, POOLS_MAX), {
    description: 'The most pools the template may have at once; requests for more are refused.',
    default: String(DEFAULT_MAX_POOLS),
  }).nullish(),
  maxPoolsPerIdentity: doc(integer(1, POOLS_MAX, 'maxPools'), {
    description: 'The most of them one identity token may have made and still hold; at most `maxPools`.',
    default: 'ceil(maxPools / 2)',
  }).nullish(),
};

/** POOL_FIELDS and TEMPLATE_FIELDS — the schemas of one pool's and one template's fields. */
export const POOL_FIELDS = strict(poolShape, 'must be a mapping of pool fields');
export const TEMPLATE_FIELDS = strict(templateShape, 'must be a mapping of pool fields');

const poolName = z
  .string()
  .superRefine((name, ctx) => {
    const problem = poolNameProblem(name);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ minLength: 1, maxLength: 128, pattern: `^${NAME_CHARACTERS}+$` });
const templateKey = z
  .string()
  .superRefine((key, ctx) => {
    if (!key.endsWith('*') || poolNameProblem(key.slice(0, -1)) !== null)
      ctx.addIssue({ code: 'custom', message: 'must be a prefix of pool names followed by "*", like "tenant:*"' });
  })
  .meta({ minLength: 2, maxLength: 129, pattern: `^${NAME_CHARACTERS}+\\*$` });

/** subjectPrefix — dot-joined subject tokens without wildcards; `missing` words its absence when it is required. */
function subjectPrefix(missing = 'must be a string') {
  return z
    .string({ error: (issue) => (issue.input === undefined ? missing : 'must be a string') })
    .superRefine((prefix, ctx) => {
      try {
        assertSubjectPrefix(prefix);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: 'must be dot-joined subject tokens without "*" or ">"', params: { cause: error } });
      }
    })
    .meta({ pattern: '^[^.*> ]+(\\.[^.*> ]+)*$' });
}

const topShape = {
  pools: doc(mapOf(poolName, POOL_FIELDS, 'must be a mapping of pool name to pool fields'), {
    description: 'Pool name → pool fields. At least one pool or template.',
  }).nullish(),
  templates: doc(mapOf(templateKey, TEMPLATE_FIELDS, 'must be a mapping of "<prefix>*" to pool fields'), {
    description: '`"<prefix>*"` → pool fields and template fields: pools made on first use for every name with that prefix.',
    default: '{}',
  }).nullish(),
  shadow: doc(flag(), {
    description: 'Every pool (templates too) in shadow mode at once: the emergency switch.',
    default: 'false',
  }).optional(),
  classIdentities: doc(classIdentities(), {
    form: 'agent class → list of identity tokens',
    description: 'Agent class → the identity tokens that may claim it, in every pool and template (a pool’s own entry replaces it).',
    default: '{}',
  }).nullish(),
  subjectPrefix: doc(subjectPrefix(), {
    form: 'subject tokens joined by `.`',
    description: 'The first tokens of every subject the coordinator serves: dot-joined subject tokens without `*` or `>`.',
    default: 'tokenlease',
  }).nullish(),
  quietPeriodMs: doc(integer(MIN_TTL_MS, MAX_TTL_MS), {
    description: 'Time after start during which nothing is granted, ms; at least the longest pool TTL.',
    default: 'the longest leaseTtlMs',
  }).nullish(),
  bindIdentity: doc(flag(), {
    description: 'An agent id must belong to the identity token of its request’s subject.',
    default: 'false',
  }).optional(),
  operatorIdentities: doc(identityList(OPERATOR_IDENTITIES_MAX), {
    form: `list of at most ${OPERATOR_IDENTITIES_MAX} identity tokens`,
    description: `The identity tokens (at most ${OPERATOR_IDENTITIES_MAX}, distinct) whose \`pools\` and \`reload\` requests are answered; empty: see the operator access rules.`,
    default: '[]',
  }).nullish(),
};

/** POOLS_FILE — the schema of a coordinator's configuration document. */
export const POOLS_FILE = strict(topShape, 'must be a mapping with a "pools" field');

/** PoolsFile, PoolFields, TemplateFields — a valid document as written (defaults not yet filled in). */
export type PoolsFile = z.input<typeof POOLS_FILE>;
export type PoolFields = z.input<typeof POOL_FIELDS>;
export type TemplateFields = z.input<typeof TEMPLATE_FIELDS>;

type ClientKey = 'driftMargin' | 'refreshMs' | 'holdMs' | 'replyTimeoutMs' | 'agentClass';

/** clientSetting — an uplink setting of the lease client, checked by the lease client's own rule (shared lease-client-settings.ts). */
function clientSetting<K extends ClientKey>(key: K, form: Record<string, unknown>, description: string) {
  const schema = z
    .custom<LeaseClientSettings[K]>(() => true)
    .superRefine((value, ctx) => {
      const rule = leaseClientSettingProblem(key, value);
      if (rule !== null) ctx.addIssue({ code: 'custom', message: `${rule}, got ${shown(value)}` });
    })
    .meta(form);
  return doc(schema, { description, default: shown(LEASE_CLIENT_DEFAULTS[key]) }).nullish();
}

/** msForm — the JSON Schema of a whole-ms lease client setting, from the lease client's own bounds. */
function msForm(key: ClientKey): Record<string, unknown> {
  const [minimum, maximum] = LEASE_CLIENT_MS_BOUNDS.get(key) ?? [0, Number.MAX_SAFE_INTEGER];
  return { type: 'integer', minimum, maximum };
}

const uplinkShape = {
  driftMargin: clientSetting(
    'driftMargin',
    { type: 'number', minimum: 0, exclusiveMaximum: DRIFT_MARGIN_MAX },
    'Fraction of the TTL cut from the relay’s expiry of its upstream lease for clock drift.',
  ),
  refreshMs: clientSetting('refreshMs', msForm('refreshMs'), 'Horizon of demand one upstream request asks for, ms.'),
  holdMs: clientSetting('holdMs', msForm('holdMs'), 'How long the root may hold a request for a worthwhile grant, ms.'),
  replyTimeoutMs: clientSetting(
    'replyTimeoutMs',
    msForm('replyTimeoutMs'),
    'Time allowed for a reply on top of the hold before a retry, ms.',
  ),
  agentClass: clientSetting(
    'agentClass',
    { type: ['string', 'null'], minLength: 1, maxLength: ID_LENGTH_MAX },
    'The class the relay asks the root under (listed in the root pool’s `relayClasses`, it weighs as the fleet behind the relay); null: none.',
  ),
  gapMs: doc(integer(1, GAP_MS_MAX), {
    description: 'The shortest gap between two upstream requests that were not due, ms.',
    default: String(GAP_MS_DEFAULT),
  }).nullish(),
  identity: doc(
    z
      .string({ error: 'must be 1 to 48 characters of [A-Za-z0-9_-]' })
      .regex(UPLINK_IDENTITY_FORM, { error: 'must be 1 to 48 characters of [A-Za-z0-9_-]' }),
    {
      description:
        'The identity token of the relay’s requests to the root and the first part of its upstream agent ids, for a root with `bindIdentity` and the NATS user pinned to it.',
      default: 'none (anonymous)',
      form: '1 to 48 of `[A-Za-z0-9_-]`',
    },
  ).nullish(),
};

/** UPLINK — the schema of a relay's `uplink` settings. */
export const UPLINK = z.strictObject(uplinkShape, {
  error: (issue) => (issue.code === 'unrecognized_keys' ? 'is not an uplink field' : 'must be a mapping'),
});

/** RELAY_FILE — the schema of a relay's configuration document: a coordinator's, whose pools are relayed, and where the root is. */
export const RELAY_FILE = strict(
  {
    upstreamPrefix: doc(subjectPrefix("must be the root coordinator's subject prefix"), {
      form: 'subject tokens joined by `.`',
      description: 'The root coordinator’s subject prefix. Required.',
    }),
    ...topShape,
    subjectPrefix: doc(subjectPrefix("must be given: the relay's own prefix"), {
      form: 'subject tokens joined by `.`',
      description: 'The relay’s own subject prefix, different from `upstreamPrefix`. Required.',
    }),
    uplink: doc(UPLINK, { description: 'How the relay leases from the root: the lease client’s settings.', default: '{}' }).nullish(),
  },
  'must be a mapping',
);

export type RelayFile = z.input<typeof RELAY_FILE>;

/** Located — where a schema problem is: the pool (or template key) it concerns, the field and the problem in words. */
export interface Located {
  readonly pool?: string;
  readonly field: string;
  readonly problem: string;
  readonly cause?: unknown;
}

/** MAP_FIELDS — fields whose entries are named in the problem rather than in the field: `weight of "gold" …`. */
const MAP_FIELDS = new Set(['classWeights', 'relayClasses']);

/**
 * schemaProblem — the first problem `schema` finds in `document`, located;
 * null when it finds none. An unknown field is named before any other
 * problem, as a misspelled field explains the rest.
 */
export function schemaProblem(schema: z.ZodType, document: unknown): Located | null {
  const result = schema.safeParse(document);
  if (result.success) return null;
  const issues = result.error.issues;
  const issue = issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0];
  if (issue === undefined) return null;
  const path = issue.path.map(String);
  const inPool = (path[0] === 'pools' || path[0] === 'templates') && path.length >= 2;
  const pool = inPool ? (path[1] as string) : undefined;
  const rest = (inPool ? path.slice(2) : path).filter((_, i) => typeof issue.path[(inPool ? 2 : 0) + i] === 'string');
  const cause = issue.code === 'custom' ? (issue.params as { cause?: unknown } | undefined)?.cause : undefined;
  if (issue.code === 'unrecognized_keys') {
    const key = (issue.keys[0] ?? '').slice(0, 64);
    return { ...(pool === undefined ? {} : { pool }), field: [...rest, key].join('.'), problem: issue.message };
  }
  if (issue.code === 'custom' && (issue.params as { key?: boolean } | undefined)?.key === true) {
    const problem = issue.message;
    if (pool !== undefined && rest.length === 0) return { pool, field: 'name', problem };
    return { ...(pool === undefined ? {} : { pool }), field: rest.slice(0, -1).join('.') || '(document)', problem };
  }
  const [first, entry] = rest;
  if (first !== undefined && entry !== undefined && MAP_FIELDS.has(first)) {
    return { ...(pool === undefined ? {} : { pool }), field: first, problem: `weight of ${shown(entry)} ${issue.message}` };
  }
  const field = rest.length === 0 ? (inPool ? '(pool)' : '(document)') : rest.join('.');
  return { ...(pool === undefined ? {} : { pool }), field, problem: issue.message, ...(cause === undefined ? {} : { cause }) };
}
