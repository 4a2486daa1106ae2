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
 * - A rate lease (rate-lease.ts) also has a rate ρ; the table keeps Σρ so
 *   the pool refills its level at what is left of the refill, and Σ weights
 *   for shares by weight.
 * - A lease knows its identity: the subject's identity token of the
 *   request that opened it (null for one kept by a store that did not say).
 *   The table counts live leases per identity as they open and end, so a
 *   cap per identity is checked in O(1).
 * - A live lease keeps one row of the table for its life, and the id the
 *   table issues names that row (lease-id.ts): a renewal finds its lease by
 *   reading that row and checking its agent (`find`), and tells whether it
 *   names its lease by the row and serial (`names`), without the map of
 *   agents or the lease id's characters, each a cache miss at 100k leases.
 *   Answers are those of the map and of comparing the ids.
 * - Each live lease also has a slot in dense columns of its demand and
 *   weight (swapped with the last on removal), so a rate pool's water
 *   level reads two arrays in order instead of every lease record
 *   (`demandColumns`).
 * - Work per operation does not grow with the number of leases: expiries
 *   are a binary heap with lazy deletion, so finding and reclaiming expired
 *   leases costs O(log n) per lease. A lease is queued once, at the expiry
 *   it had when queued; an extension only moves `expiresAtUs`, and the
 *   entry is queued again at the later expiry when it comes to the top (so
 *   a renewal neither allocates nor touches the heap). Entries of ended
 *   leases are dropped as they come up, and the heap is rebuilt once they
 *   outnumber live ones.
 */
import { assertInvariant, invariantBroken, type Reply } from '@tokenlease/shared';
import type { AgentClock } from './clock-check.js';
import type { GrantMemo } from './grant-memo.js';
import { LeaseIdForm } from './lease-id.js';
import { MinHeap } from './min-heap.js';

export interface LeaseRecord extends GrantMemo {
  readonly leaseId: string;
  readonly agentId: string;
  /** The secret of the request that opened the lease: every later request for it must present it. */
  readonly secret: string;
  /** The identity token of the request that opened the lease (null: a stored lease that did not say); counted per identity. */
  readonly identity: string | null;
  boundTokens: number;
  /** Until when the lease is counted: its grants' end, or later where an agent's clock needs it (countUntil). */
  expiresAtUs: number;
  /** Its grants' end: the latest grant instant plus the TTL it was given (what a renewal without extension tells of the time left). */
  grantedUntilUs: number;
  /** Its agent's last sequence number; the reply to it is kept as a GrantMemo (grant-memo.ts: lastGrantOf). */
  lastSeq: number;
  /** Rate leases: tokens it could hold at `accrualFromUs` (chunk leases: unused, 0). */
  heldTokens: number;
  /** Rate leases: ρ in tokens per pool refill period (0 for chunk leases). */
  ratePerPeriod: number;
  accrualFromUs: number;
  /** The agent's last reported demand, tokens per second, and its class's weight. */
  demandPerSecond: number;
  weight: number;
  /** The agent's class as its last acquire named it, or null (shown to operators; weights use `weight`). */
  agentClass: string | null;
  /** Whether the lease is a rate lease (its bound is a cap it accrues to), whatever the pool's mode is now. */
  isRate: boolean;
  /** The table's generation when the lease was opened: older ones were granted under a configuration since replaced. */
  readonly generation: number;
  /** A concurrency pool's lease told to shed slots above its share since this instant, µs (0: not told; chunk-grant.ts). */
  shedSinceUs: number;
  /** What the pool knows of its agent's clock, kept at its last acquire so the next one needs no lookup (clock-check.ts); null: none yet. */
  clock: AgentClock | null;
  /** Its index in the table's demand columns while live; -1 for a retired part. */
  slot: number;
  /** Its row in the table while live, named by the ids the table issues (`find`); -1 for a retired part. */
  row: number;
  /** The serial its id names (lease-id.ts), or -1 for a lease kept by a previous owner under an id of its own. */
  readonly serial: number;
}

/** DemandColumns — the live leases' demands (tokens per second) and weights, `count` of each, in no particular order. */
export interface DemandColumns {
  readonly count: number;
  readonly demandPerSecond: Float64Array;
  readonly weight: Float64Array;
}

