/**
 * SimStore: the durable store shared by a run's coordinators, as the
 * simulator models it (what redis-store.ts keeps in Redis): members with
 * their heartbeats, and per unit (a configured pool, a template's pool, the
 * catch-all) the owner record, the last epoch handed out, the level and
 * the leases by agent.
 *
 * Rules (those of the Redis scripts):
 * - A heartbeat keeps its member alive for its TTL (0: gone) and lists the
 *   live members, sorted.
 * - A claim takes the unit unless another member's record is live; it
 *   hands out the next epoch and the state kept so far (null when nothing
 *   was written), and makes its claimant the owner for the TTL. A claim by
 *   the owner itself takes the unit anew, under the next epoch.
 * - Renew, write, release and forget act only while the record names that
 *   member under that epoch and has not lapsed; otherwise they change
 *   nothing and answer false (a fenced write).
 * - A landed write replaces the level, sets the upserted leases and deletes
 *   the removed ones.
 *
 * It also keeps, per unit and lease, every accepted write of it (gone with the unit's records) (epoch and sequence
 * number), so the simulator can tell whether a grant a coordinator sends is
 * backed by the store (`backs`: write before reply as the store saw it, the
 * rule of harness/store-history.ts `unwrittenGrants`).
 */
import type { Claim, Members, PersistedLease, PersistedPool, PoolChanges, StoreAnswers, StoreCall } from '@tokenlease/coordinator/internal';
import type { LeaseGrant } from '@tokenlease/shared';

interface Unit {
  owner: { readonly member: string; readonly epoch: number; untilUs: number } | null;
  epochs: number;
  levelTokens: number | null;
  readonly leases: Map<string, PersistedLease>;
  /** Per lease id, the epoch and sequence number of each accepted write of it (a removal: every sequence number, `removed`). */
  readonly written: Map<string, Array<{ epoch: number; lastSeq: number; removed: boolean }>>;
}

export class SimStore {
  private readonly members = new Map<string, number>();
  private readonly units = new Map<string, Unit>();
  writes = 0;
  fencedWrites = 0;

  /** perform — `member`'s call at `nowUs`, as the store answers it. */
  perform(member: string, call: StoreCall, nowUs: number): StoreAnswers[StoreCall['op']] {
    switch (call.op) {
      case 'heartbeat':
        return this.heartbeat(member, call.ttlMs, nowUs);
      case 'owner-of':
        return this.ownerOf(call.unit, nowUs);
      case 'claim':
        return this.claim(call.unit, member, call.ttlMs, nowUs);
      case 'renew':
        return this.ifOwner(
          call.unit,
          member,
          call.epoch,
          nowUs,
          (u) => (u.owner = { member, epoch: call.epoch, untilUs: nowUs + call.ttlMs * 1000 }),
        );
      case 'write':
        return this.write(call.unit, member, call.epoch, call.changes, nowUs);
      case 'release':
        return this.ifOwner(call.unit, member, call.epoch, nowUs, (u) => (u.owner = null));
      case 'forget':
        return this.ifOwner(call.unit, member, call.epoch, nowUs, () => this.units.delete(call.unit));
    }
  }

  /** lapse — the owner record of `unit` lapses at `atUs`: from then on its owner's writes are refused and others may claim it. */
  lapse(unit: string, atUs: number): void {
    const owner = this.units.get(unit)?.owner;
    if (owner !== null && owner !== undefined) owner.untilUs = Math.min(owner.untilUs, atUs);
  }

  /** owns — whether `epoch` owns `unit` at `nowUs`: the record names it and has not lapsed. */
  owns(unit: string, epoch: number, nowUs: number): boolean {
    const owner = this.units.get(unit)?.owner;
    return owner !== null && owner !== undefined && owner.epoch === epoch && nowUs < owner.untilUs;
  }

  /** ownerOf — the member owning `unit` at `nowUs`, or null. */
  ownerOf(unit: string, nowUs: number): string | null {
    const owner = this.units.get(unit)?.owner;
    return owner !== null && owner !== undefined && nowUs < owner.untilUs ? owner.member : null;
  }

