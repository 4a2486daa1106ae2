/**
 * Operator messages of protocol v2, an additive change: two ops that agents
 * never send and coordinators answer one each, on the reserved pool token
 * OPERATOR_POOL_TOKEN (`_`):
 *
 * - `pools` on `<prefix>.v2.pools._.<identity>`: the pools a coordinator
 *   holds, in name order, one page at a time. Every coordinator answers for
 *   the pools it holds (in durable mode: those it owns), so a caller
 *   gathers replies for a short window and merges them by name.
 * - `reload` on `<prefix>.v2.reload._.<identity>`: every coordinator
 *   re-reads its configuration file and answers what it applied or why it
 *   refused. A file that does not validate changes nothing.
 *
 * Replies may be larger than MESSAGE_BYTES_MAX (a page of pools), up to
 * OPERATOR_REPLY_BYTES_MAX; requests keep the usual limit. Names in them
 * are pool names (validated like any other) and never a lease secret.
 * Both are operators' alone: a listing names every pool, and a reload
 * costs every agent the balance it holds when a pool's configuration
 * changed. NATS permissions give these subjects to operator users only
 * (deploy/nats/secured.conf), and a coordinator answers them only for the
 * identities its configuration names (`operatorIdentities`), everyone
 * else `forbidden`. A coordinator answers an operator op on any other pool
 * token than `_` with a refusal, and may defer a `pools` page beyond its
 * listing budget (`unavailable`, with the wait).
 */
import { readCallCounts, type CallCounts } from './calls.js';
import { boolField, FieldProblem, intField, oneOf, textField, type Fields } from './fields.js';
import { DURATION_MS_MAX, MESSAGE_TEXT_LENGTH_MAX, SEQ_MAX, WIRE_TOKENS_MAX } from './limits.js';
import { poolNameProblem } from './subjects.js';

/** OPERATOR_POOL_TOKEN — the pool token of operator subjects; no op on it ever names a pool. */
export const OPERATOR_POOL_TOKEN = '_';
/** OPERATOR_REPLY_BYTES_MAX — the largest operator reply read. */
export const OPERATOR_REPLY_BYTES_MAX = 512 * 1024;
/** POOLS_PAGE_MAX — the most pools one `pools` reply lists. */
export const POOLS_PAGE_MAX = 1000;
/** COORDINATOR_NAME_LENGTH_MAX — the longest coordinator name in a reply. */
const COORDINATOR_NAME_LENGTH_MAX = 128;
/** NAMES_LIST_MAX — the most pool names a reload outcome lists per kind of change. */
export const NAMES_LIST_MAX = 100;

/** PoolsQuery — list the pools held, in name order, after `after` (exclusive; absent: from the first), at most `limit`. */
export interface PoolsQuery {
  readonly v: 2;
  readonly op: 'pools';
  readonly pool: typeof OPERATOR_POOL_TOKEN;
  readonly after?: string;
  readonly limit?: number;
}

/** ReloadCommand — re-read the configuration file and apply it if it validates. */
export interface ReloadCommand {
  readonly v: 2;
  readonly op: 'reload';
  readonly pool: typeof OPERATOR_POOL_TOKEN;
}

/** PoolSummary — one pool as a coordinator holds it now; `kind` removed: no longer configured, its leases lapsing. */
export interface PoolSummary {
  readonly pool: string;
  readonly kind: 'configured' | 'template' | 'removed';
  readonly capacityTokens: number;
  readonly allowanceTokens: number;
  readonly refillTokens: number;
  readonly refillPeriodMs: number;
  readonly leaseTtlMs: number;
  readonly leaseMode: 'chunk' | 'rate';
  readonly levelTokens: number;
  readonly leasedTokens: number;
  readonly leases: number;
  readonly waiting: number;
  readonly quietMs: number;
  readonly epoch: number;
  /** Whether the pool's grants put agents in shadow mode (absent from coordinators before shadow mode: false). */
  readonly shadow: boolean;
  /** A window pool's window (at most `capacityTokens` in any window of this many ms); absent for a bucket pool. */
  readonly windowMs?: number;
  /** A window pool's tokens cooling on their way back to the level (a concurrency pool's slots held back); absent for a bucket pool. */
  readonly coolingTokens?: number;
  /** A concurrency pool's hold bound (at most `capacityTokens` requests in flight, each counted at most this many ms); absent otherwise. */
  readonly holdMs?: number;
  /** Calls the pool's agents told this coordinator they decided (calls.ts); absent from older coordinators. */
  readonly calls?: CallCounts;
}

/** PoolList — a page of the pools one coordinator holds; `next` is the last name listed when more follow, else null. */
export interface PoolList {
  readonly v: 2;
  readonly kind: 'pools';
  readonly coordinator: string;
  readonly pools: readonly PoolSummary[];
  readonly next: string | null;
}

