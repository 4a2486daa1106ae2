/**
 * Reconfiguration: a pool takes a new configuration (capacity, allowance,
 * refill, TTL, lease size, hold, weights, mode, caps) while it serves,
 * without a restart and without a quiet period.
 *
 * The promise across a change at instant t₀, from configuration 1
 * (B₁, A₁, r₁, TTL₁) to configuration 2 (B₂, A₂, r₂): over a window of
 * length T the fleet admits at most
 * - B₁ + A₁ + r₁·T if the window ends by t₀ (nothing changed for it);
 * - B₂ + A₂ + r₂·T if it starts at or after t₀ + TTL₁;
 * - max(B₁ + A₁, B₂ + A₂) + max(r₁, r₂)·T if it spans the change.
 *
 * Why it holds (credit = level + Σ bounds, as in credit.ts):
 * - Refill up to t₀ runs at r₁ (the pool is ticked first), after it at r₂.
 * - Held requests are answered at t₀ under configuration 1.
 * - The level is kept, clipped so that credit fits B₂ + A₂ beside the
 *   live leases (credit ≤ max(B₁ + A₁, B₂ + A₂) at t₀, and while it is
 *   above B₂ + A₂ nothing refills and a return drops the excess).
 * - Every live lease becomes of an older generation. It keeps its bound
 *   and its expiry (never extended), and is never renewed under its id:
 *   the next acquire of its agent retires it (what the agent may still
 *   spend of it stays counted until its old expiry, at most t₀ + TTL₁)
 *   and opens a new lease under configuration 2. So by t₀ + TTL₁ every
 *   token of configuration 1 is gone, and whatever configuration 2 leased
 *   came out of a level it kept within B₂ + A₂.
 * - A rate lease keeps accruing at its rate (the agent does not know yet),
 *   converted to the new refill period rounding up, so the level refills
 *   only at what it leaves of r₂ (never below zero).
 *
 * The price: at its next acquire after a change, an agent drops what it
 * still held of its old lease (the new lease starts from the grant), and
 * the coordinator counts that balance until the old lease would have
 * expired. Under-admission, at most one lease per agent, once per change.
 * Agents refuse a grant that changes the capacity of a lease mid-lease
 * (shared/src/core/lease-client-grant.ts); a new lease id is what makes a new
 * capacity acceptable to them.
 */
import { tokenScale } from '@tokenlease/shared';
import type { CoordinatorConfig, PoolConfig } from './config.js';
import { HoldQueue } from './hold-queue.js';
import { makeCredit, US_PER_MS, type PoolParts } from './pool-parts.js';
import { heldAt } from './rate-lease.js';
import { WaterLevel } from './water-level.js';
import { WindowCredit } from './window-credit.js';

/**
 * reconfigureParts — the state of pool `old` (ticked to `nowUs`, no
 * request held) under `config` from `nowUs` on. The lease table is kept
 * (so lease ids stay unique) with its generation bumped.
 */
export function reconfigureParts<R>(old: PoolParts<R>, config: PoolConfig, nowUs: number): PoolParts<R> {
  const scale = tokenScale(config.capacity, config.refill);
  const periodUs = config.refill.periodMs * US_PER_MS;
  const leases = old.leases;
  leases.generation += 1;
  for (const record of leases.all()) {
    if (record.ratePerPeriod === 0) continue;
    record.heldTokens = heldAt(record, nowUs, old.periodUs);
    record.accrualFromUs = nowUs;
    leases.setRate(record, convertRate(record.ratePerPeriod, old.periodUs, periodUs));
  }
  // Still quiet after a start: stays quiet until the same instant, and refills from then.
  const credit = makeCredit(config, scale, Math.max(nowUs, old.quietUntilUs));
  if (credit instanceof WindowCredit) credit.carryOver(old.credit, leases.boundTokensSum);
  else credit.restore(Math.min(old.credit.levelTokens, config.capacity), leases.boundTokensSum);
  credit.settle(Math.max(nowUs, old.quietUntilUs), leases.boundTokensSum);
  return {
    config,
    epoch: old.epoch,
    scale,
    leases,
    credit,
    waiters: new HoldQueue<R>(),
    contendedUntilUs: old.contendedUntilUs,
    quietUntilUs: old.quietUntilUs,
    ttlUs: config.leaseTtlMs * US_PER_MS,
    periodUs,
    waterLevel: new WaterLevel(),
    changed: old.changed,
    tally: old.tally,
    agentClocks: old.agentClocks,
  };
}

/** convertRate — ρ tokens per `fromPeriodUs` as tokens per `toPeriodUs`, rounded up (never less than it accrues). */
export function convertRate(ratePerPeriod: number, fromPeriodUs: number, toPeriodUs: number): number {
  const product = BigInt(ratePerPeriod) * BigInt(toPeriodUs);
  const divisor = BigInt(fromPeriodUs);
  const ceil = (product + divisor - 1n) / divisor;
  return ceil > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(ceil);
}

/** samePoolConfig — whether two configurations of a pool are the same in every field (weights and grants compared entry by entry). */
export function samePoolConfig(a: PoolConfig, b: PoolConfig): boolean {
  return a.shadow === b.shadow && sameIdentityRules(a, b) && sameLimits(a, b);
}

