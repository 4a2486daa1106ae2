/**
 * Coordinator configuration: validation of an already-parsed JSON or YAML
 * document. Pure: reading the file is the adapter's job.
 *
 * Every error names the source (file), the pool and the field, and nothing
 * is half-applied: a document is accepted whole or refused.
 *
 * Pool fields (units in the names; defaults in brackets):
 * - `capacity` tokens, B. Required (unless `window`).
 * - `refill` `"<tokens>/<period>"` such as `"500/s"`, or `{ tokens, periodMs }`. Required (unless `window`).
 * - `window` `{ limit, windowMs }`, or `"<limit>/<period>"` such as
 *   `"100/min"`: a strict sliding-window pool (window-credit.ts), at most
 *   `limit` admitted in every window of `windowMs`, instead of `capacity`
 *   and `refill` (it leases as a bucket of capacity `limit` refilled at
 *   `limit` per `windowMs` would be described). Chunk leases only, no
 *   allowance (one would only be a larger limit).
 * - `leaseTtlMs` [2000] in [MIN_TTL_MS, MAX_TTL_MS].
 * - `maxLeaseTokens` [max(1, capacity/10)]: the most one lease may hold.
 * - `minGrantTokens` [ceil(maxLeaseTokens/4)]: the smallest grant worth a
 *   reply while the request may still be held (no crumbs).
 * - `maxHoldMs` [min(250, leaseTtlMs/4)]: the longest a request is held.
 * - `allowance` [0] tokens, A: how far leased tokens may exceed what the
 *   bucket would hold, widening the promise to B + A + r·T for fewer
 *   round-trips and less clipped refill under many leases (0 = strict).
 * - `classWeights` [{}]: agent class → integer weight in [1, 1000]. A held
 *   request of a class of weight w waits for, and is served, a turn of
 *   `min(wanted, minGrantTokens × w)`, so under contention agents' shares
 *   follow their weights (an agent without a listed class: weight 1).
 * - `relayClasses` [{}]: agent class → the most weight, in [1, 10^6], a
 *   request of that class may claim with its `fleetWeight`: a relay asking
 *   under it weighs as the fleet behind it (Σ the weights of its
 *   downstream leases whose agents report demand), so shares across
 *   relays follow their fleets. Chunk pools
 *   only; a class is named in `classWeights` or here, not both.
 * - `leaseMode` ['chunk']: 'chunk' leases hold tokens; 'rate' leases are
 *   small buckets whose tokens trickle in at a weighted max-min fair share
 *   of the refill (water-filling over the demand agents report), so each
 *   agent renews about once per refresh interval whatever B is. Rate mode
 *   needs (capacity + allowance) × refill period in µs × 2 ≤ 2^52.
 * - `maxLeases` [100000]: live leases the pool keeps at once; a request for
 *   one more is refused `unavailable` (a bound on memory and work that no
 *   stream of new agent ids can pass).
 * - `maxWaiting` [10000]: requests the pool holds at once; a request that
 *   would wait beyond that is refused `unavailable`.
 * - `maxLeasesPerIdentity` [ceil(maxLeases / 2)] and `maxWaitingPerIdentity`
 *   [ceil(maxWaiting / 2)]: the same caps for the requests of one identity
 *   token (the subject's), so that no one identity can fill the pool and
 *   lock the others out: whatever it does, at least the other half is
 *   theirs. Beyond it: `unavailable` with `fault: 'peer'`. At most the pool
 *   cap itself (which is what setting them to it means: no per-identity cap).
 * - `classIdentities` [{}]: agent class → the identity tokens that may claim
 *   it (at most CLASS_IDENTITIES_MAX each). A class named here weighs its
 *   `classWeights` weight, or states a fleet weight under its
 *   `relayClasses` limit, only in a request of one of those identities;
 *   anyone else's claim of it weighs 1 (the default), is served, and is
 *   counted for operators. A class not named here is open to every
 *   identity. Merged with the top-level `classIdentities`: a pool's own
 *   entry for a class replaces the top-level one.
 * - `shadow` [false]: shadow mode. Grants say so and agents admit what they
 *   would deny, counting it apart; the pool leases exactly as it would
 *   otherwise. A top-level `shadow: true` puts every pool (templates too) in
 *   shadow mode at once, whatever its own field says: the emergency switch.
 *
 * Templates (`templates: { "tenant:*": { ...pool fields, idleEvictMs
 * [max(60000, leaseTtlMs)], maxPools [100000], maxPoolsPerIdentity
 * [ceil(maxPools / 2)] } }`) make per-tenant pools on first use; see
 * TemplateConfig.
 *
 * Top-level fields besides `pools` and `templates`: `subjectPrefix`
 * ['tokenlease'], `quietPeriodMs` [the longest TTL], `bindIdentity`
 * [false], `shadow` [false], and `operatorIdentities` [[]]: the identity
 * tokens (at most OPERATOR_IDENTITIES_MAX, distinct) whose `pools` and
 * `reload` requests are answered; see operator-access.ts for who may when
 * it is empty; `classIdentities` [{}], as a pool's, for every pool and
 * template.
 */
