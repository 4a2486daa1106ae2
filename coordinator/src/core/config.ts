/**
 * Coordinator configuration: validation of an already-parsed JSON or YAML
 * document. Pure: reading the file is the adapter's job.
 *
 * Every error names the source (file), the pool and the field, and nothing
 * is half-applied: a document is accepted whole or refused.
 *
 * What each field is, its form, bounds and default, is said once, in the
 * schema (config-schema.ts), which checks every field alone and from which
 * the JSON Schema and docs/reference/pools-file.md are generated. This file
 * checks what depends on several fields (a bound that is another field, a
 * window pool's exclusions, what a rate lease needs of the arithmetic, the
 * classes a grant may name) and fills in the defaults derived from others:
 * - `maxLeaseTokens` [max(1, capacity/10)], at most `capacity`;
 * - `minGrantTokens` [ceil(maxLeaseTokens/4)], at most `maxLeaseTokens`;
 * - `maxHoldMs` [min(250, leaseTtlMs/4)], at most `leaseTtlMs/2`;
 * - `maxLeasesPerIdentity` [ceil(maxLeases/2)] and `maxWaitingPerIdentity`
 *   [ceil(maxWaiting/2)], at most the pool's cap (which is what setting
 *   them to it means: no per-identity cap);
 * - a template's `idleEvictMs` [max(60000, leaseTtlMs)], at least its TTL,
 *   and `maxPoolsPerIdentity` [ceil(maxPools/2)], at most `maxPools`;
 * - `quietPeriodMs` [the longest TTL], at least that.
 */
import { makeRate, parseRate, tokenScale, TokenleaseError, DEFAULT_SUBJECT_PREFIX, type Rate } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import {
  DEFAULT_CLOCK_DRIFT_LIMIT,
  DEFAULT_HOLD_MS_MAX,
  DEFAULT_IDLE_EVICT_MS,
  DEFAULT_MAX_LEASES,
  DEFAULT_MAX_POOLS,
  DEFAULT_MAX_WAITING,
  DEFAULT_TTL_MS,
  IDLE_EVICT_MS_MAX,
  MAX_TTL_MS,
  POOLS_FILE,
  schemaProblem,
  type PoolFields,
  type PoolsFile,
  type RateInput,
  type TemplateFields,
} from './config-schema.js';
import type { z } from 'zod';

export {
  CLASS_IDENTITIES_MAX,
  CLASS_WEIGHT_MAX,
  DEFAULT_HOLD_MS_MAX,
  DEFAULT_IDLE_EVICT_MS,
  DEFAULT_MAX_LEASES,
  DEFAULT_MAX_POOLS,
  DEFAULT_MAX_WAITING,
  DEFAULT_TTL_MS,
  MAX_TTL_MS,
  MIN_TTL_MS,
  OPERATOR_IDENTITIES_MAX,
} from './config-schema.js';

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
  /** How far an agent's clock may run from the coordinator's, a fraction of elapsed time (0: not checked; clock-check.ts). */
  readonly clockDriftLimit: number;
  /**
   * Classes granted to some identities only: class → the identity tokens
   * whose requests may claim it (its weight, or a fleet weight). A class
   * not in it is open to all. A Map of Sets: class and identity come off the wire.
   */
  readonly classIdentities: ReadonlyMap<string, ReadonlySet<string>>;
  /** Whether grants put agents in shadow mode: the pool's own `shadow` or the configuration's fleet-wide one. */
  readonly shadow: boolean;
  /**
   * A sliding-window pool: at most `limit` (= capacity) in every window of
   * `windowMs` (= the refill period); null for a bucket. A concurrency pool
   * is one too, whose window is its hold bound (docs/design.md,
   * "Concurrency pools").
   */
  readonly window: WindowLimit | null;
  /** A concurrency pool: at most `limit` (= capacity) requests in flight, each holding a slot at most `maxHoldMs`; null otherwise. */
  readonly concurrency: SlotLimit | null;
}

/** SlotLimit — a concurrency pool's limit: at most `limit` requests in flight, each counted at most `maxHoldMs`. */
export interface SlotLimit {
  readonly limit: number;
  readonly maxHoldMs: number;
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

/** Where — the source and pool an error names. */
export class Where {
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