export class LeaseTable {
  private readonly byAgent = new Map<string, LeaseRecord>();
  /** The live leases by row (null: a free row, listed in `freeRows`); a lease id issued here names its row. */
  private readonly rows: (LeaseRecord | null)[] = [];
  private readonly freeRows: number[] = [];
  private boundSum = 0;
  private rateSum = 0;
  private weightSum = 0;
  private demandSum = 0;
  private demandingWeightSum = 0;
  private issued = 0;
  private readonly expiries = new MinHeap<LeaseRecord>();
  /** The live leases by slot, and their demands and weights in the same order. */
  private readonly slots: LeaseRecord[] = [];
  private slotDemand = new Float64Array(16);
  private slotWeight = new Float64Array(16);
  /** Live leases per identity token (identities with none are not kept). */
  private readonly perIdentity = new Map<string, number>();
  /** Parts of leases ended by `retire`, by agent: counted until their expiry. */
  private readonly retired = new Map<string, LeaseRecord>();
  /** generation — bumped by each reconfiguration of the pool; new leases carry it. */
  generation = 0;
  /** expiredLeases — leases ended by their expiry so far. */
  expiredLeases = 0;
  /** expiredTokens — tokens the expired leases' bounds still held (lost to the pool). */
  expiredTokens = 0;

  private readonly ids: LeaseIdForm;

  constructor(idPrefix: string) {
    this.ids = new LeaseIdForm(idPrefix);
  }

  /** boundTokensSum — Σ boundTokens over live leases. */
  get boundTokensSum(): number {
    return this.boundSum;
  }

  /** demandPerSecondSum — Σ demand the live leases' agents last reported, tokens per second (what a relay asks upstream for). */
  get demandPerSecondSum(): number {
    return Math.max(0, this.demandSum);
  }

  /** setDemand — records the demand a lease's agent reported, and the sum with it. */
  setDemand(record: LeaseRecord, demandPerSecond: number): void {
    // Most renewals report what the last did: the column's line is not touched for nothing.
    if (demandPerSecond === record.demandPerSecond) return;
    this.demandSum += demandPerSecond - record.demandPerSecond;
    if (record.demandPerSecond > 0 !== demandPerSecond > 0) this.demandingWeightSum += demandPerSecond > 0 ? record.weight : -record.weight;
    record.demandPerSecond = demandPerSecond;
    if (record.slot >= 0) this.slotDemand[record.slot] = demandPerSecond;
  }

  /** demandColumns — the live leases' demands and weights as dense columns (valid until the table next changes). */
  demandColumns(): DemandColumns {
    return { count: this.slots.length, demandPerSecond: this.slotDemand, weight: this.slotWeight };
  }

  /** demandingWeightsSum — Σ weight over live leases whose agents last reported some demand (what a relay states as its fleet weight). */
  get demandingWeightsSum(): number {
    return this.demandingWeightSum;
  }

  /** weightSum — Σ weight over live leases. */
  get weightsSum(): number {
    return this.weightSum;
  }

  /** ratePerPeriodSum — Σρ over live rate leases. */
  get ratePerPeriodSum(): number {
    return this.rateSum;
  }

  get size(): number {
    return this.byAgent.size;
  }

  get(agentId: string): LeaseRecord | undefined {
    return this.byAgent.get(agentId);
  }

  /**
   * find — `agentId`'s live lease, as `get`, looked up first in the row
   * `leaseId` names when it is an id issued here: a renewal reaches its
   * lease by one array read instead of a lookup in a map of every agent
   * (whose buckets, keys and entries each miss the cache at 100k leases).
   * The row's lease is the answer only if it is `agentId`'s; otherwise (an
   * id of another table or a lease since ended, a wrong or made-up id) the
   * map answers, so `find(a, id)` and `get(a)` never differ.
   */
  find(agentId: string, leaseId: string | null): LeaseRecord | undefined {
    if (leaseId !== null && this.ids.read(leaseId) && this.ids.row < this.rows.length) {
      const record = this.rows[this.ids.row];
      if (record != null && record.agentId === agentId) return record;
    }
    return this.byAgent.get(agentId);
  }

