/**
 * PoolParts: the state of one pool, shared by the files that keep its
 * rules (pool.ts, chunk-grant.ts, rate-grant.ts, pool-takeover.ts), and
 * what those files say alike: the grant reply and the retry hint.
 */
import { DURATION_MS_MAX, tokenScale, type LeaseGrant, type LeaseRequest, type Reply, type TokenScale } from '@tokenlease/shared';
import { AgentClocks } from './clock-check.js';
import type { PoolConfig } from './config.js';
import { Credit } from './credit.js';
import { grantTermsOf, rememberGrant } from './grant-memo.js';
import { HoldQueue } from './hold-queue.js';
import { leaseIdPrefix } from './lease-id.js';
import { LeaseTable, type LeaseRecord } from './lease-table.js';
import type { ChangeLog } from './pool-state.js';
import { PoolTally } from './pool-tally.js';
import { WindowCredit } from './window-credit.js';
import { WaterLevel } from './water-level.js';

export interface PoolParts<R> {
  readonly config: PoolConfig;
  /** The ownership epoch (memory mode: the incarnation) named in replies and lease ids. */
  readonly epoch: number;
  readonly scale: TokenScale;
  readonly leases: LeaseTable;
  readonly credit: Credit;
  readonly waiters: HoldQueue<R>;
  /**
   * Until when the pool counts as contended, µs: one TTL past the last
   * instant a request waited (held, or turned away because others were
   * waiting) or, for rate leases, got a smaller cap than its rate calls
   * for. Shares are enforced over that window, not only at the instant
   * someone waits, so renewals that land between another agent's holds
   * cannot keep more than their share (chunk-grant.ts, rate-grant.ts).
   */
  contendedUntilUs: number;
  /** Until when the pool grants nothing and refills nothing (after a start), µs. */
  readonly quietUntilUs: number;
  readonly ttlUs: number;
  /** The refill period in µs, the unit of rate leases' ρ. */
  readonly periodUs: number;
  /** Rate mode: the water level of the fair shares, recomputed lazily. */
  readonly waterLevel: WaterLevel;
  /** Agents whose lease changed since the last write; null when nothing is written anywhere. */
  changed: ChangeLog | null;
  /** What only the pool knows happened, for the adapter's metrics. */
  readonly tally: PoolTally;
  /** The clocks of the agents that asked (clock-check.ts). */
  readonly agentClocks: AgentClocks;
}

/** US_PER_MS — microseconds in a millisecond. */
export const US_PER_MS = 1000;

/** CreditFactory — makes the credit of a pool instead of `makeCredit` (a relay's pools), or returns undefined to leave it to `makeCredit`. */
export type CreditFactory = (config: PoolConfig, scale: TokenScale) => Credit | undefined;

/**
 * makePoolParts — the state of an empty pool of `config` that starts at
 * `startUs`, quiet for `quietPeriodMs`, with the credit `creditOf` makes
 * (if any) instead of a bucket's or window's.
 */
export function makePoolParts<R>(
  config: PoolConfig,
  epoch: number,
  startUs: number,
  quietPeriodMs: number,
  restarts: number,
  creditOf?: CreditFactory,
): PoolParts<R> {
  const scale = tokenScale(config.capacity, config.refill);
  const quietUntilUs = startUs + quietPeriodMs * US_PER_MS;
  return {
    config,
    epoch,
    scale,
    leases: new LeaseTable(leaseIdPrefix(epoch, restarts)),
    credit: creditOf?.(config, scale) ?? makeCredit(config, scale, quietUntilUs),
    waiters: new HoldQueue<R>(),
    contendedUntilUs: 0,
    quietUntilUs,
    ttlUs: config.leaseTtlMs * US_PER_MS,
    periodUs: config.refill.periodMs * US_PER_MS,
    waterLevel: new WaterLevel(),
    changed: null,
    tally: new PoolTally(),
    agentClocks: new AgentClocks(),
  };
}

/** makeCredit — the empty credit of a pool of `config`, which refills (or, a window pool, releases) from `quietUntilUs`. */
export function makeCredit(config: PoolConfig, scale: TokenScale, quietUntilUs: number): Credit {
  if (config.window === null) return new Credit(scale, config.name, config.allowance, quietUntilUs);
  return new WindowCredit(scale, config.name, config.window.limit, config.window.windowMs * US_PER_MS, quietUntilUs);
}

/**
 * grantTtlMs — the TTL of a grant answering a request received at
 * `receivedUs`: the pool's, cut so that its agent, counting from its first
 * send (at or before receipt), stops by the credit's `leaseEndUs` (a relay's
 * upstream lease). An acquire is refused when less than 1 ms of that is
 * left at receipt (`admissionRefusal`), so the cut never goes below 1 ms.
 */
