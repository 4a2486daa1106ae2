/**
 * LeaseTable: the live leases of one pool, one per agent.
 *
 * Rules:
 * - An agent holds at most one lease per pool; renewals top it up under the
 *   same id. A new id is issued only when the agent has no live lease here.
 * - `boundTokens` is the most the lease may still spend. Reports only lower
 *   it; grants raise it. The table keeps the sum so the pool can enforce
 *   `level + Σ bounds ≤ capacity` without a scan.
 * - A record also holds the agent's last sequence number and the reply to
 *   it, so a retried request gets the original reply (idempotent retries).
 *   The record, and with it the retry memory, ends with the lease.
 */
import { assertInvariant, type LeaseGrant } from '@tokenlease/shared';

export interface LeaseRecord {
  readonly leaseId: string;
  readonly agentId: string;
  boundTokens: number;
  expiresAtUs: number;
  lastSeq: number;
  /** Reply to `lastSeq`, or null while that request is held. */
  lastReply: LeaseGrant | null;
}

export class LeaseTable {
  private readonly byAgent = new Map<string, LeaseRecord>();
  private boundSum = 0;
  private issued = 0;

  constructor(private readonly idPrefix: string) {}

  /** boundTokensSum — Σ boundTokens over live leases. */
  get boundTokensSum(): number {
    return this.boundSum;
  }

  get size(): number {
    return this.byAgent.size;
  }

  get(agentId: string): LeaseRecord | undefined {
    return this.byAgent.get(agentId);
  }

  /** open — a new lease with a zero bound for `agentId`, which must hold none. */
  open(agentId: string, seq: number, expiresAtUs: number): LeaseRecord {
    assertInvariant(!this.byAgent.has(agentId), `agent ${agentId} already holds a lease`);
    this.issued += 1;
    const record: LeaseRecord = {
      leaseId: `${this.idPrefix}${this.issued.toString(36)}`,
      agentId,
      boundTokens: 0,
      expiresAtUs,
      lastSeq: seq,
      lastReply: null,
    };
    this.byAgent.set(agentId, record);
    return record;
  }

  /** setBound — changes a lease's bound and the sum with it. */
  setBound(record: LeaseRecord, boundTokens: number): void {
    assertInvariant(Number.isSafeInteger(boundTokens) && boundTokens >= 0, `bound ${boundTokens} of ${record.leaseId}`);
    this.boundSum += boundTokens - record.boundTokens;
    record.boundTokens = boundTokens;
  }

  /** remove — ends a lease; returns the bound it had. */
  remove(record: LeaseRecord): number {
    const bound = record.boundTokens;
    this.setBound(record, 0);
    this.byAgent.delete(record.agentId);
    return bound;
  }

  /** reclaimExpired — ends every lease whose expiry is at or before `nowUs`; returns their agent ids. */
  reclaimExpired(nowUs: number): string[] {
    const ended: string[] = [];
    for (const record of this.byAgent.values()) {
      if (record.expiresAtUs <= nowUs) {
        this.remove(record);
        ended.push(record.agentId);
      }
    }
    return ended;
  }

  /** earliestExpiryUs — the soonest lease expiry, or Infinity without leases. */
  earliestExpiryUs(): number {
    let earliest = Infinity;
    for (const record of this.byAgent.values()) {
      if (record.expiresAtUs < earliest) earliest = record.expiresAtUs;
    }
    return earliest;
  }
}