  /** within — `value` (or `fallback` when absent) if in [min, max], a bound another field gives; fails otherwise. */
  within(field: string, value: number | null | undefined, min: number, max: number, fallback: number): number {
    const chosen = value ?? fallback;
    if (chosen < min || chosen > max) this.fail(field, `must be an integer in [${min}, ${max}], got ${chosen}`);
    return chosen;
  }
}

/** checkSchema — refuses `doc` with the first problem `schema` finds in it, one line naming source, pool and field. */
export function checkSchema(source: string, schema: z.ZodType, doc: unknown): void {
  const found = schemaProblem(schema, doc);
  if (found !== null) new Where(source, found.pool).fail(found.field, found.problem, found.cause);
}

/** toRate — a rate the schema has already checked (its mapping form under the keys given). */
function toRate(value: RateInput, tokensKey = 'tokens', periodKey = 'periodMs'): Rate {
  return typeof value === 'string' ? parseRate(value) : makeRate(value[tokensKey] as number, value[periodKey] as number);
}

/** readWindow — a sliding-window pool's limit, or null for a bucket pool; refuses the fields a window pool has no use for. */
function readWindow(where: Where, doc: PoolFields): WindowLimit | null {
  if (doc.window == null) return null;
  for (const field of ['capacity', 'refill'] as const) {
    if (doc[field] != null) where.fail(field, 'does not apply to a window pool: its "window" gives the limit and the window');
  }
  if ((doc.leaseMode ?? 'chunk') !== 'chunk')
    where.fail('leaseMode', 'must be "chunk" for a window pool (a rate lease spends tokens it was never granted)');
  if ((doc.allowance ?? 0) !== 0) where.fail('allowance', 'must be 0 for a window pool: an allowance would only be a larger limit');
  const rate = toRate(doc.window, 'limit', 'windowMs');
  return { limit: rate.tokens, windowMs: rate.periodMs };
}

/**
 * readConcurrency — a concurrency pool's limit, or null; refuses the fields
 * and combinations a concurrency pool has no use for, one line each.
 */
function readConcurrency(where: Where, doc: PoolFields): SlotLimit | null {
  if (doc.concurrency == null) return null;
  for (const field of ['capacity', 'refill', 'window'] as const) {
    if (doc[field] != null) where.fail(field, 'does not apply to a concurrency pool: its "concurrency" gives the limit and the hold bound');
  }
  if ((doc.leaseMode ?? 'chunk') !== 'chunk')
    where.fail('leaseMode', 'must be "chunk" for a concurrency pool (a slot is held and given back, not accrued)');
  if ((doc.allowance ?? 0) !== 0) where.fail('allowance', 'must be 0 for a concurrency pool: an allowance would only be a larger limit');
  if (Object.keys(doc.relayClasses ?? {}).length > 0)
    where.fail(
      'relayClasses',
      'are not for a concurrency pool: a relay leases tokens onward, and its agents would hold slots it cannot see',
    );
  return { limit: doc.concurrency.limit, maxHoldMs: doc.concurrency.maxHoldMs };
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

/** scaleProblem — refuses a capacity (with its allowance) the token arithmetic cannot hold at this refill. */
function checkScale(where: Where, capacity: number, allowance: number, refill: Rate): void {
  for (const [field, total, what] of [
    ['capacity', capacity, ''],
    ['allowance', capacity + allowance, 'capacity + allowance is too large: '],
  ] as const) {
    try {
      tokenScale(total, refill);
    } catch (error) {
      if (error instanceof TokenleaseError) where.fail(field, `${what}${error.message}`, error);
      throw error;
    }
  }
}

function readPool(source: string, name: string, doc: PoolFields, fleet: Fleet): PoolConfig {
  const where: Where = new Where(source, name);
  const concurrency = readConcurrency(where, doc);
  const window = concurrency === null ? readWindow(where, doc) : { limit: concurrency.limit, windowMs: concurrency.maxHoldMs };
  const refill = window === null ? toRate(doc.refill ?? where.fail('refill', 'is required')) : makeRate(window.limit, window.windowMs);
  const capacity = window?.limit ?? doc.capacity ?? where.fail('capacity', 'is required');
  const allowance = doc.allowance ?? 0;
  checkScale(where, capacity, allowance, refill);
  const leaseTtlMs = doc.leaseTtlMs ?? DEFAULT_TTL_MS;
  const maxLeaseTokens = where.within('maxLeaseTokens', doc.maxLeaseTokens, 1, capacity, Math.max(1, Math.floor(capacity / 10)));
  const minGrantTokens = where.within('minGrantTokens', doc.minGrantTokens, 1, maxLeaseTokens, Math.ceil(maxLeaseTokens / 4));
  const holdDefaultMs = Math.min(DEFAULT_HOLD_MS_MAX, Math.floor(leaseTtlMs / 4));
  const maxHoldMs = where.within('maxHoldMs', doc.maxHoldMs, 0, Math.floor(leaseTtlMs / 2), holdDefaultMs);
  const leaseMode = doc.leaseMode ?? 'chunk';
  if (leaseMode === 'rate' && (capacity + allowance) * refill.periodMs * 2000 > 2 ** 52) {
    where.fail('leaseMode', `"rate" needs (capacity + allowance) × refill period in µs × 2 ≤ 2^52; use a shorter refill period or "chunk"`);
  }
  const maxLeases = doc.maxLeases ?? DEFAULT_MAX_LEASES;
  const maxWaiting = doc.maxWaiting ?? DEFAULT_MAX_WAITING;
  const maxLeasesPerIdentity = where.within('maxLeasesPerIdentity', doc.maxLeasesPerIdentity, 1, maxLeases, halfOf(maxLeases));
  const maxWaitingPerIdentity = where.within('maxWaitingPerIdentity', doc.maxWaitingPerIdentity, 0, maxWaiting, halfOf(maxWaiting));
  const clockDriftLimit = doc.clockDriftLimit ?? DEFAULT_CLOCK_DRIFT_LIMIT;
  const classWeights = new Map(Object.entries(doc.classWeights ?? {}));
  const relayClasses = new Map(Object.entries(doc.relayClasses ?? {}));
  if (relayClasses.size > 0 && leaseMode === 'rate') where.fail('relayClasses', 'are for chunk pools: a relay leases chunks');
  for (const agentClass of relayClasses.keys()) {
    if (classWeights.has(agentClass))
      where.fail('relayClasses', `class ${JSON.stringify(agentClass)} is also in classWeights: name it once`);
  }
  const ownGrants = identitiesOf(doc.classIdentities);
  for (const agentClass of ownGrants.keys()) {
    if (!classWeights.has(agentClass) && !relayClasses.has(agentClass))
      where.fail('classIdentities', `class ${JSON.stringify(agentClass)} is in neither classWeights nor relayClasses: nothing to grant`);
  }
  const classIdentities = new Map([...fleet.classIdentities, ...ownGrants]);
  const shadow = (doc.shadow ?? false) || fleet.shadow;
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
    clockDriftLimit,
    classIdentities,
    shadow,
    window,
    concurrency,
  };
}

function readTemplate(source: string, key: string, doc: TemplateFields, fleet: Fleet): TemplateConfig {
  const pool = readPool(source, key, doc, fleet);
  const where: Where = new Where(source, key);
  const maxPools = doc.maxPools ?? DEFAULT_MAX_POOLS;
  const idleDefaultMs = Math.max(DEFAULT_IDLE_EVICT_MS, pool.leaseTtlMs);
  return {
    prefix: key.slice(0, -1),
    pool,
    idleEvictMs: where.within('idleEvictMs', doc.idleEvictMs, pool.leaseTtlMs, IDLE_EVICT_MS_MAX, idleDefaultMs),
    maxPools,
    maxPoolsPerIdentity: where.within('maxPoolsPerIdentity', doc.maxPoolsPerIdentity, 1, maxPools, halfOf(maxPools)),
  };
}

/** identitiesOf — `classIdentities` as Maps and Sets: class and identity come off the wire; absent: none. */
function identitiesOf(grants: Readonly<Record<string, readonly string[]>> | null | undefined): Map<string, ReadonlySet<string>> {
  return new Map(Object.entries(grants ?? {}).map(([agentClass, list]) => [agentClass, new Set(list)]));
}

/** parseCoordinatorConfig — validates a parsed document; throws `CoordinatorError('config-invalid')`. */
export function parseCoordinatorConfig(source: string, doc: unknown): CoordinatorConfig {
  checkSchema(source, POOLS_FILE, doc);
  const top = doc as PoolsFile;
  const where: Where = new Where(source);
  const poolsDoc = top.pools ?? {};
  const templatesDoc = top.templates ?? {};
  if (Object.keys(poolsDoc).length + Object.keys(templatesDoc).length === 0) {
    where.fail('pools', 'must name at least one pool (or give "templates")');
  }
  const fleet: Fleet = { shadow: top.shadow ?? false, classIdentities: identitiesOf(top.classIdentities) };
  const pools = Object.entries(poolsDoc).map(([name, poolDoc]) => readPool(source, name, poolDoc, fleet));
  const templates = Object.entries(templatesDoc).map(([key, templateDoc]) => readTemplate(source, key, templateDoc, fleet));
  const longestTtlMs = Math.max(...pools.map((p) => p.leaseTtlMs), ...templates.map((t) => t.pool.leaseTtlMs));
  return {
    subjectPrefix: top.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX,
    bindIdentity: top.bindIdentity ?? false,
    quietPeriodMs: where.within('quietPeriodMs', top.quietPeriodMs, longestTtlMs, MAX_TTL_MS, longestTtlMs),
    pools,
    templates,
    shadow: fleet.shadow,
    operatorIdentities: new Set(top.operatorIdentities ?? []),
  };
}