  /**
   * rowOf — the live lease in the row `leaseId` names, if it is an id of
   * this table's form: whichever lease that is, its agent unchecked (a
   * hint for reading ahead, read-ahead.ts; `find` is the answer).
   */
  rowOf(leaseId: string | null): LeaseRecord | undefined {
    if (leaseId === null || !this.ids.read(leaseId) || this.ids.row >= this.rows.length) return undefined;
    return this.rows[this.ids.row] ?? undefined;
  }

  /**
   * names — whether `leaseId` is `record`'s id (`record.leaseId === leaseId`):
   * for an id issued here, by the row and serial it names, so the record's
   * id, a string of its own elsewhere in memory, is not read.
   */
  names(record: LeaseRecord, leaseId: string | null): boolean {
    if (leaseId === null) return false;
    if (record.serial < 0 || record.row < 0) return record.leaseId === leaseId;
    return this.ids.read(leaseId) && this.ids.row === record.row && this.ids.serial === record.serial;
  }

  /** leasesOf — live leases opened under `identity` (0 for one with none). */
  leasesOf(identity: string): number {
    return this.perIdentity.get(identity) ?? 0;
  }

  /** open — a new lease with a zero bound for `agentId`, which must hold none, bound to `secret`, opened under `identity`. */
  open(agentId: string, secret: string, seq: number, expiresAtUs: number, identity: string): LeaseRecord {
    // A new lease accrues no rate before it is granted one: its accrual starts at its expiry.
    return this.insert(null, agentId, secret, identity, seq, expiresAtUs, expiresAtUs);
  }

  /** adopt — a lease kept by a previous owner (under `identity`, null: unknown), live until `expiresAtUs`; `agentId` must hold none here. */
  adopt(
    agentId: string,
    secret: string,
    identity: string | null,
    leaseId: string,
    boundTokens: number,
    lastSeq: number,
    expiresAtUs: number,
  ): LeaseRecord {
    const record = this.insert(leaseId, agentId, secret, identity, lastSeq, expiresAtUs, 0);
    this.setBound(record, boundTokens);
    return record;
  }

  /** insert — a chunk lease of zero bound and weight 1 for `agentId`, which must hold none (under a new id when `leaseId` is null), kept by agent and by expiry. */
  private insert(
    leaseId: string | null,
    agentId: string,
    secret: string,
    identity: string | null,
    lastSeq: number,
    expiresAtUs: number,
    accrualFromUs: number,
  ): LeaseRecord {
    if (this.byAgent.has(agentId)) invariantBroken(`agent ${agentId} already holds a lease`);
    if (leaseId === null) this.issued += 1;
    const row = this.freeRows.pop() ?? this.rows.length;
    const record: LeaseRecord = {
      leaseId: leaseId ?? this.ids.issue(row, this.issued),
      agentId,
      secret,
      identity,
      boundTokens: 0,
      expiresAtUs,
      grantedUntilUs: expiresAtUs,
      lastSeq,
      // The grant memo written out, not spread: a literal's own fields stay inside the object.
      grantTerms: null,
      grantTokens: 0,
      grantHeldTokens: 0,
      grantTtlMs: 0,
      grantRetryMs: 0,
      grantSlotsMax: -1,
      grantRatePerPeriod: -1,
      grantCapTokens: 0,
      heldTokens: 0,
      ratePerPeriod: 0,
      accrualFromUs,
      demandPerSecond: 0,
      weight: 1,
      agentClass: null,
      isRate: false,
      generation: this.generation,
      shedSinceUs: 0,
      clock: null,
      slot: -1,
      row,
      serial: leaseId === null ? this.issued : -1,
    };
    if (row === this.rows.length) this.rows.push(record);
    else this.rows[row] = record;
    this.takeSlot(record);
    this.byAgent.set(agentId, record);
    if (identity !== null) this.perIdentity.set(identity, this.leasesOf(identity) + 1);
    this.weightSum += record.weight;
    this.queue(record);
    return record;
  }

  /** extend — moves a lease's end (granted and counted) to `expiresAtUs` if that is later; never shortens it. */
  extend(record: LeaseRecord, expiresAtUs: number): void {
    record.grantedUntilUs = Math.max(record.grantedUntilUs, expiresAtUs);
    this.countUntil(record, expiresAtUs);
  }

  /** countUntil — keeps a lease counted until `expiresAtUs` if that is later, without granting it that time (clock-check.ts). */
  countUntil(record: LeaseRecord, expiresAtUs: number): void {
    if (expiresAtUs > record.expiresAtUs) record.expiresAtUs = expiresAtUs;
  }

