/**
 * A layout measured before it is built: what a chunk renewal would cost if
 * each lease were one contiguous row of one ArrayBuffer, off the JavaScript
 * heap, instead of a `LeaseRecord` object with strings and a clock object
 * of its own (lease-table.ts). It is not the coordinator and grants nothing
 * to anyone: it is the yardstick for the lease table's rewrite (issue 32,
 * docs/tools.md, "Where the rest of the fall goes").
 *
 * It is timed as lease-scaling.ts times the core, in the same shape: n
 * leases of distinct simulated agents, renewals by live agents picked at
 * random in batches of distinct agents, only the renewals' CPU time
 * counted, each count in a fresh process. A renewal does the work whose
 * cost grows with the number of leases, and the request's decoding:
 * - the request decoded by the protocol's own `decodeRequest`;
 * - its lease found by the row its lease id names (the table's own
 *   `LeaseIdForm`), and the row's agent id and secret compared with the
 *   request's, character by character;
 * - the sequence number checked, the bound lowered to what the agent
 *   reports and topped up, the expiry moved, the demand and the clock's
 *   notes written, and the fields of a grant memo written (ROW_DOUBLES
 *   doubles in all, as many as a `LeaseRecord`'s numbers);
 * - what it changed noted (in a field, as the core notes the pool a
 *   request changed; emptying a `Set` each time, as both once did, left a
 *   table in the old generation per renewal), and a grant built.
 * What a renewal also does in the pool (the credit, contention, the clock's
 * judgement, the hold queue) reads the pool's own state, the same at every
 * count: it adds the same time to a renewal at every count, so with this
 * layout the coordinator's figure would fall by no larger a share than the
 * sketch's.
 */
import { LeaseIdForm } from '@tokenlease/coordinator/internal';
import { decodeRequest, type LeaseGrant, type LeaseRequest } from '@tokenlease/shared';
import { seededRandom, type Random } from '@tokenlease/shared/testing';
import { BATCH_SIZE, BatchReplies, batchRequests, distinctPicks, SEED, VIRTUAL_US_PER_CALL, WARMUP_MS } from './renewal-batches.js';
import { SimulatedAgents } from './simulated-agents.js';
import { serveTurns, type Renewed } from './turns.js';

/** ROW_BYTES — one lease's row: ROW_DOUBLES numbers, then its agent id's and secret's UTF-16 units. */
const ROW_BYTES = 512;
const ROW_DOUBLES = 24;
/** Where a row's keys start, in 16-bit units from the row's start (just past its numbers). */
const KEY_UNIT = (ROW_DOUBLES * 8) / 2;
/** The most UTF-16 units a row's keys take: a length and the characters of each. */
const KEY_UNITS_MAX = (ROW_BYTES - ROW_DOUBLES * 8) / 2;
const DOUBLES_PER_ROW = ROW_BYTES / 8;
const UNITS_PER_ROW = ROW_BYTES / 2;
/** The doubles of a row that a renewal reads or writes by name. */
const BOUND = 0;
const EXPIRES_AT_US = 1;
const GRANTED_UNTIL_US = 2;
const LAST_SEQ = 3;
const WEIGHT = 4;
const DEMAND = 5;
/** From here on: the clock's notes and the grant memo, written on every renewal. */
const NOTES = 6;

const POOL = 'sketch';
const MAX_LEASE_TOKENS = 1000;
const TTL_MS = 600_000;
const US_PER_MS = 1000;

/** RowSketchRound — one count measured once (in a process of its own). */
export interface RowSketchRound {
  readonly leases: number;
  readonly renewalsPerSecond: number;
  /** Renewals timed. */
  readonly calls: number;
  /** Their CPU time, ms. */
  readonly cpuMs: number;
}

export class RowSketch {
  private readonly f64: Float64Array;
  private readonly u16: Uint16Array;
  private readonly ids = new LeaseIdForm('sketch.');
  /** Each row's lease id, issued once at its opening as the table issues them (a grant names it, it does not spell it anew). */
  private readonly leaseIds: string[] = [];
  /** changed — the agent the last renewal changed (null before any). */
  changed: string | null = null;
  private readonly agents: SimulatedAgents;
  private readonly picks: number[];
  private readonly replies = new BatchReplies();
  private nowUs = 1_000_000_000;

  constructor(
    private readonly n: number,
    private readonly random: Random,
  ) {
    const buffer = new ArrayBuffer(n * ROW_BYTES);
    this.f64 = new Float64Array(buffer);
    this.u16 = new Uint16Array(buffer);
    this.agents = new SimulatedAgents(n, random, POOL, 1000);
    this.picks = Array.from({ length: n }, (_, i) => i);
  }

  /** open — each agent's lease in the row of its index, and its first grant handed to it. */
  open(): void {
    for (let row = 0; row < this.n; row += 1) {
      const req = this.decoded(this.agents.request(row, 0));
      this.leaseIds.push(this.ids.issue(row, row + 1));
      this.writeKeys(row, req.agentId, req.leaseSecret);
      const at = row * DOUBLES_PER_ROW;
      this.f64[at + LAST_SEQ] = req.seq;
      this.f64[at + WEIGHT] = 1;
      this.f64[at + DEMAND] = req.demandPerSecond;
      this.agents.settle(row, this.grant(req, row, 0, 0), 'row sketch');
    }
  }

