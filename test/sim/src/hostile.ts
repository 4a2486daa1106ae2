/**
 * Hostiles: the clients of a run that play the attacker (SimConfig.hostile),
 * speaking the protocol as any client may, over the run's network, to the
 * run's pool:
 * - sybils fill chunk leases and renew them without spending, each every
 *   `renewMs`; with `betweenHolds` a renewal waits until the pool's status
 *   says no request is held, so it never lands while another agent waits;
 * - a flooder keeps `inFlight` acquires out at once, each under a fresh
 *   agent id, wanting a full lease and willing to be held the longest the
 *   pool holds; every answer sends the next.
 * They never spend, return or report. They start with the run and stop
 * asking at the end of its traffic. Each sybil is one fair share of the
 * pool, and so is each live lease of the flooder's fresh ids: the core
 * today shares a pool per agent id, not per identity (fair-share.ts).
 */
import { encodeMessage, subjectFor, type LeaseRequest, type Reply } from '@tokenlease/shared';
import type { HostileSpec } from './sim-config.js';
import { POOL, PREFIX, type Event, type ReplyTo } from './sim-events.js';

/** HOSTILE_SLOT — the network slot of hostile clients (no agent's, relay's or ghost's): never partitioned, but as lossy as any. */
const HOSTILE_SLOT = -2_000_000;
/** How soon a sybil waiting for the pool to hold nobody reads its status again, µs (a status request every 5 ms). */
const STATUS_POLL_US = 5000;
/** How often the flooder tops its requests in flight up (after losses), µs. */
const FLOOD_TICK_US = 20_000;
/** A flooder's request unanswered this long past its hold is taken for lost, µs. */
const FLOOD_LOST_AFTER_US = 1_000_000;
/** What hostiles say they demand, tokens per second: more than any pool here refills. */
const DEMAND_PER_SECOND = 1_000_000;

/** HostileHost — the run as its hostile clients see it. */
export interface HostileHost {
  push(atUs: number, event: Event): void;
  /** send — a request onto the network now, to the coordinators. */
  send(to: ReplyTo, subject: string, bytes: Uint8Array): void;
  /** waiting — requests the pool holds now, as its status shows them (0 while no coordinator serves it). */
  waiting(): number;
}

/** The pool limits a hostile client asks within: its largest lease, and its longest hold, ms. */
export interface HostilePool {
  readonly maxLeaseTokens: number;
  readonly maxHoldMs: number;
}

interface Sybil {
  readonly id: string;
  seq: number;
  leaseId: string | null;
  tokens: number;
}

export class Hostiles {
  private readonly sybils: Sybil[];
  /** The flooder's requests out: agent id → when sent, µs. */
  private readonly flooding = new Map<string, number>();
  private floods = 0;
  /** When the leases granted to the flooder's ids end, µs, in grant order (a TTL apart from their grants, so in order of ending too). */
  private readonly floodLeaseEndsUs: number[] = [];
  /** Tokens granted to hostile clients (top-ups counted once), for reports. */
  grantedTokens = 0;
  /** Requests hostile clients sent. */
  sent = 0;

  constructor(
    private readonly spec: HostileSpec,
    private readonly pool: HostilePool,
    private readonly host: HostileHost,
    private readonly untilUs: number,
  ) {
    this.sybils = Array.from({ length: spec.sybils?.count ?? 0 }, (_, i) => ({ id: `x-sybil-${i}`, seq: 0, leaseId: null, tokens: 0 }));
  }

  /** isHostile — whether a reply goes to a hostile client. */
  static isHostile(to: ReplyTo): boolean {
    return to.slot === HOSTILE_SLOT;
  }

  /** sybilCount — how many sybils there are: one fair share each. */
  get sybilCount(): number {
    return this.sybils.length;
  }

  /**
   * floodLeases — the leases granted to the flooder's ids that are live at
   * `nowUs` (and its requests out): each is one agent to the pool, and one
   * fair share, as the core shares a pool per agent id today.
   */
  floodLeases(nowUs: number): number {
    const ends = this.floodLeaseEndsUs;
    let ended = 0;
    while (ended < ends.length && (ends[ended] as number) <= nowUs) ended += 1;
    ends.splice(0, ended);
    return ends.length + this.flooding.size;
  }