  /** setWeight — changes a lease's weight and the sum with it. */
  setWeight(record: LeaseRecord, weight: number): void {
    if (weight === record.weight) return;
    this.weightSum += weight - record.weight;
    if (record.demandPerSecond > 0) this.demandingWeightSum += weight - record.weight;
    record.weight = weight;
    if (record.slot >= 0) this.slotWeight[record.slot] = weight;
  }

  /** setBound — changes a lease's bound and the sum with it. */
  setBound(record: LeaseRecord, boundTokens: number): void {
    if (!(Number.isSafeInteger(boundTokens) && boundTokens >= 0)) invariantBroken(`bound ${boundTokens} of ${record.leaseId}`);
    this.boundSum += boundTokens - record.boundTokens;
    record.boundTokens = boundTokens;
  }

  /** setRate — changes a lease's ρ and the sum with it. */
  setRate(record: LeaseRecord, ratePerPeriod: number): void {
    if (!(Number.isSafeInteger(ratePerPeriod) && ratePerPeriod >= 0)) invariantBroken(`rate ${ratePerPeriod} of ${record.leaseId}`);
    this.rateSum += ratePerPeriod - record.ratePerPeriod;
    record.ratePerPeriod = ratePerPeriod;
  }

  /** all — the live leases (do not add or remove while iterating). */
  all(): IterableIterator<LeaseRecord> {
    return this.byAgent.values();
  }

  /** remove — ends a lease; returns the bound it had. */
  remove(record: LeaseRecord): number {
    if (record.row < 0 || this.rows[record.row] !== record) invariantBroken(`lease ${record.leaseId} is not live`);
    const bound = record.boundTokens;
    this.setBound(record, 0);
    this.setRate(record, 0);
    this.setDemand(record, 0);
    this.byAgent.delete(record.agentId);
    this.rows[record.row] = null;
    this.freeRows.push(record.row);
    record.row = -1;
    this.freeSlot(record);
    this.uncount(record.identity);
    this.weightSum -= record.weight;
    if (this.byAgent.size === 0) [this.demandSum, this.demandingWeightSum] = [0, 0];
    this.compactExpiries();
    return bound;
  }

  /**
   * retire — ends `record` for its agent (who may open a new lease at once)
   * but keeps `keepTokens` of it counted until its expiry: what the agent
   * may still spend of it before it learns of the new lease. A part already
   * retired for the agent is merged in (the larger expiry, the sum).
   */
  retire(record: LeaseRecord, keepTokens: number): void {
    assertInvariant(this.byAgent.get(record.agentId) === record, `lease ${record.leaseId} is not live`);
    assertInvariant(keepTokens >= 0 && keepTokens <= record.boundTokens, `retired part ${keepTokens} of ${record.leaseId}`);
    this.remove(record);
    if (keepTokens === 0) return;
    const earlier = this.retired.get(record.agentId);
    const part: LeaseRecord = { ...record, boundTokens: 0, ratePerPeriod: 0, grantTerms: null, slot: -1, row: -1 };
    if (earlier !== undefined) {
      part.expiresAtUs = Math.max(part.expiresAtUs, earlier.expiresAtUs);
      keepTokens += earlier.boundTokens;
      this.boundSum -= earlier.boundTokens;
    }
    part.boundTokens = keepTokens;
    this.boundSum += keepTokens;
    this.retired.set(record.agentId, part);
    this.queue(part);
  }

  /** retiredOf — the retired part counted for `agentId`, if any. */
  retiredOf(agentId: string): LeaseRecord | undefined {
    return this.retired.get(agentId);
  }

  /** retiredCount — retired parts still counted. */
  get retiredCount(): number {
    return this.retired.size;
  }

  /** clearRetired — drops `agentId`'s retired part: it has since told us what it holds, so nothing of it is left. */
  clearRetired(agentId: string): void {
    const part = this.retired.get(agentId);
    if (part === undefined) return;
    this.retired.delete(agentId);
    this.boundSum -= part.boundTokens;
    this.compactExpiries();
  }