  /**
   * renew — the renewal of `bytes` at `nowUs`; throws for a request that
   * is not a well-formed renewal of its agent's own lease (the sketch
   * refuses nothing quietly).
   */
  renew(bytes: Uint8Array, nowUs: number): LeaseGrant {
    const req = this.decoded(bytes);
    const ids = this.ids;
    if (req.leaseId === null || !ids.read(req.leaseId) || ids.row >= this.n) throw new Error(`row sketch: ${req.agentId} names no row`);
    const row = ids.row;
    if (!this.keysMatch(row, req.agentId, req.leaseSecret))
      throw new Error(`row sketch: row ${row} is not ${req.agentId}'s under its secret`);
    const f64 = this.f64;
    const at = row * DOUBLES_PER_ROW;
    if (req.seq <= (f64[at + LAST_SEQ] as number)) throw new Error(`row sketch: ${req.agentId} sent an old sequence number`);
    f64[at + LAST_SEQ] = req.seq;
    const reported = Math.min(f64[at + BOUND] as number, req.tokensLeft);
    const granted = Math.max(0, Math.min(req.tokensWanted, MAX_LEASE_TOKENS - reported));
    f64[at + BOUND] = reported + granted;
    const untilUs = nowUs + TTL_MS * US_PER_MS;
    if (untilUs > (f64[at + EXPIRES_AT_US] as number)) f64[at + EXPIRES_AT_US] = untilUs;
    f64[at + GRANTED_UNTIL_US] = untilUs;
    if (req.demandPerSecond !== f64[at + DEMAND]) f64[at + DEMAND] = req.demandPerSecond;
    for (let i = NOTES; i < ROW_DOUBLES; i += 1) f64[at + i] = nowUs + i;
    this.changed = req.agentId;
    return this.grant(req, row, granted, reported + granted);
  }

  /** measure — renewals for `ms` of CPU time (after a warm-up). */
  measure(ms: number): RowSketchRound {
    this.renewFor(WARMUP_MS);
    const { calls, cpuMs } = this.renewFor(ms);
    return { leases: this.n, renewalsPerSecond: Math.round(calls / (cpuMs / 1000)), calls, cpuMs: Math.round(cpuMs) };
  }

  /** renewFor — renewals by random agents for `ms` of CPU time. */
  renewFor(ms: number): Renewed {
    let calls = 0;
    let cpuMs = 0;
    const batchSize = Math.min(BATCH_SIZE, this.n);
    while (cpuMs < ms) {
      const batch = distinctPicks(this.picks, batchSize, this.random);
      const payloads = batchRequests(this.agents, batch, this.nowUs);
      const replies = this.replies;
      const start = process.cpuUsage();
      for (let i = 0; i < payloads.length; i += 1) {
        this.nowUs += VIRTUAL_US_PER_CALL;
        replies.note(i, this.renew(payloads[i] as Uint8Array, this.nowUs));
      }
      const cpu = process.cpuUsage(start);
      cpuMs += (cpu.user + cpu.system) / 1000;
      replies.settle(this.agents, batch, 'row sketch');
      calls += batch.length;
    }
    return { calls, cpuMs };
  }

  private decoded(bytes: Uint8Array): LeaseRequest {
    const decoded = decodeRequest(bytes);
    if (!decoded.ok || decoded.value.op !== 'acquire') throw new Error('row sketch: a request did not decode as an acquire');
    return decoded.value;
  }

  private grant(req: LeaseRequest, row: number, tokensGranted: number, tokensHeld: number): LeaseGrant {
    return {
      v: 2,
      kind: 'grant',
      seq: req.seq,
      leaseId: this.leaseIds[row] as string,
      tokensGranted,
      tokensHeld,
      ttlMs: TTL_MS,
      epoch: 1,
      maxLeaseTokens: MAX_LEASE_TOKENS,
      capacityTokens: 1_000_000_000,
      refillTokens: 1_000_000_000,
      refillPeriodMs: 1000,
      retryAfterMs: 0,
    };
  }

  /** writeKeys — `row`'s agent id and secret: each a length, then its UTF-16 units. */
  private writeKeys(row: number, agentId: string, secret: string): void {
    if (agentId.length + secret.length + 2 > KEY_UNITS_MAX) throw new Error(`row sketch: ${agentId}'s keys do not fit a row`);
    let at = row * UNITS_PER_ROW + KEY_UNIT;
    for (const key of [agentId, secret]) {
      this.u16[at] = key.length;
      for (let c = 0; c < key.length; c += 1) this.u16[at + 1 + c] = key.charCodeAt(c);
      at += 1 + key.length;
    }
  }

  /** keysMatch — whether `row` holds exactly `agentId` and `secret`. */
  private keysMatch(row: number, agentId: string, secret: string): boolean {
    const at = row * UNITS_PER_ROW + KEY_UNIT;
    return this.keyAt(at, agentId) && this.keyAt(at + 1 + agentId.length, secret);
  }

  private keyAt(at: number, key: string): boolean {
    const u16 = this.u16;
    if (u16[at] !== key.length) return false;
    for (let c = 0; c < key.length; c += 1) if (u16[at + 1 + c] !== key.charCodeAt(c)) return false;
    return true;
  }
}

/** rowSketchTurns — (in a child of `rowSketchScaling`) opens `leases` rows, warms up, and renews in `turns` turns of `turnMs` as its parent cues (turns.ts). */
export function rowSketchTurns(leases: number, turnMs: number, turns: number): Promise<void> {
  const sketch = new RowSketch(leases, seededRandom(SEED + leases));
  sketch.open();
  sketch.renewFor(WARMUP_MS);
  return serveTurns(
    (ms) => sketch.renewFor(ms),
    turnMs,
    turns,
    () => null,
  );
}

/** rowSketchRound — one measurement at `leases` rows, `measureMs` of CPU time; run in a process of its own. */
export function rowSketchRound(leases: number, measureMs: number): RowSketchRound {
  const sketch = new RowSketch(leases, seededRandom(SEED + leases));
  sketch.open();
  return sketch.measure(measureMs);
}