import {
  makeRate,
  parseRate,
  poolNameProblem,
  assertSubjectPrefix,
  tokenScale,
  isProtocolId,
  ID_FORM,
  FLEET_WEIGHT_MAX,
  TokenleaseError,
  DEFAULT_SUBJECT_PREFIX,
  type Rate,
} from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';

/** MIN_TTL_MS — the shortest lease TTL a pool may have, ms. */
export const MIN_TTL_MS = 10;
/** MAX_TTL_MS — the longest lease TTL a pool may have (one hour), ms; also the longest quiet period. */
export const MAX_TTL_MS = 3_600_000;
/** DEFAULT_TTL_MS — a pool's lease TTL when its `leaseTtlMs` is not set, ms. */
export const DEFAULT_TTL_MS = 2000;
export const DEFAULT_HOLD_MS_MAX = 250;

/** PoolConfig — one pool as the coordinator serves it: every field of the configuration file's pool, defaults filled in (parseCoordinatorConfig). */
export interface PoolConfig {
  readonly name: string;
  readonly capacity: number;
  readonly refill: Rate;
  readonly leaseTtlMs: number;
  readonly maxLeaseTokens: number;
  readonly minGrantTokens: number;
  readonly maxHoldMs: number;
  readonly allowance: number;
  /**
   * Weight of each agent class in this pool's turns (an agent without a
   * listed class: 1). A Map, because the class comes off the wire: a name
   * such as `constructor` must find nothing, not Object.prototype's member.
   */
  readonly classWeights: ReadonlyMap<string, number>;
  /**
   * Classes relays ask under, each with the most weight a request of it may
   * claim: such a request weighs its `fleetWeight` (a relay's: the sum of
   * its demanding downstream leases' weights), at most that. A Map, as `classWeights`.
   */
  readonly relayClasses: ReadonlyMap<string, number>;
  readonly leaseMode: LeaseMode;
  readonly maxLeases: number;
  readonly maxWaiting: number;
  /** The most live leases one identity token may hold here at once (≤ maxLeases). */
  readonly maxLeasesPerIdentity: number;
  /** The most requests of one identity token held here at once (≤ maxWaiting). */
  readonly maxWaitingPerIdentity: number;
  /**
   * Classes granted to some identities only: class → the identity tokens
   * whose requests may claim it (its weight, or a fleet weight). A class
   * not in it is open to all. A Map of Sets: class and identity come off the wire.
   */
  readonly classIdentities: ReadonlyMap<string, ReadonlySet<string>>;
  /** Whether grants put agents in shadow mode: the pool's own `shadow` or the configuration's fleet-wide one. */
  readonly shadow: boolean;
  /** A sliding-window pool: at most `limit` (= capacity) in every window of `windowMs` (= the refill period); null for a bucket. */
  readonly window: WindowLimit | null;
}

/** WindowLimit — a sliding-window pool's limit: at most `limit` tokens admitted in any window of `windowMs`. */
export interface WindowLimit {
  readonly limit: number;
  readonly windowMs: number;
}

/** LeaseMode — what a pool's leases are: `chunk` leases hold tokens; `rate` leases are small buckets their tokens trickle into. */
export type LeaseMode = 'chunk' | 'rate';

/**
 * TemplateConfig — pools made on first use for every name starting with
 * `prefix` (configured as `"<prefix>*"`), all with the same fields, and
 * forgotten again once idle and full for `idleEvictMs`. A pool configured
 * by name wins over a template; among templates the longest prefix wins.
 */