  /** reclaimExpired — ends every lease (and retired part) whose expiry is at or before `nowUs`; returns their agent ids. */
  reclaimExpired(nowUs: number): string[] {
    const ended: string[] = [];
    for (let top = this.dueTop(); top !== undefined && top.expiresAtUs <= nowUs; top = this.dueTop()) {
      this.expiries.pop();
      if (this.retired.get(top.agentId) === top) {
        this.clearRetired(top.agentId);
        ended.push(top.agentId);
        continue;
      }
      this.expiredLeases += 1;
      this.expiredTokens += this.remove(top);
      ended.push(top.agentId);
    }
    return ended;
  }

  /** earliestExpiryUs — the soonest lease expiry, or Infinity without leases. */
  earliestExpiryUs(): number {
    return this.dueTop()?.expiresAtUs ?? Infinity;
  }

  /**
   * dueTop — the live lease (or retired part) that expires first, left on
   * top of the heap: entries of ended leases on the way are dropped, and
   * leases extended since they were queued are queued again at their expiry.
   */
  private dueTop(): LeaseRecord | undefined {
    for (;;) {
      const record = this.expiries.top;
      if (record === undefined) return undefined;
      // A live lease has one entry, at the expiry it had when queued (never later than its expiry now).
      if (this.isLive(record)) {
        if (record.expiresAtUs === this.expiries.topKey) return record;
        this.expiries.pop();
        this.queue(record);
        continue;
      }
      this.expiries.pop();
    }
  }

  /** queue — puts `record` in the expiry heap at its expiry (its only entry while it lives). */
  private queue(record: LeaseRecord): void {
    this.expiries.push(record.expiresAtUs, record);
  }

  /** takeSlot — gives the new live `record` the next slot of the demand columns (grown as needed). */
  private takeSlot(record: LeaseRecord): void {
    const slot = this.slots.length;
    if (slot === this.slotDemand.length) {
      const demand = new Float64Array(2 * slot);
      const weight = new Float64Array(2 * slot);
      demand.set(this.slotDemand);
      weight.set(this.slotWeight);
      this.slotDemand = demand;
      this.slotWeight = weight;
    }
    record.slot = slot;
    this.slots.push(record);
    this.slotDemand[slot] = record.demandPerSecond;
    this.slotWeight[slot] = record.weight;
  }

  /** freeSlot — gives `record`'s slot to the lease in the last slot. */
  private freeSlot(record: LeaseRecord): void {
    const slot = record.slot;
    const last = this.slots.pop();
    record.slot = -1;
    if (last === undefined || last === record) return;
    this.slots[slot] = last;
    last.slot = slot;
    this.slotDemand[slot] = this.slotDemand[this.slots.length] as number;
    this.slotWeight[slot] = this.slotWeight[this.slots.length] as number;
  }

  /** uncount — one lease of `identity` fewer; an identity with none left is forgotten (memory follows live leases). */
  private uncount(identity: string | null): void {
    if (identity === null) return;
    const left = this.leasesOf(identity) - 1;
    assertInvariant(left >= 0, `identity ${identity} has no lease to end`);
    if (left === 0) this.perIdentity.delete(identity);
    else this.perIdentity.set(identity, left);
  }

  /** isLive — whether `record` is a live lease or a retired part still counted. */
  private isLive(record: LeaseRecord): boolean {
    return this.byAgent.get(record.agentId) === record || this.retired.get(record.agentId) === record;
  }

  /** compactExpiries — rebuilds the heap once stale entries outnumber live ones (amortized O(1)). */
  private compactExpiries(): void {
    if (this.expiries.size <= 2 * (this.byAgent.size + this.retired.size) + 16) return;
    this.expiries.clear();
    for (const record of this.byAgent.values()) this.queue(record);
    for (const record of this.retired.values()) this.queue(record);
  }
}

/**
 * staleSequenceReply — the refusal of a request whose `seq` is not newer
 * than `otherSeq`; nothing changed for it. `seqFloor` tells the agent to ask
 * again above `otherSeq`, so a disturbed sequence recovers in one round-trip.
 */
export function staleSequenceReply(seq: number, otherSeq: number, relation = 'older than the last one seen,'): Reply {
  return {
    v: 2,
    kind: 'error',
    seq,
    code: 'stale-sequence',
    fault: 'peer',
    message: `sequence ${seq} is ${relation} ${otherSeq}; nothing changed for it`,
    retryAfterMs: 0,
    seqFloor: otherSeq,
  };
}