/** ReloadOutcome — what one coordinator did with its file: applied it, found nothing changed, or refused it (and why). */
export interface ReloadOutcome {
  readonly v: 2;
  readonly kind: 'reload';
  readonly coordinator: string;
  readonly outcome: 'applied' | 'unchanged' | 'refused';
  readonly message: string;
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
}

function poolName(obj: Fields, field: string): string {
  const problem = poolNameProblem(obj[field]);
  if (problem !== null) throw new FieldProblem(field, problem);
  return obj[field] as string;
}

function operatorPool(obj: Fields): typeof OPERATOR_POOL_TOKEN {
  if (obj['pool'] !== OPERATOR_POOL_TOKEN) throw new FieldProblem('pool', `must be "${OPERATOR_POOL_TOKEN}" for an operator op`);
  return OPERATOR_POOL_TOKEN;
}

/** readOperatorRequest — a `pools` or `reload` request's fields (op already read). */
export function readOperatorRequest(obj: Fields, op: 'pools' | 'reload'): PoolsQuery | ReloadCommand {
  const pool = operatorPool(obj);
  if (op === 'reload') return { v: 2, op, pool };
  return {
    v: 2,
    op,
    pool,
    ...(obj['after'] === undefined ? {} : { after: poolName(obj, 'after') }),
    ...(obj['limit'] === undefined ? {} : { limit: intField(obj, 'limit', 1, POOLS_PAGE_MAX) }),
  };
}

function nameList(obj: Fields, field: string): string[] {
  const value = obj[field];
  if (!Array.isArray(value) || value.length > NAMES_LIST_MAX)
    throw new FieldProblem(field, `must be a list of at most ${NAMES_LIST_MAX} pool names`);
  return value.map((name, i) => poolName({ [`${field}[${i}]`]: name as unknown }, `${field}[${i}]`));
}

function readSummary(value: unknown, index: number): PoolSummary {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FieldProblem(`pools[${index}]`, 'must be an object');
  const s = value as Fields;
  const tokens = (field: string): number => intField(s, field, 0, WIRE_TOKENS_MAX);
  return {
    pool: poolName(s, 'pool'),
    kind: oneOf(s, 'kind', ['configured', 'template', 'removed'] as const),
    capacityTokens: tokens('capacityTokens'),
    allowanceTokens: tokens('allowanceTokens'),
    refillTokens: intField(s, 'refillTokens', 1, WIRE_TOKENS_MAX),
    refillPeriodMs: intField(s, 'refillPeriodMs', 1, DURATION_MS_MAX),
    leaseTtlMs: intField(s, 'leaseTtlMs', 1, DURATION_MS_MAX),
    leaseMode: oneOf(s, 'leaseMode', ['chunk', 'rate'] as const),
    levelTokens: tokens('levelTokens'),
    leasedTokens: tokens('leasedTokens'),
    leases: tokens('leases'),
    waiting: tokens('waiting'),
    quietMs: intField(s, 'quietMs', 0, DURATION_MS_MAX),
    epoch: intField(s, 'epoch', 0, SEQ_MAX),
    shadow: s['shadow'] === undefined ? false : boolField(s, 'shadow'),
    ...(s['windowMs'] === undefined
      ? {}
      : { windowMs: intField(s, 'windowMs', 1, DURATION_MS_MAX), coolingTokens: tokens('coolingTokens') }),
    ...(s['holdMs'] === undefined ? {} : { holdMs: intField(s, 'holdMs', 1, DURATION_MS_MAX), coolingTokens: tokens('coolingTokens') }),
    ...(s['calls'] === undefined ? {} : { calls: readCallCounts(s, 'calls') }),
  };
}

/** readOperatorReply — a `pools` or `reload` reply's fields (kind already read). */
export function readOperatorReply(obj: Fields, kind: 'pools' | 'reload'): PoolList | ReloadOutcome {
  const coordinator = textField(obj, 'coordinator', COORDINATOR_NAME_LENGTH_MAX);
  if (kind === 'reload') {
    return {
      v: 2,
      kind,
      coordinator,
      outcome: oneOf(obj, 'outcome', ['applied', 'unchanged', 'refused'] as const),
      message: textField(obj, 'message', MESSAGE_TEXT_LENGTH_MAX),
      added: nameList(obj, 'added'),
      removed: nameList(obj, 'removed'),
      changed: nameList(obj, 'changed'),
    };
  }
  const pools = obj['pools'];
  if (!Array.isArray(pools) || pools.length > POOLS_PAGE_MAX)
    throw new FieldProblem('pools', `must be a list of at most ${POOLS_PAGE_MAX}`);
  const next = obj['next'] === null ? null : poolName(obj, 'next');
  return { v: 2, kind, coordinator, pools: pools.map((p, i) => readSummary(p, i)), next };
}