export function grantTtlMs<R>(p: PoolParts<R>, receivedUs: number): number {
  const endUs = p.credit.leaseEndUs;
  if (endUs === Infinity) return p.config.leaseTtlMs;
  return Math.max(1, Math.min(p.config.leaseTtlMs, Math.floor((endUs - receivedUs) / US_PER_MS)));
}

/** leaseExpiryUs — the coordinator's expiry of a lease granted at `nowUs` to a request received at `receivedUs` (never before its agent stops). */
export function leaseExpiryUs<R>(p: PoolParts<R>, nowUs: number, receivedUs = nowUs): number {
  if (p.credit.leaseEndUs === Infinity) return nowUs + p.ttlUs;
  return receivedUs + grantTtlMs(p, receivedUs) * US_PER_MS;
}

/** grantReply — the grant that tells an agent its lease after this request (remembered for its retries: grant-memo.ts). */
export function grantReply<R>(
  p: PoolParts<R>,
  record: LeaseRecord,
  tokensGranted: number,
  retryAfterMs: number,
  ttlMs = p.config.leaseTtlMs,
  slotsMax = -1,
): LeaseGrant {
  return rememberGrant(record, grantTermsOf(p.config, p.epoch), tokensGranted, record.boundTokens, ttlMs, retryAfterMs, slotsMax, -1, 0);
}

/** rateGrantReply — a rate lease's grant: `tokensHeld` after a top-up of `tokensGranted`, a rate of `ratePerPeriod` up to `capTokens`. */
export function rateGrantReply<R>(
  p: PoolParts<R>,
  record: LeaseRecord,
  tokensGranted: number,
  retryAfterMs: number,
  ttlMs: number,
  tokensHeld: number,
  ratePerPeriod: number,
  capTokens: number,
): LeaseGrant {
  const terms = grantTermsOf(p.config, p.epoch);
  return rememberGrant(record, terms, tokensGranted, tokensHeld, ttlMs, retryAfterMs, -1, ratePerPeriod, capTokens);
}

/** contended — whether a request waits now, or one waited (or was cut short) within the last TTL. */
export function contended<R>(p: PoolParts<R>, nowUs: number): boolean {
  return p.waiters.size > 0 || nowUs < p.contendedUntilUs;
}

/** markContended — a request waits (or waited, or was cut short) at `nowUs`: the pool counts as contended for one TTL more. */
export function markContended<R>(p: PoolParts<R>, nowUs: number): void {
  p.contendedUntilUs = Math.max(p.contendedUntilUs, nowUs + p.ttlUs);
}

/** shareTokens — `record`'s weighted share of B among the live leases, `B × w / Σw`. */
export function shareTokens<R>(p: PoolParts<R>, record: LeaseRecord): number {
  return Math.floor((p.config.capacity * record.weight) / Math.max(1, p.leases.weightsSum));
}

/**
 * timeLeftMs — renews `record` without extending it: counted at least 1 ms
 * more (until the reply is out), granted no more; the time its agent was
 * granted that is left, ms (at least 1).
 */
export function timeLeftMs<R>(p: PoolParts<R>, record: LeaseRecord, nowUs: number): number {
  p.leases.extend(record, nowUs + US_PER_MS);
  return Math.max(1, Math.floor((record.grantedUntilUs - nowUs) / US_PER_MS));
}

/** retryAfterMs — how long until a turn of the `missingTokens` accrues (and the quiet period is over), at least 1 ms. */
export function retryAfterMs<R>(p: PoolParts<R>, missingTokens: number, nowUs: number): number {
  const thresholdTokens = Math.min(missingTokens, p.config.minGrantTokens);
  return Math.min(DURATION_MS_MAX, Math.max(1, Math.ceil(p.credit.waitUs(thresholdTokens, nowUs) / US_PER_MS)));
}

/**
 * weightOf — the weight of a request in the pool's turns and shares: its
 * class's weight (no class, or an unlisted one: 1), or for a relay class
 * the fleet weight it states (absent: 1), at most the class's limit. The
 * pool passes the request as `grantedClaim` left it, so a class claimed
 * beyond its grant has already been dropped.
 */
export function weightOf<R>(p: PoolParts<R>, req: Pick<LeaseRequest, 'agentClass' | 'fleetWeight'>): number {
  if (req.agentClass === undefined) return 1;
  const fleetMax = p.config.relayClasses.get(req.agentClass);
  if (fleetMax !== undefined) return Math.min(fleetMax, req.fleetWeight ?? 1);
  return p.config.classWeights.get(req.agentClass) ?? 1;
}

/**
 * grantedClaim — `req` as the pool weighs it from `identity`: a class that
 * `classIdentities` grants to other identities only is dropped (and with
 * it any fleet weight), so the request weighs 1, the default; `req` itself
 * when its claim stands (no class, an open class, or one granted to it).
 */
export function grantedClaim(config: PoolConfig, req: LeaseRequest, identity: string): LeaseRequest {
  if (req.agentClass === undefined) return req;
  const granted = config.classIdentities.get(req.agentClass);
  if (granted === undefined || granted.has(identity)) return req;
  const { agentClass: _claimed, fleetWeight: _stated, ...unclaimed } = req;
  return unclaimed;
}