export interface TemplateConfig {
  readonly prefix: string;
  /** The pool fields; `name` is the template's key, e.g. `tenant:*`. */
  readonly pool: PoolConfig;
  readonly idleEvictMs: number;
  /** Most pools this template may have at once; requests for more are refused. */
  readonly maxPools: number;
  /** Most of them one identity token may have made and still held (≤ maxPools); its requests for more are refused. */
  readonly maxPoolsPerIdentity: number;
}

/** CoordinatorConfig — a validated configuration (parseCoordinatorConfig, loadConfigFile): the subject prefix, the pools and templates, and the fleet-wide settings. */
export interface CoordinatorConfig {
  readonly subjectPrefix: string;
  /** Whether an agent id must belong to the identity token of its request's subject (see coordinator-core.ts). */
  readonly bindIdentity: boolean;
  /** Time after start during which nothing is granted; defaults to the longest pool TTL. */
  readonly quietPeriodMs: number;
  readonly pools: readonly PoolConfig[];
  readonly templates: readonly TemplateConfig[];
  /** The fleet-wide switch: every pool in shadow mode (already folded into each pool's `shadow`). */
  readonly shadow: boolean;
  /** Identity tokens whose operator ops (`pools`, `reload`) are answered (operator-access.ts); a Set: tokens come off the wire. */
  readonly operatorIdentities: ReadonlySet<string>;
}

export const DEFAULT_IDLE_EVICT_MS = 60_000;
export const DEFAULT_MAX_LEASES = 100_000;
export const DEFAULT_MAX_WAITING = 10_000;
const LEASES_MAX = 10_000_000;
export const DEFAULT_MAX_POOLS = 100_000;

const POOL_KEYS = new Set([
  'capacity',
  'refill',
  'leaseTtlMs',
  'maxLeaseTokens',
  'minGrantTokens',
  'maxHoldMs',
  'allowance',
  'classWeights',
  'relayClasses',
  'leaseMode',
  'maxLeases',
  'maxWaiting',
  'maxLeasesPerIdentity',
  'maxWaitingPerIdentity',
  'classIdentities',
  'shadow',
  'window',
]);
export const CLASS_WEIGHT_MAX = 1000;
const TOP_KEYS = new Set([
  'subjectPrefix',
  'quietPeriodMs',
  'pools',
  'templates',
  'bindIdentity',
  'shadow',
  'operatorIdentities',
  'classIdentities',
]);
/** OPERATOR_IDENTITIES_MAX — the most identity tokens `operatorIdentities` may name. */
export const OPERATOR_IDENTITIES_MAX = 100;
/** CLASS_IDENTITIES_MAX — the most identity tokens `classIdentities` may grant one class. */
export const CLASS_IDENTITIES_MAX = 1000;
const TEMPLATE_KEYS = new Set([...POOL_KEYS, 'idleEvictMs', 'maxPools', 'maxPoolsPerIdentity']);

type Doc = Readonly<Record<string, unknown>>;

