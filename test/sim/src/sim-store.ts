/**
 * SimStore: the durable store of one pool as the simulator models it (what
 * redis-store.ts keeps in Redis): the level, the leases by agent, the last
 * epoch handed out and the ownership record that fences writes.
 *
 * Rules (those of the Redis scripts):
 * - A claim hands out the next epoch and the state kept so far (null when
 *   the store has no record), and makes its claimant the owner.
 * - A write lands only while its epoch owns the pool: the owner record
 *   names that epoch and has not lapsed. A refused write changes nothing.
 * - A landed write replaces the level, sets the upserted leases and deletes
 *   the removed ones.
 *
 * It also keeps, per lease, every accepted write of it (epoch and sequence
 * number), so the simulator can tell whether a grant a coordinator sends is
 * backed by the store (`backs`: write before reply as the store saw it, the
 * rule of harness/store-history.ts `unwrittenGrants`).
 */
import type { PersistedLease, PersistedPool, PoolChanges } from '@tokenlease/coordinator';
import type { LeaseGrant } from '@tokenlease/shared';

export class SimStore {
  private levelTokens: number | null = null;
  private readonly leases = new Map<string, PersistedLease>();
  private epochs = 0;
  /** The owning epoch and when its record lapses, µs (Infinity while renewed). */
  private owner: { epoch: number; untilUs: number } | null = null;
  /** Per lease id, the epoch and sequence number of each accepted write of it (a removal: every sequence number, `removed`). */
  private readonly written = new Map<string, Array<{ epoch: number; lastSeq: number; removed: boolean }>>();
  writes = 0;
  fencedWrites = 0;

  /** lastEpoch — the last epoch handed out (0: none yet). */
  get lastEpoch(): number {
    return this.epochs;
  }

  /** claim — makes the next epoch the owner; returns it with the state kept (null: no record). */
  claim(): { epoch: number; state: PersistedPool | null } {
    this.epochs += 1;
    this.owner = { epoch: this.epochs, untilUs: Infinity };
    return { epoch: this.epochs, state: this.snapshot() };
  }

  /** lapse — the owner stops renewing: its record expires at `atUs`, and its writes from then on are refused. */
  lapse(atUs: number): void {
    if (this.owner !== null) this.owner = { ...this.owner, untilUs: Math.min(this.owner.untilUs, atUs) };
  }

  /** write — applies `changes` if `epoch` owns the pool at `nowUs`; false when fenced. */
  write(epoch: number, changes: PoolChanges, nowUs: number): boolean {
    this.writes += 1;
    if (!this.owns(epoch, nowUs)) {
      this.fencedWrites += 1;
      return false;
    }
    this.levelTokens = changes.levelTokens;
    for (const lease of changes.upserts) {
      this.leases.set(lease.agentId, lease);
      this.wrote(lease.leaseId, { epoch, lastSeq: lease.lastSeq, removed: false });
    }
    for (const agentId of changes.removes) {
      const leaseId = this.leases.get(agentId)?.leaseId;
      if (leaseId !== undefined) this.wrote(leaseId, { epoch, lastSeq: Number.MAX_SAFE_INTEGER, removed: true });
      this.leases.delete(agentId);
    }
    return true;
  }

  /** owns — whether `epoch` owns the pool at `nowUs`: the owner record names it and has not lapsed. */
  owns(epoch: number, nowUs: number): boolean {
    return this.owner !== null && this.owner.epoch === epoch && nowUs < this.owner.untilUs;
  }

  /**
   * backs — whether an accepted write holds the state behind `grant`: one of
   * its lease at its sequence number or later, under its epoch (a grant of
   * tokens), or under its epoch or an earlier one, its removal included (a
   * grant of none: a renewal, which the lease's expiry may overtake before
   * the write, or the reply a new owner makes up for a request the store
   * kept as held).
   */
  backs(grant: LeaseGrant): boolean {
    return (this.written.get(grant.leaseId) ?? []).some((w) =>
      grant.tokensGranted > 0
        ? !w.removed && w.lastSeq >= grant.seq && w.epoch === grant.epoch
        : w.lastSeq >= grant.seq && w.epoch <= grant.epoch,
    );
  }

  private wrote(leaseId: string, write: { epoch: number; lastSeq: number; removed: boolean }): void {
    const list = this.written.get(leaseId) ?? [];
    list.push(write);
    this.written.set(leaseId, list);
  }

  /** snapshot — the state a new owner reads; null when nothing was ever written. */
  snapshot(): PersistedPool | null {
    if (this.levelTokens === null && this.leases.size === 0) return null;
    return { levelTokens: this.levelTokens ?? 0, leases: [...this.leases.values()] };
  }
}