/**
 * sameIdentityRules — whether two configurations of a pool admit each
 * identity alike: its caps per identity, which identities may claim
 * which class, and how far their clocks may drift. These decide only admissions and weights from now on, so
 * a change of them alone needs no new leases either (as `shadow`).
 */
function sameIdentityRules(a: PoolConfig, b: PoolConfig): boolean {
  if (a.maxLeasesPerIdentity !== b.maxLeasesPerIdentity || a.maxWaitingPerIdentity !== b.maxWaitingPerIdentity) return false;
  if (a.clockDriftLimit !== b.clockDriftLimit) return false;
  if (a.classIdentities.size !== b.classIdentities.size) return false;
  for (const [cls, identities] of a.classIdentities) {
    const other = b.classIdentities.get(cls);
    if (other === undefined || other.size !== identities.size || [...identities].some((i) => !other.has(i))) return false;
  }
  return true;
}

/**
 * sameLimits — whether two configurations of a pool lease the same way:
 * every field but `shadow`, which only tells agents what to do with a
 * denial, and the identity rules (sameIdentityRules), which only decide
 * admissions from now on: switching those needs no new leases.
 */
export function sameLimits(a: PoolConfig, b: PoolConfig): boolean {
  const scalars: readonly (keyof PoolConfig)[] = [
    'name',
    'capacity',
    'leaseTtlMs',
    'maxLeaseTokens',
    'minGrantTokens',
    'maxHoldMs',
    'allowance',
    'leaseMode',
    'maxLeases',
    'maxWaiting',
  ];
  if (scalars.some((key) => a[key] !== b[key])) return false;
  if (a.refill.tokens !== b.refill.tokens || a.refill.periodMs !== b.refill.periodMs) return false;
  if ((a.window === null) !== (b.window === null)) return false;
  if (a.concurrency?.maxHoldMs !== b.concurrency?.maxHoldMs) return false;
  if (a.classWeights.size !== b.classWeights.size) return false;
  for (const [cls, weight] of a.classWeights) if (b.classWeights.get(cls) !== weight) return false;
  if (a.relayClasses.size !== b.relayClasses.size) return false;
  for (const [cls, weight] of a.relayClasses) if (b.relayClasses.get(cls) !== weight) return false;
  return true;
}

/** ConfigDiff — how one configuration differs from another: configured pools added, removed and changed, and anything else. */
export interface ConfigDiff {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  /** Templates, bindIdentity, operatorIdentities, the quiet period or the fleet-wide shadow switch differ. */
  readonly otherChanged: boolean;
}

/** configDiff — what `next` changes of `previous` (whichever pools a coordinator holds). */
export function configDiff(previous: CoordinatorConfig, next: CoordinatorConfig): ConfigDiff {
  const before = new Map(previous.pools.map((p) => [p.name, p]));
  const after = new Map(next.pools.map((p) => [p.name, p]));
  const templateKey = (t: CoordinatorConfig['templates'][number]): string =>
    `${t.prefix}|${t.idleEvictMs}|${t.maxPools}|${t.maxPoolsPerIdentity}`;
  const templates = (c: CoordinatorConfig): Map<string, CoordinatorConfig['templates'][number]> =>
    new Map(c.templates.map((t) => [templateKey(t), t]));
  const a = templates(previous);
  const b = templates(next);
  const templatesDiffer =
    a.size !== b.size ||
    [...a].some(([key, t]) => {
      const other = b.get(key);
      return other === undefined || !samePoolConfig(t.pool, other.pool);
    });
  return {
    added: [...after.keys()].filter((name) => !before.has(name)),
    removed: [...before.keys()].filter((name) => !after.has(name)),
    changed: [...after].filter(([name, p]) => before.has(name) && !samePoolConfig(before.get(name) as PoolConfig, p)).map(([name]) => name),
    otherChanged:
      templatesDiffer ||
      previous.bindIdentity !== next.bindIdentity ||
      !sameIdentities(previous.operatorIdentities, next.operatorIdentities) ||
      previous.quietPeriodMs !== next.quietPeriodMs ||
      previous.shadow !== next.shadow,
  };
}

function sameIdentities(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((identity) => b.has(identity));
}

/**
 * concurrencyChangeProblem — why a running pool of `old` cannot become one
 * of `next`, or null: a pool does not change between a concurrency pool and
 * another kind (its leases hold slots or tokens, and its agents use them
 * so), and a concurrency pool's hold bound does not shrink (a request
 * started under the old one may hold its slot that long, and the new one
 * would hand the slot out again sooner).
 */
export function concurrencyChangeProblem(old: PoolConfig, next: PoolConfig): string | null {
  if ((old.concurrency === null) !== (next.concurrency === null)) {
    return `pool ${JSON.stringify(next.name)}: cannot change to or from a concurrency pool while it serves; give it a new name`;
  }
  if (old.concurrency !== null && next.concurrency !== null && next.concurrency.maxHoldMs < old.concurrency.maxHoldMs) {
    return `pool ${JSON.stringify(next.name)}: concurrency.maxHoldMs cannot shrink while it serves (from ${old.concurrency.maxHoldMs} to ${next.concurrency.maxHoldMs} ms): requests in flight may hold their slots that long`;
  }
  return null;
}