  /** liveMembers — the members alive at `nowUs`, sorted. */
  liveMembers(nowUs: number): string[] {
    return [...this.members]
      .filter(([, untilUs]) => nowUs < untilUs)
      .map(([m]) => m)
      .sort();
  }

  /**
   * backs — whether an accepted write holds the state behind `grant`: one of
   * its lease at its sequence number or later, under its epoch (a grant of
   * tokens), or under its epoch or an earlier one, its removal included (a
   * grant of none: a renewal, which the lease's expiry, or the agent's next
   * lease replacing it, may overtake before the write, or the reply a new
   * owner makes up for a request the store kept as held).
   */
  backs(unit: string, grant: LeaseGrant): boolean {
    return (this.units.get(unit)?.written.get(grant.leaseId) ?? []).some((w) =>
      grant.tokensGranted > 0
        ? !w.removed && w.lastSeq >= grant.seq && w.epoch === grant.epoch
        : w.lastSeq >= grant.seq && w.epoch <= grant.epoch,
    );
  }

  private heartbeat(member: string, ttlMs: number, nowUs: number): Members {
    if (ttlMs === 0) this.members.delete(member);
    else this.members.set(member, nowUs + ttlMs * 1000);
    return { members: this.liveMembers(nowUs), droppedImpossible: 0 };
  }

  private claim(unit: string, member: string, ttlMs: number, nowUs: number): Claim {
    const u = this.unit(unit);
    if (u.owner !== null && u.owner.member !== member && nowUs < u.owner.untilUs)
      return { taken: false, heldForMs: Math.ceil((u.owner.untilUs - nowUs) / 1000) };
    u.epochs += 1;
    u.owner = { member, epoch: u.epochs, untilUs: nowUs + ttlMs * 1000 };
    return { taken: true, epoch: u.epochs, state: this.snapshot(u), clearedOwner: false };
  }

  private write(unit: string, member: string, epoch: number, changes: PoolChanges, nowUs: number): boolean {
    this.writes += 1;
    const applied = this.ifOwner(unit, member, epoch, nowUs, (u) => {
      u.levelTokens = changes.levelTokens;
      for (const lease of changes.upserts) {
        // A new lease of the agent replaces its old one in the store: that is the old one's removal (an agent
        // renewing every few ms may see its lease expire and open the next before one write takes both).
        const replaced = u.leases.get(lease.agentId)?.leaseId;
        if (replaced !== undefined && replaced !== lease.leaseId)
          wrote(u, replaced, { epoch, lastSeq: Number.MAX_SAFE_INTEGER, removed: true });
        u.leases.set(lease.agentId, lease);
        wrote(u, lease.leaseId, { epoch, lastSeq: lease.lastSeq, removed: false });
      }
      for (const agentId of changes.removes) {
        const leaseId = u.leases.get(agentId)?.leaseId;
        if (leaseId !== undefined) wrote(u, leaseId, { epoch, lastSeq: Number.MAX_SAFE_INTEGER, removed: true });
        u.leases.delete(agentId);
      }
    });
    if (!applied) this.fencedWrites += 1;
    return applied;
  }

  private ifOwner(unit: string, member: string, epoch: number, nowUs: number, act: (u: Unit) => void): boolean {
    const u = this.units.get(unit);
    if (u === undefined || u.owner === null || u.owner.member !== member || u.owner.epoch !== epoch || nowUs >= u.owner.untilUs)
      return false;
    act(u);
    return true;
  }

  private unit(name: string): Unit {
    let u = this.units.get(name);
    if (u === undefined) {
      u = { owner: null, epochs: 0, levelTokens: null, leases: new Map(), written: new Map() };
      this.units.set(name, u);
    }
    return u;
  }

  /** snapshot — the state a new owner reads; null when nothing was ever written. */
  private snapshot(u: Unit): PersistedPool | null {
    if (u.levelTokens === null && u.leases.size === 0) return null;
    return { levelTokens: u.levelTokens ?? 0, leases: [...u.leases.values()] };
  }
}

function wrote(u: Unit, leaseId: string, write: { epoch: number; lastSeq: number; removed: boolean }): void {
  const list = u.written.get(leaseId) ?? [];
  list.push(write);
  u.written.set(leaseId, list);
}
