/**
 * A pool's history as Redis applied it, replayed from the commands of its
 * append-only file (redis-raw.ts): every claim of the pool's owner record
 * and every lease record written, with the owner at that moment. The
 * store's own account of fencing and write-before-reply, with no clock
 * involved: a write Redis refused is not in the file, a lapse is (Redis
 * logs an expired record as `DEL`).
 */
import type { GrantLine } from './coordinator-log.js';

/** StoredGrant — a lease record Redis accepted, with the grant it carried and who owned the pool then. */
export interface StoredGrant {
  /** Index of the command in the append-only file: the order Redis applied it in. */
  readonly position: number;
  readonly agentId: string;
  readonly leaseId: string;
  readonly lastSeq: number;
  /** The grant kept as the lease's last reply; null while its request was held. */
  readonly grant: { readonly seq: number; readonly epoch: number; readonly tokensGranted: number } | null;
  /** The pool's owner record when Redis applied the write; null when there was none. */
  readonly owner: { readonly member: string; readonly epoch: number } | null;
}

/** StoredClaim — an owner record Redis accepted, and the pool's state as the claiming member read it. */
export interface StoredClaim {
  readonly position: number;
  readonly member: string;
  readonly epoch: number;
  /** Lease records kept at the claim, the sum of their bounds, and the kept level (null: no record of the pool). */
  readonly leases: number;
  readonly leasedTokens: number;
  readonly levelTokens: number | null;
}

/** StoreHistory — a pool's ownership changes and lease writes as Redis applied them. */
export interface StoreHistory {
  readonly claims: readonly StoredClaim[];
  readonly writes: readonly StoredGrant[];
}

/** storeHistory — replays `commands` for `pool` under the key prefix `keyPrefix` (see redis-store.ts for the layout). */
export function storeHistory(commands: readonly string[][], keyPrefix: string, pool: string): StoreHistory {
  const ownerKey = `${keyPrefix}:{${pool}}:owner`;
  const levelKey = `${keyPrefix}:{${pool}}:level`;
  const leasesKey = `${keyPrefix}:{${pool}}:leases`;
  let owner: { member: string; epoch: number } | null = null;
  let levelTokens: number | null = null;
  const bounds = new Map<string, number>();
  const claims: StoredClaim[] = [];
  const writes: StoredGrant[] = [];
  commands.forEach((command, position) => {
    const name = (command[0] ?? '').toUpperCase();
    const [key, ...rest] = command.slice(1);
    if (name === 'DEL' || name === 'UNLINK') {
      const keys = command.slice(1);
      if (keys.includes(ownerKey)) owner = null;
      if (keys.includes(levelKey)) levelTokens = null;
      if (keys.includes(leasesKey)) bounds.clear();
    } else if (name === 'SET' && key === levelKey) {
      levelTokens = Number(rest[0]);
    } else if (name === 'HDEL' && key === leasesKey) {
      for (const agentId of rest) bounds.delete(agentId);
    } else if ((name === 'HSET' || name === 'HMSET') && (key === ownerKey || key === leasesKey)) {
      const pairs: Array<[string, string]> = [];
      for (let i = 0; i + 1 < rest.length; i += 2) pairs.push([rest[i] as string, rest[i + 1] as string]);
      if (key === ownerKey) {
        const fields = new Map(pairs);
        owner = { member: fields.get('member') ?? owner?.member ?? '', epoch: Number(fields.get('epoch') ?? owner?.epoch) };
        const leasedTokens = [...bounds.values()].reduce((sum, b) => sum + b, 0);
        claims.push({ position, ...owner, leases: bounds.size, leasedTokens, levelTokens });
      } else {
        for (const [agentId, json] of pairs) {
          const lease = decodeLease(json);
          bounds.set(agentId, lease.boundTokens);
          writes.push({ position, agentId, leaseId: lease.leaseId, lastSeq: lease.lastSeq, grant: lease.grant, owner });
        }
      }
    }
  });
  return { claims, writes };
}

function decodeLease(json: string): Pick<StoredGrant, 'leaseId' | 'lastSeq' | 'grant'> & { readonly boundTokens: number } {
  const lease = JSON.parse(json) as { leaseId: string; boundTokens: number; lastSeq: number; lastReply: string | null };
  const reply =
    lease.lastReply === null ? null : (JSON.parse(lease.lastReply) as { kind: string; seq: number; epoch: number; tokensGranted: number });
  const grant =
    reply === null || reply.kind !== 'grant' ? null : { seq: reply.seq, epoch: reply.epoch, tokensGranted: reply.tokensGranted };
  return { leaseId: lease.leaseId, boundTokens: lease.boundTokens, lastSeq: lease.lastSeq, grant };
}

/**
 * unfencedWrites — accepted writes that stored a grant for the first time
 * while the owner record named another epoch than the grant's: a write that
 * fencing should have refused. Empty when fencing held.
 */
export function unfencedWrites(history: StoreHistory): StoredGrant[] {
  const seen = new Set<string>();
  return history.writes.filter((w) => {
    if (w.grant === null) return false;
    const key = `${w.leaseId}#${w.grant.seq}#${w.grant.epoch}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return w.owner?.epoch !== w.grant.epoch;
  });
}

/**
 * unwrittenGrants — grants that were sent (logged) although the store never
 * accepted the state behind them: no write of their lease at their sequence
 * number or later while their epoch owned the pool. A grant of tokens needs
 * exactly that; a grant of none (a renewal, or the reply a new owner makes
 * up for a request the store recorded as held) needs such a write under its
 * epoch or an earlier one. A grant listed here left before its state was
 * stored, or came from a deposed owner. Empty when write-before-reply held.
 */
export function unwrittenGrants(grants: readonly GrantLine[], history: StoreHistory): GrantLine[] {
  const written = new Map<string, Array<{ epoch: number; lastSeq: number }>>();
  for (const w of history.writes) {
    if (w.owner === null) continue;
    const list = written.get(w.leaseId) ?? [];
    list.push({ epoch: w.owner.epoch, lastSeq: w.lastSeq });
    written.set(w.leaseId, list);
  }
  return grants.filter((g) => {
    const writes = written.get(g.leaseId) ?? [];
    return !writes.some((w) => w.lastSeq >= g.seq && (g.tokensGranted > 0 ? w.epoch === g.epoch : w.epoch <= g.epoch));
  });
}
