/**
 * Pool state as a durable store keeps it: what a new owner needs to take a
 * pool over without minting credit or forgetting a lease.
 *
 * Rules:
 * - Only durations and token counts are kept, never a monotonic instant: a
 *   new owner treats every kept lease as live for a full TTL from its
 *   takeover and starts its refill clock then, so the gap mints nothing.
 * - The level is kept in whole tokens, rounded down: a fraction lost on a
 *   takeover is under-admission, never over-admission.
 * - A kept lease carries its agent's last sequence number and the reply to
 *   it, so a retry that reaches the new owner gets the original answer,
 *   and the identity token it was opened under, so a new owner counts it
 *   against that identity's caps. A lease kept without one (written before
 *   leases knew their identity) still loads, and counts against none.
 * - Whatever comes back from the store is validated like a peer's message:
 *   a malformed record is a typed error, never a silently wrong pool.
 */
import { decodeReply, encodeMessage, poolNameProblem, type LeaseGrant } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import { lastGrantOf } from './grant-memo.js';
import type { LeaseTable } from './lease-table.js';

/** PersistedLease — one lease as kept in the store. `lastReply` null: its request was still held. */
export interface PersistedLease {
  readonly agentId: string;
  /** The secret the lease is bound to (kept, so a new owner can tell its holder; never logged). */
  readonly secret: string;
  readonly leaseId: string;
  readonly boundTokens: number;
  readonly lastSeq: number;
  readonly lastReply: LeaseGrant | null;
  /** ρ of a rate lease in tokens per refill period; absent or 0 for a chunk lease. */
  readonly ratePerPeriod?: number;
  /** The identity token the lease was opened under; absent when not known. */
  readonly identity?: string;
}

/** PersistedPool — a pool as kept in the store. */
export interface PersistedPool {
  readonly levelTokens: number;
  readonly leases: readonly PersistedLease[];
}

/**
 * DamagedPool — stored state that cannot be trusted (malformed, or beyond
 * the pool's limits): why, and the agents whose records are to be deleted.
 */
export interface DamagedPool {
  readonly damaged: string;
  readonly agentIds: readonly string[];
}

/** StoredPool — what a store holds for a pool: its state, damaged state, or nothing. */
export type StoredPool = PersistedPool | DamagedPool | null;

/** isDamaged — whether `state` is damaged state. */
export function isDamaged(state: StoredPool): state is DamagedPool {
  return state !== null && 'damaged' in state;
}

/** PoolChanges — what changed in a pool since its last write: the level, leases opened or changed, leases ended. */
export interface PoolChanges {
  readonly levelTokens: number;
  readonly upserts: readonly PersistedLease[];
  readonly removes: readonly string[];
}

const textDecoder = new TextDecoder();

/** encodePersistedLease — the JSON text a store keeps for one lease. */
export function encodePersistedLease(lease: PersistedLease): string {
  return JSON.stringify({
    secret: lease.secret,
    leaseId: lease.leaseId,
    boundTokens: lease.boundTokens,
    lastSeq: lease.lastSeq,
    ...(lease.ratePerPeriod ? { ratePerPeriod: lease.ratePerPeriod } : {}),
    ...(lease.identity === undefined ? {} : { identity: lease.identity }),
    lastReply: lease.lastReply === null ? null : textDecoder.decode(encodeMessage(lease.lastReply)),
  });
}

/** decodePersistedLease — the lease kept under `agentId` as `text`; throws CoordinatorError('state-invalid') when malformed. */
export function decodePersistedLease(pool: string, agentId: string, text: string): PersistedLease {
  const bad = (why: string): never => {
    throw new CoordinatorError('state-invalid', `pool ${JSON.stringify(pool)}: stored lease of agent ${JSON.stringify(agentId)} ${why}`, {
      pool,
    });
  };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return bad('is not JSON');
  }
  if (typeof raw !== 'object' || raw === null) return bad('is not an object');
  const r = raw as Record<string, unknown>;
  if (typeof r['leaseId'] !== 'string' || r['leaseId'].length === 0 || r['leaseId'].length > 128) bad('has no valid leaseId');
  const secret = r['secret'];
  if (typeof secret !== 'string' || !/^[A-Za-z0-9_-]{22,128}$/.test(secret)) bad('has no valid secret');
  const count = (field: string): number => {
    const v = r[field];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(`has an invalid ${field}`);
    return v as number;
  };
  let lastReply: LeaseGrant | null = null;
  if (r['lastReply'] !== null) {
    if (typeof r['lastReply'] !== 'string') bad('has an invalid lastReply');
    const decoded = decodeReply(new TextEncoder().encode(r['lastReply'] as string));
    if (!decoded.ok || decoded.value.kind !== 'grant') return bad('has a lastReply that is not a grant');
    lastReply = decoded.value;
  }
  const ratePerPeriod = r['ratePerPeriod'] === undefined ? 0 : count('ratePerPeriod');
  const identity = r['identity'];
  if (identity !== undefined && poolNameProblem(identity) !== null) bad('has an invalid identity');
  const kept = {
    agentId,
    secret: secret as string,
    leaseId: r['leaseId'] as string,
    boundTokens: count('boundTokens'),
    lastSeq: count('lastSeq'),
    lastReply,
    ...(identity === undefined ? {} : { identity: identity as string }),
  };
  return ratePerPeriod === 0 ? kept : { ...kept, ratePerPeriod };
}

/** parseLevelTokens — a stored level; throws CoordinatorError('state-invalid') unless a non-negative safe integer. */
export function parseLevelTokens(pool: string, text: string): number {
  const level = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(level)) {
    throw new CoordinatorError(
      'state-invalid',
      `pool ${JSON.stringify(pool)}: stored level ${JSON.stringify(text.slice(0, 40))} is not a token count`,
      { pool },
    );
  }
  return level;
}

/** ChangeLog — the agents whose lease changed since the pool's last write. */
export class ChangeLog {
  private readonly agents = new Set<string>();

  add(agentId: string): void {
    this.agents.add(agentId);
  }

  /**
   * take — the changes as of now (a lease gone is a remove), or null when
   * none; clears the log. A part of a lease retired by a reconfiguration
   * (lease-table.ts) is written in its agent's bound, so a new owner counts
   * it too (for a full TTL: more than it needs, never less).
   */
  take(leases: LeaseTable, levelTokens: number): PoolChanges | null {
    if (this.agents.size === 0) return null;
    const upserts: PersistedLease[] = [];
    const removes: string[] = [];
    for (const agentId of this.agents) {
      const retired = leases.retiredOf(agentId);
      const record = leases.get(agentId) ?? retired;
      if (record === undefined) {
        removes.push(agentId);
        continue;
      }
      const { secret, leaseId, lastSeq, ratePerPeriod, identity } = record;
      const lastReply = lastGrantOf(record);
      const boundTokens = record === retired ? retired.boundTokens : record.boundTokens + (retired?.boundTokens ?? 0);
      const kept = { agentId, secret, leaseId, boundTokens, lastSeq, lastReply, ...(identity === null ? {} : { identity }) };
      upserts.push(ratePerPeriod === 0 ? kept : { ...kept, ratePerPeriod });
    }
    this.agents.clear();
    return { levelTokens, upserts, removes };
  }

  /** requeue — marks the leases of changes that were not written as changed again. */
  requeue(changes: PoolChanges): void {
    for (const lease of changes.upserts) this.agents.add(lease.agentId);
    for (const agentId of changes.removes) this.agents.add(agentId);
  }
}