function isDoc(x: unknown): x is Doc {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

class Where {
  constructor(
    readonly source: string,
    readonly pool?: string,
  ) {}

  fail(field: string, problem: string, cause?: unknown): never {
    const poolPart = this.pool === undefined ? '' : `pool ${JSON.stringify(this.pool)}: `;
    throw new CoordinatorError('config-invalid', `${this.source}: ${poolPart}field "${field}" ${problem}`, {
      ...(this.pool === undefined ? {} : { pool: this.pool }),
      field,
      cause,
    });
  }

  int(doc: Doc, field: string, min: number, max: number, fallback?: number): number {
    const value = doc[field] ?? fallback;
    if (value === undefined) this.fail(field, 'is required');
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
      this.fail(field, `must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
    }
    return value;
  }

  bool(doc: Doc, field: string, fallback: boolean): boolean {
    const value = Object.hasOwn(doc, field) ? doc[field] : undefined;
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') this.fail(field, `must be true or false, got ${JSON.stringify(value)}`);
    return value;
  }

  rejectUnknown(doc: Doc, known: ReadonlySet<string>, within?: string): void {
    for (const key of Object.keys(doc)) {
      if (!known.has(key))
        this.fail(within === undefined ? key : `${within}.${key}`, `is not a known field (known: ${[...known].join(', ')})`);
    }
  }
}

function readRate(where: Where, field: string, value: unknown, tokensKey = 'tokens', periodKey = 'periodMs'): Rate {
  try {
    if (typeof value === 'string') return parseRate(value);
    if (isDoc(value)) {
      where.rejectUnknown(value, new Set([tokensKey, periodKey]), field);
      return makeRate(value[tokensKey] as number, value[periodKey] as number);
    }
  } catch (error) {
    if (error instanceof TokenleaseError) where.fail(field, error.message, error);
    throw error;
  }
  const like = field === 'window' ? '"100/min" or { limit, windowMs }' : '"500/s" or { tokens, periodMs }';
  return where.fail(field, value === undefined ? 'is required' : `must be a string like ${like}`);
}

/** readWindow — a sliding-window pool's limit, or null for a bucket pool; refuses the fields a window pool has no use for. */
function readWindow(where: Where, doc: Doc): WindowLimit | null {
  if (!Object.hasOwn(doc, 'window')) return null;
  for (const field of ['capacity', 'refill']) {
    if (Object.hasOwn(doc, field)) where.fail(field, 'does not apply to a window pool: its "window" gives the limit and the window');
  }
  if ((doc['leaseMode'] ?? 'chunk') !== 'chunk')
    where.fail('leaseMode', 'must be "chunk" for a window pool (a rate lease spends tokens it was never granted)');
  if ((doc['allowance'] ?? 0) !== 0) where.fail('allowance', 'must be 0 for a window pool: an allowance would only be a larger limit');
  const rate = readRate(where, 'window', doc['window'], 'limit', 'windowMs');
  return { limit: rate.tokens, windowMs: rate.periodMs };
}

/** Fleet — what the top level of a document gives every pool: the shadow switch and class grants. */
interface Fleet {
  readonly shadow: boolean;
  readonly classIdentities: ReadonlyMap<string, ReadonlySet<string>>;
}

/** halfOf — the default per-identity share of a cap: half of it, rounded up (a cap of 1 stays 1). */
function halfOf(cap: number): number {
  return Math.ceil(cap / 2);
}

function readPool(source: string, name: string, doc: unknown, fleet: Fleet, template = false): PoolConfig {
  const where: Where = new Where(source, name);
  const problem = poolNameProblem(template ? name.slice(0, -1) : name);
  if (problem !== null || (template && !name.endsWith('*'))) {
    where.fail('name', template ? 'must be a prefix of pool names followed by "*", like "tenant:*"' : (problem as string));
  }
  if (!isDoc(doc)) return where.fail('(pool)', 'must be a mapping of pool fields');
  where.rejectUnknown(doc, template ? TEMPLATE_KEYS : POOL_KEYS);
  const window = readWindow(where, doc);
  const refill = window === null ? readRate(where, 'refill', doc['refill']) : makeRate(window.limit, window.windowMs);
  const capacity = window?.limit ?? where.int(doc, 'capacity', 1, Number.MAX_SAFE_INTEGER);
  const allowance = where.int(doc, 'allowance', 0, window === null ? Number.MAX_SAFE_INTEGER : 0, 0);
  try {
    tokenScale(capacity, refill);
  } catch (error) {
    if (error instanceof TokenleaseError) where.fail('capacity', error.message, error);
    throw error;
  }
  try {
    tokenScale(capacity + allowance, refill);
  } catch (error) {
    if (error instanceof TokenleaseError) where.fail('allowance', `capacity + allowance is too large: ${error.message}`, error);
    throw error;
  }
  const leaseTtlMs = where.int(doc, 'leaseTtlMs', MIN_TTL_MS, MAX_TTL_MS, DEFAULT_TTL_MS);
  const maxLeaseTokens = where.int(doc, 'maxLeaseTokens', 1, capacity, Math.max(1, Math.floor(capacity / 10)));
  const minGrantTokens = where.int(doc, 'minGrantTokens', 1, maxLeaseTokens, Math.ceil(maxLeaseTokens / 4));
  const holdCeilingMs = Math.floor(leaseTtlMs / 2);
  const maxHoldMs = where.int(doc, 'maxHoldMs', 0, holdCeilingMs, Math.min(DEFAULT_HOLD_MS_MAX, Math.floor(leaseTtlMs / 4)));
  const leaseMode = doc['leaseMode'] ?? 'chunk';
  if (leaseMode !== 'chunk' && leaseMode !== 'rate') where.fail('leaseMode', `must be "chunk" or "rate", got ${JSON.stringify(leaseMode)}`);
  if (leaseMode === 'rate' && (capacity + allowance) * refill.periodMs * 2000 > 2 ** 52) {
    where.fail('leaseMode', `"rate" needs (capacity + allowance) × refill period in µs × 2 ≤ 2^52; use a shorter refill period or "chunk"`);
  }
  const maxLeases = where.int(doc, 'maxLeases', 1, LEASES_MAX, DEFAULT_MAX_LEASES);
  const maxWaiting = where.int(doc, 'maxWaiting', 0, LEASES_MAX, DEFAULT_MAX_WAITING);
  const maxLeasesPerIdentity = where.int(doc, 'maxLeasesPerIdentity', 1, maxLeases, halfOf(maxLeases));
  const maxWaitingPerIdentity = where.int(doc, 'maxWaitingPerIdentity', 0, maxWaiting, halfOf(maxWaiting));
  const classWeights = readWeights(where, 'classWeights', doc['classWeights'], CLASS_WEIGHT_MAX);
  const relayClasses = readWeights(where, 'relayClasses', doc['relayClasses'], FLEET_WEIGHT_MAX);
  if (relayClasses.size > 0 && leaseMode === 'rate') where.fail('relayClasses', 'are for chunk pools: a relay leases chunks');
  for (const agentClass of relayClasses.keys()) {
    if (classWeights.has(agentClass))
      where.fail('relayClasses', `class ${JSON.stringify(agentClass)} is also in classWeights: name it once`);
  }
  const ownGrants = readClassIdentities(where, doc['classIdentities']);
  for (const agentClass of ownGrants.keys()) {
    if (!classWeights.has(agentClass) && !relayClasses.has(agentClass))
      where.fail('classIdentities', `class ${JSON.stringify(agentClass)} is in neither classWeights nor relayClasses: nothing to grant`);
  }
  const classIdentities = new Map([...fleet.classIdentities, ...ownGrants]);
  const shadow = where.bool(doc, 'shadow', false) || fleet.shadow;
  return {
    name,
    capacity,
    refill,
    leaseTtlMs,
    maxLeaseTokens,
    minGrantTokens,
    maxHoldMs,
    allowance,
    classWeights,
    relayClasses,
    leaseMode,
    maxLeases,
    maxWaiting,
    maxLeasesPerIdentity,
    maxWaitingPerIdentity,
    classIdentities,
    shadow,
    window,
  };
}

function readWeights(where: Where, field: string, value: unknown, max: number): ReadonlyMap<string, number> {
  const weights = new Map<string, number>();
  if (value === undefined) return weights;
  if (!isDoc(value)) return where.fail(field, 'must be a mapping of agent class to weight');
  for (const [agentClass, weight] of Object.entries(value)) {
    if (!isProtocolId(agentClass)) where.fail(field, `class ${JSON.stringify(agentClass)} must be ${ID_FORM}`);
    if (typeof weight !== 'number' || !Number.isSafeInteger(weight) || weight < 1 || weight > max) {
      where.fail(field, `weight of ${JSON.stringify(agentClass)} must be an integer in [1, ${max}], got ${JSON.stringify(weight)}`);
    }
    weights.set(agentClass, weight);
  }
  return weights;
}

function readTemplate(source: string, key: string, doc: unknown, fleet: Fleet): TemplateConfig {
  const pool = readPool(source, key, doc, fleet, true);
  const where: Where = new Where(source, key);
  const fields = doc as Doc;
  const maxPools = where.int(fields, 'maxPools', 1, 10_000_000, DEFAULT_MAX_POOLS);
  return {
    prefix: key.slice(0, -1),
    pool,
    idleEvictMs: where.int(fields, 'idleEvictMs', pool.leaseTtlMs, 86_400_000, Math.max(DEFAULT_IDLE_EVICT_MS, pool.leaseTtlMs)),
    maxPools,
    maxPoolsPerIdentity: where.int(fields, 'maxPoolsPerIdentity', 1, maxPools, halfOf(maxPools)),
  };
}

/**
 * readClassIdentities — `classIdentities`: a mapping of agent class to a
 * list of distinct identity tokens (at most CLASS_IDENTITIES_MAX); absent: none.
 */
function readClassIdentities(where: Where, value: unknown): Map<string, ReadonlySet<string>> {
  const field = 'classIdentities';
  const grants = new Map<string, ReadonlySet<string>>();
  if (value === undefined) return grants;
  if (!isDoc(value)) return where.fail(field, 'must be a mapping of agent class to a list of identity tokens');
  for (const [agentClass, list] of Object.entries(value)) {
    if (!isProtocolId(agentClass)) where.fail(field, `class ${JSON.stringify(agentClass)} must be ${ID_FORM}`);
    grants.set(agentClass, readIdentityList(where, `${field}.${agentClass}`, list, CLASS_IDENTITIES_MAX));
  }
  return grants;
}

/** parseCoordinatorConfig — validates a parsed document; throws `CoordinatorError('config-invalid')`. */
export function parseCoordinatorConfig(source: string, doc: unknown): CoordinatorConfig {
  const where: Where = new Where(source);
  if (!isDoc(doc)) return where.fail('(document)', 'must be a mapping with a "pools" field');
  where.rejectUnknown(doc, TOP_KEYS);
  const poolsDoc = doc['pools'] ?? {};
  const templatesDoc = doc['templates'] ?? {};
  if (!isDoc(poolsDoc)) where.fail('pools', 'must be a mapping of pool name to pool fields');
  if (!isDoc(templatesDoc)) where.fail('templates', 'must be a mapping of "<prefix>*" to pool fields');
  if (Object.keys(poolsDoc).length + Object.keys(templatesDoc).length === 0) {
    where.fail('pools', 'must name at least one pool (or give "templates")');
  }
  const fleet: Fleet = { shadow: where.bool(doc, 'shadow', false), classIdentities: readClassIdentities(where, doc['classIdentities']) };
  const shadow = fleet.shadow;
  const pools = Object.entries(poolsDoc).map(([name, poolDoc]) => readPool(source, name, poolDoc, fleet));
  const templates = Object.entries(templatesDoc).map(([key, templateDoc]) => readTemplate(source, key, templateDoc, fleet));
  const subjectPrefix = doc['subjectPrefix'] ?? DEFAULT_SUBJECT_PREFIX;
  if (typeof subjectPrefix !== 'string') where.fail('subjectPrefix', 'must be a string');
  try {
    assertSubjectPrefix(subjectPrefix);
  } catch (error) {
    where.fail('subjectPrefix', 'must be dot-joined subject tokens without "*" or ">"', error);
  }
  const longestTtlMs = Math.max(...pools.map((p) => p.leaseTtlMs), ...templates.map((t) => t.pool.leaseTtlMs));
  const quietPeriodMs = where.int(doc, 'quietPeriodMs', longestTtlMs, MAX_TTL_MS, longestTtlMs);
  const bindIdentity = doc['bindIdentity'] ?? false;
  if (typeof bindIdentity !== 'boolean') where.fail('bindIdentity', `must be true or false, got ${JSON.stringify(bindIdentity)}`);
  const operatorIdentities = readOperatorIdentities(where, doc['operatorIdentities']);
  return { subjectPrefix, bindIdentity, quietPeriodMs, pools, templates, shadow, operatorIdentities };
}

/** readOperatorIdentities — a list of distinct identity tokens (subject tokens), at most OPERATOR_IDENTITIES_MAX; absent: none. */
function readOperatorIdentities(where: Where, value: unknown): ReadonlySet<string> {
  if (value === undefined) return new Set();
  return readIdentityList(where, 'operatorIdentities', value, OPERATOR_IDENTITIES_MAX);
}

/** readIdentityList — a list of at most `max` distinct identity tokens (subject tokens). */
function readIdentityList(where: Where, field: string, value: unknown, max: number): ReadonlySet<string> {
  if (!Array.isArray(value) || value.length > max) where.fail(field, `must be a list of at most ${max} identity tokens`);
  const identities = new Set<string>();
  for (const identity of value as unknown[]) {
    const problem = poolNameProblem(identity);
    const shown = JSON.stringify(identity)?.slice(0, 140) ?? String(identity);
    if (problem !== null) where.fail(field, `entry ${shown} is no identity token: it ${problem}`);
    if (identities.has(identity as string)) where.fail(field, `names ${shown} twice`);
    identities.add(identity as string);
  }
  return identities;
}
