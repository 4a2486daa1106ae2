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
 */
import type { PersistedLease, PersistedPool, PoolChanges } from '@tokenlease/coordinator';

export class SimStore {
  private levelTokens: number | null = null;
  private readonly leases = new Map<string, PersistedLease>();
  private lastEpoch = 0;
  /** The owning epoch and when its record lapses, µs (Infinity while renewed). */
  private owner: { epoch: number; untilUs: number } | null = null;
  writes = 0;
  fencedWrites = 0;

  /** claim — makes the next epoch the owner; returns it with the state kept (null: no record). */
  claim(): { epoch: number; state: PersistedPool | null } {
    this.lastEpoch += 1;
    this.owner = { epoch: this.lastEpoch, untilUs: Infinity };
    return { epoch: this.lastEpoch, state: this.snapshot() };
  }

  /** lapse — the owner stops renewing: its record expires at `atUs`, and its writes from then on are refused. */
  lapse(atUs: number): void {
    if (this.owner !== null) this.owner = { ...this.owner, untilUs: Math.min(this.owner.untilUs, atUs) };
  }

  /** write — applies `changes` if `epoch` owns the pool at `nowUs`; false when fenced. */
  write(epoch: number, changes: PoolChanges, nowUs: number): boolean {
    this.writes += 1;
    if (this.owner === null || this.owner.epoch !== epoch || nowUs >= this.owner.untilUs) {
      this.fencedWrites += 1;
      return false;
    }
    this.levelTokens = changes.levelTokens;
    for (const lease of changes.upserts) this.leases.set(lease.agentId, lease);
    for (const agentId of changes.removes) this.leases.delete(agentId);
    return true;
  }

  /** snapshot — the state a new owner reads; null when nothing was ever written. */
  snapshot(): PersistedPool | null {
    if (this.levelTokens === null && this.leases.size === 0) return null;
    return { levelTokens: this.levelTokens ?? 0, leases: [...this.leases.values()] };
  }
}
