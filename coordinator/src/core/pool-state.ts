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
 *   it, so a retry that reaches the new owner gets the original answer.
 * - Whatever comes back from the store is validated like a peer's message:
 *   a malformed record is a typed error, never a silently wrong pool.
 */
import { decodeReply, encodeMessage, type LeaseGrant } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';

/** PersistedLease — one lease as kept in the store. `lastReply` null: its request was still held. */
export interface PersistedLease {
  readonly agentId: string;
  readonly leaseId: string;
  readonly boundTokens: number;
  readonly lastSeq: number;
  readonly lastReply: LeaseGrant | null;
}

/** PersistedPool — a pool as kept in the store. */
export interface PersistedPool {
  readonly levelTokens: number;
  readonly leases: readonly PersistedLease[];
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
    leaseId: lease.leaseId,
    boundTokens: lease.boundTokens,
    lastSeq: lease.lastSeq,
    lastReply: lease.lastReply === null ? null : textDecoder.decode(encodeMessage(lease.lastReply)),
  });
}

/** decodePersistedLease — the lease kept under `agentId` as `text`; throws CoordinatorError('state-invalid') when malformed. */
export function decodePersistedLease(pool: string, agentId: string, text: string): PersistedLease {
  const bad = (why: string): never => {
    throw new CoordinatorError('state-invalid', `pool ${JSON.stringify(pool)}: stored lease of agent ${JSON.stringify(agentId)} ${why}`);
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
  return { agentId, leaseId: r['leaseId'] as string, boundTokens: count('boundTokens'), lastSeq: count('lastSeq'), lastReply };
}

/** parseLevelTokens — a stored level; throws CoordinatorError('state-invalid') unless a non-negative safe integer. */
export function parseLevelTokens(pool: string, text: string): number {
  const level = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(level)) {
    throw new CoordinatorError('state-invalid', `pool ${JSON.stringify(pool)}: stored level ${JSON.stringify(text.slice(0, 40))} is not a token count`);
  }
  return level;
}