/**
 * admissionRefusal — why `req` cannot be taken on without passing the
 * pool's caps (a new lease beyond `maxLeases`, a hold beyond `maxWaiting`)
 * or those of the identity it counts under (`maxLeasesPerIdentity`,
 * `maxWaitingPerIdentity`; null: a stored lease of no known identity, held
 * to the pool's caps only), or null. Checked before anything changes, in
 * O(1): the table and the queue keep their counts per identity.
 */
export function admissionRefusal<R>(
  p: PoolParts<R>,
  req: LeaseRequest,
  isNewLease: boolean,
  nowUs: number,
  identity: string | null,
): Reply | null {
  const { config, leases, waiters } = p;
  if (p.credit.leaseEndUs - nowUs < US_PER_MS) {
    const message = `pool ${JSON.stringify(config.name)} has no lease of its own from upstream now; ask again`;
    return unavailable(req.seq, message, Math.ceil(p.credit.waitUs(Infinity, nowUs) / US_PER_MS));
  }
  const wouldWait = config.leaseMode === 'chunk' && req.holdMs > 0 && req.tokensWanted > 0 && waiters.size > 0;
  const quotaRefusal = identity === null ? null : identityRefusal(p, req, isNewLease, wouldWait, identity);
  if (quotaRefusal !== null) return quotaRefusal;
  if (isNewLease && leases.size >= config.maxLeases) {
    const waitMs = Math.ceil(Math.max(0, leases.earliestExpiryUs() - nowUs) / US_PER_MS);
    return unavailable(req.seq, `pool ${JSON.stringify(config.name)} holds its most leases (${config.maxLeases}); ask again`, waitMs);
  }
  if (wouldWait && waiters.size >= config.maxWaiting && waiters.get(req.agentId) === undefined) {
    return unavailable(
      req.seq,
      `pool ${JSON.stringify(config.name)} holds its most waiting requests (${config.maxWaiting}); ask again`,
      config.maxHoldMs,
    );
  }
  return null;
}

/**
 * identityRefusal — why `req` of `identity` would pass that identity's
 * share of the pool (a new lease beyond `maxLeasesPerIdentity`, a hold
 * beyond `maxWaitingPerIdentity`), or null. The refusal is the peer's:
 * `unavailable`, `fault: 'peer'`, to ask again once a lease of its own may
 * have lapsed (one TTL) or a hold ended (`maxHoldMs`).
 */
function identityRefusal<R>(p: PoolParts<R>, req: LeaseRequest, isNewLease: boolean, wouldWait: boolean, identity: string): Reply | null {
  const { config, leases, waiters } = p;
  if (isNewLease && leases.leasesOf(identity) >= config.maxLeasesPerIdentity) {
    const message = `${identityInPool(identity, config.name)} holds its most leases (maxLeasesPerIdentity ${config.maxLeasesPerIdentity}); ask again`;
    return unavailable(req.seq, message, config.leaseTtlMs, 'peer');
  }
  if (wouldWait && waiters.waitingOf(identity) >= config.maxWaitingPerIdentity && waiters.get(req.agentId) === undefined) {
    const message = `${identityInPool(identity, config.name)} has its most requests waiting (maxWaitingPerIdentity ${config.maxWaitingPerIdentity}); ask again`;
    return unavailable(req.seq, message, config.maxHoldMs, 'peer');
  }
  return null;
}

/** identityInPool — how a refusal names the identity and pool; built only for a refusal, never on a request that passes. */
function identityInPool(identity: string, pool: string): string {
  return `identity ${JSON.stringify(identity)} in pool ${JSON.stringify(pool)}`;
}

function unavailable(seq: number, message: string, retryAfterMs: number, fault: 'peer' | 'coordinator' = 'coordinator'): Reply {
  return {
    v: 2,
    kind: 'error',
    seq,
    code: 'unavailable',
    fault,
    message,
    retryAfterMs: Math.min(DURATION_MS_MAX, Math.max(1, retryAfterMs)),
  };
}

/**
 * forbidden — the refusal of a request for `record`'s agent that does not
 * present the secret its lease is bound to. Nothing changes: the lease stays
 * counted until it expires, and then the agent id is free again.
 */
export function forbidden(record: LeaseRecord, seq: number, nowUs: number): Reply {
  const leftMs = Math.max(1, Math.ceil((record.expiresAtUs - nowUs) / US_PER_MS));
  const message = `agent ${JSON.stringify(record.agentId)} holds a lease here under another secret; nothing changed, and it lapses within ${leftMs} ms`;
  return { v: 2, kind: 'error', seq, code: 'forbidden', fault: 'peer', message, retryAfterMs: Math.min(DURATION_MS_MAX, leftMs) };
}