  start(nowUs: number): void {
    this.sybils.forEach((_, index) => this.host.push(nowUs + index, { k: 'hostile', index }));
    if (this.spec.flooder !== undefined) this.host.push(nowUs, { k: 'hostile', index: this.sybils.length });
  }

  /** act — hostile client `index` (a sybil, or past them the flooder) acts now. */
  act(index: number, nowUs: number): void {
    if (nowUs >= this.untilUs) return;
    const sybil = this.sybils[index];
    if (sybil === undefined) return this.flood(nowUs);
    const spec = this.spec.sybils;
    if (spec === undefined) return;
    if (spec.betweenHolds && this.host.waiting() > 0) return this.host.push(nowUs + STATUS_POLL_US, { k: 'hostile', index });
    const wantTokens = Math.max(0, spec.tokens - sybil.tokens);
    // It waits for what it wants, as an honest agent would, so that it fills the pool when it is alone.
    this.ask(sybil.id, (sybil.seq += 1), { leaseId: sybil.leaseId, tokensLeft: sybil.tokens, tokensWanted: wantTokens }, wantTokens > 0);
    this.host.push(nowUs + spec.renewMs * 1000, { k: 'hostile', index });
  }

  /** reply — a coordinator's answer reaches hostile client `to.id` now. */
  reply(to: ReplyTo, reply: Reply, nowUs: number): void {
    const sybil = this.sybils.find((s) => s.id === to.id);
    if (sybil !== undefined) {
      if (reply.kind !== 'grant' || to.seq !== sybil.seq) return;
      // Never spends: it keeps what it was told it holds.
      const same = reply.leaseId === sybil.leaseId;
      this.grantedTokens += reply.tokensGranted;
      sybil.tokens = same ? sybil.tokens + reply.tokensGranted : reply.tokensGranted;
      sybil.leaseId = reply.leaseId;
      return;
    }
    if (!this.flooding.delete(to.id)) return;
    if (reply.kind === 'grant') {
      this.grantedTokens += reply.tokensGranted;
      this.floodLeaseEndsUs.push(nowUs + reply.ttlMs * 1000);
    }
    if (nowUs < this.untilUs) this.floodOne(nowUs);
  }

  /** flood — the flooder's requests lost are given up, and as many sent afresh as keep `inFlight` out; again soon. */
  private flood(nowUs: number): void {
    const lostBeforeUs = nowUs - this.pool.maxHoldMs * 1000 - FLOOD_LOST_AFTER_US;
    for (const [id, sentUs] of this.flooding) if (sentUs < lostBeforeUs) this.flooding.delete(id);
    while (this.flooding.size < (this.spec.flooder?.inFlight ?? 0)) this.floodOne(nowUs);
    this.host.push(nowUs + FLOOD_TICK_US, { k: 'hostile', index: this.sybils.length });
  }

  private floodOne(nowUs: number): void {
    const id = `x-flood-${(this.floods += 1)}`;
    this.flooding.set(id, nowUs);
    this.ask(id, 1, { leaseId: null, tokensLeft: 0, tokensWanted: this.pool.maxLeaseTokens }, true);
  }

  private ask(id: string, seq: number, lease: Pick<LeaseRequest, 'leaseId' | 'tokensLeft' | 'tokensWanted'>, hold: boolean): void {
    const request: LeaseRequest = {
      v: 2,
      op: 'acquire',
      agentId: id,
      pool: POOL,
      leaseSecret: `hostile-secret-${id}`.padEnd(24, '0'),
      seq,
      ...lease,
      demandPerSecond: DEMAND_PER_SECOND,
      holdMs: hold ? this.pool.maxHoldMs : 0,
    };
    this.sent += 1;
    this.host.send({ id, slot: HOSTILE_SLOT, seq, attempt: 1 }, subjectFor(PREFIX, 'acquire', POOL), encodeMessage(request));
  }
}
