/**
 * A lease's last grant, kept for its agent's retries without keeping an
 * object per renewal.
 *
 * A retry of an agent's last request gets the original reply, so a lease
 * record must remember it. It used to keep the reply object itself: with
 * many leases, each of those objects outlived the young generation (an
 * agent renews once or twice per TTL) and was promoted, copied and
 * collected again, on every renewal; at 100k rate leases the collector
 * took over a quarter of the request path. The record now keeps the
 * reply's numbers in fields of its own, and what every grant of the pool
 * says alike in GrantTerms, one object per pool configuration (a lease
 * granted under an earlier configuration keeps the terms it was granted
 * under). `lastGrantOf` builds the reply again, equal in every field.
 */
import type { LeaseGrant } from '@tokenlease/shared';
import type { PoolConfig } from './config.js';
import type { LeaseRecord } from './lease-table.js';

/** GrantTerms — what every grant of one pool (one configuration, one epoch) says alike. */
export interface GrantTerms {
  readonly epoch: number;
  readonly maxLeaseTokens: number;
  readonly capacityTokens: number;
  readonly refillTokens: number;
  readonly refillPeriodMs: number;
  /** The period a rate grant's rate is counted in (the refill's). */
  readonly ratePeriodMs: number;
  /** The fields only some pools' grants carry: allowanceTokens, holdMs or window, shadow. */
  readonly marks: Pick<LeaseGrant, 'allowanceTokens' | 'holdMs' | 'window' | 'shadow'>;
}

const termsByConfig = new WeakMap<PoolConfig, GrantTerms>();

/** grantTermsOf — the terms of a pool of `config` owned in `epoch` (one object for as long as both stay). */
export function grantTermsOf(config: PoolConfig, epoch: number): GrantTerms {
  const known = termsByConfig.get(config);
  if (known !== undefined && known.epoch === epoch) return known;
  const terms: GrantTerms = {
    epoch,
    maxLeaseTokens: config.maxLeaseTokens,
    capacityTokens: config.capacity,
    refillTokens: config.refill.tokens,
    refillPeriodMs: config.refill.periodMs,
    ratePeriodMs: config.refill.periodMs,
    marks: {
      ...(config.allowance > 0 ? { allowanceTokens: config.allowance } : {}),
      ...(config.concurrency !== null ? { holdMs: config.concurrency.maxHoldMs } : config.window !== null ? { window: true } : {}),
      ...(config.shadow ? { shadow: true } : {}),
    },
  };
  termsByConfig.set(config, terms);
  return terms;
}

/** GrantMemo — the fields a lease record keeps of its last grant. */
export interface GrantMemo {
  /** The terms of its last grant; null while its last request is held (no reply yet). */
  grantTerms: GrantTerms | null;
  grantTokens: number;
  grantHeldTokens: number;
  grantTtlMs: number;
  grantRetryMs: number;
  /** A concurrency grant's `slotsMax`, or -1 for none. */
  grantSlotsMax: number;
  /** A rate grant's rate per period, or -1 for a grant without a rate. */
  grantRatePerPeriod: number;
  grantCapTokens: number;
}

/** forgetGrant — `record`'s last request is held: there is no reply to repeat yet. */
export function forgetGrant(record: GrantMemo): void {
  record.grantTerms = null;
}

/**
 * rememberGrant — notes the grant `record` is told now and returns it:
 * `tokensGranted` added, `tokensHeld` after, for `ttlMs`, to ask again in
 * `retryAfterMs`; `slotsMax` (-1: none) and a rate of `ratePerPeriod` up to
 * `capTokens` (-1: no rate) when the grant carries them.
 */
export function rememberGrant(
  record: LeaseRecord,
  terms: GrantTerms,
  tokensGranted: number,
  tokensHeld: number,
  ttlMs: number,
  retryAfterMs: number,
  slotsMax: number,
  ratePerPeriod: number,
  capTokens: number,
): LeaseGrant {
  record.grantTerms = terms;
  record.grantTokens = tokensGranted;
  record.grantHeldTokens = tokensHeld;
  record.grantTtlMs = ttlMs;
  record.grantRetryMs = retryAfterMs;
  record.grantSlotsMax = slotsMax;
  record.grantRatePerPeriod = ratePerPeriod;
  record.grantCapTokens = capTokens;
  return lastGrantOf(record) as LeaseGrant;
}

/** rememberKept — `record`'s last reply as a previous owner kept it in the store (checked by pool-takeover.ts). */
export function rememberKept(record: LeaseRecord, grant: LeaseGrant): void {
  const terms: GrantTerms = {
    epoch: grant.epoch,
    maxLeaseTokens: grant.maxLeaseTokens,
    capacityTokens: grant.capacityTokens,
    refillTokens: grant.refillTokens,
    refillPeriodMs: grant.refillPeriodMs,
    ratePeriodMs: grant.rate?.periodMs ?? grant.refillPeriodMs,
    marks: {
      ...(grant.allowanceTokens === undefined ? {} : { allowanceTokens: grant.allowanceTokens }),
      ...(grant.holdMs === undefined ? {} : { holdMs: grant.holdMs }),
      ...(grant.window === undefined ? {} : { window: grant.window }),
      ...(grant.shadow === undefined ? {} : { shadow: grant.shadow }),
    },
  };
  const rate = grant.rate;
  rememberGrant(
    record,
    terms,
    grant.tokensGranted,
    grant.tokensHeld,
    grant.ttlMs,
    grant.retryAfterMs,
    grant.slotsMax ?? -1,
    rate?.tokensPerPeriod ?? -1,
    rate?.capTokens ?? 0,
  );
}

/** lastGrantOf — the reply to `record`'s last request (its seq, its lease), or null while that request is held. */
export function lastGrantOf(record: LeaseRecord): LeaseGrant | null {
  const terms = record.grantTerms;
  if (terms === null) return null;
  return {
    v: 2,
    kind: 'grant',
    seq: record.lastSeq,
    leaseId: record.leaseId,
    tokensGranted: record.grantTokens,
    tokensHeld: record.grantHeldTokens,
    ttlMs: record.grantTtlMs,
    epoch: terms.epoch,
    maxLeaseTokens: terms.maxLeaseTokens,
    capacityTokens: terms.capacityTokens,
    refillTokens: terms.refillTokens,
    refillPeriodMs: terms.refillPeriodMs,
    retryAfterMs: record.grantRetryMs,
    ...terms.marks,
    ...(record.grantSlotsMax < 0 ? {} : { slotsMax: record.grantSlotsMax }),
    ...(record.grantRatePerPeriod < 0
      ? {}
      : { rate: { tokensPerPeriod: record.grantRatePerPeriod, periodMs: terms.ratePeriodMs, capTokens: record.grantCapTokens } }),
  };
}
