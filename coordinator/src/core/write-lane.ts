/**
 * WriteLane: write before reply, for one pool under one ownership of a
 * durable coordinator.
 *
 * Rules:
 * - A lane belongs to one ownership: the claim's `epoch` and the pool
 *   object adopted under it, whose changes its `source` hands out. Every
 *   write it asks for carries that epoch and that pool's changes, and the
 *   replies it releases are that pool's. A new claim of the same pool gets
 *   a new lane; nothing passes from one lane to another.
 * - The replies a request or tick produces (a batch) leave only after the
 *   pool's changes behind them are written. Writes go one at a time, in
 *   order; whatever piles up meanwhile goes into the next write (group
 *   commit). A batch with no change to write leaves at once, in lane order.
 * - A fenced write means another epoch owns the pool: every grant and
 *   receipt it covered becomes `not-owner`, the lane stays fenced (every
 *   later one too), and its ownership should step down.
 * - A store that does not answer: every grant and receipt the write covered
 *   becomes `unavailable`, and its changes are marked changed again, so the
 *   agent's retry gets the original grant once a later write lands.
 * - Once its ownership has ended (`end`: stepped down, handed over,
 *   forgotten) the lane acts on nothing. Its waiting batches are refused
 *   `not-owner` at once; the outcome of a write still in flight, whenever
 *   it comes and whatever it is (written, fenced, unavailable), refuses
 *   that write's grants and receipts `not-owner`, gives no changes back,
 *   asks for no step-down and starts no write. Whatever owns the pool now
 *   (this process again, under a new epoch, or another) is told nothing:
 *   the old outcome says something about the old epoch only. A grant
 *   whose write did reach the store is refused too: the store holds its
 *   lease, so the owner now counts it, and the agent that never got it
 *   says so at its next request (at worst those tokens are under-admitted
 *   for one TTL); a lane that sends no grant once its ownership ended
 *   needs no case-by-case argument about which late outcomes were safe.
 * - A lane made `unowned` is ended from the start: for a pool the process
 *   does not own it refuses grants and receipts and writes nothing.
 *
 * Pure: the adapter (durable-service.ts) and the simulator perform the
 * writes and call `landed` with their outcome; nothing here waits.
 */
import type { Reply } from '@tokenlease/shared';
import type { Delivery } from './chunk-grant.js';
import type { PoolChanges } from './pool-state.js';

/** Batch — replies produced together, at `producedUs`. */
export interface Batch<R> {
  readonly deliveries: readonly Delivery<R>[];
  readonly producedUs: number;
}

/** ChangeSource — where a lane takes its pool's changes from, and puts back those not written. */
export interface ChangeSource {
  takeChanges(): PoolChanges | null;
  requeueChanges(changes: PoolChanges): void;
}

/** WriteOutcome — how a write ended: written, refused by the store's fence, or not answered. */
export type WriteOutcome = 'written' | 'fenced' | 'unavailable';

/** LaneWrite — a write to perform: `changes` under the lane's `epoch` (the store fences any other). */
export interface LaneWrite {
  readonly epoch: number;
  readonly changes: PoolChanges;
}

/** LaneStep — what to do now: send these batches, start this write (then call `landed`), step this lane's ownership down. */
export interface LaneStep<R> {
  readonly send: readonly Batch<R>[];
  readonly write: LaneWrite | null;
  readonly stepDown: boolean;
}

/** STORE_RETRY_AFTER_MS — how long an agent refused `unavailable` waits before asking again. */
export const STORE_RETRY_AFTER_MS = 250;
/** OWNER_RETRY_AFTER_MS — how long an agent refused `not-owner` waits before asking again. */
export const OWNER_RETRY_AFTER_MS = 50;

const NOTHING: LaneStep<never> = { send: [], write: null, stepDown: false };
const NO_CHANGES: ChangeSource = { takeChanges: () => null, requeueChanges: () => undefined };

export class WriteLane<R> {
  private pending: Batch<R>[] = [];
  private inFlight: { readonly batches: readonly Batch<R>[]; readonly changes: PoolChanges } | null = null;
  private fenced = false;
  private over = false;

  /**
   * WriteLane — the lane of the ownership claimed under `epoch` (a
   * non-negative integer; the store hands out epochs from 1, and 0 is the
   * `unowned` lane's), whose pool's changes `source` hands out.
   */
  constructor(
    readonly epoch: number,
    private readonly source: ChangeSource,
  ) {
    if (!Number.isSafeInteger(epoch) || epoch < 0)
      throw new RangeError(`a write lane's epoch must be a non-negative integer, not ${epoch}`);
  }

  /** unowned — a lane of no ownership (epoch 0), ended from the start: it refuses grants and receipts and writes nothing. */
  static unowned<R>(): WriteLane<R> {
    const lane = new WriteLane<R>(0, NO_CHANGES);
    lane.over = true;
    return lane;
  }

  /** writing — whether a write is in flight. */
  get writing(): boolean {
    return this.inFlight !== null;
  }

  /** isFenced — whether a write of this lane was fenced. */
  get isFenced(): boolean {
    return this.fenced;
  }

  /** ended — whether this lane's ownership has ended (`end`, or `unowned`). */
  get ended(): boolean {
    return this.over;
  }

  /** submit — a batch produced by this lane's pool; refused at once once the ownership ended or was fenced. */
  submit(batch: Batch<R>): LaneStep<R> {
    this.pending.push(batch);
    return this.inFlight === null || this.over ? this.flush() : NOTHING;
  }

  /**
   * landed — the write in flight ended with `outcome`; what piled up
   * meanwhile goes next. On an ended lane: that write's grants and receipts
   * refused, and nothing else.
   */
  landed(outcome: WriteOutcome): LaneStep<R> {
    const write = this.inFlight;
    if (write === null) return NOTHING;
    this.inFlight = null;
    if (this.over) return { send: write.batches.map((b) => refuseBatch(b, 'not-owner')), write: null, stepDown: false };
    let sent = write.batches;
    if (outcome === 'fenced') {
      this.fenced = true;
      sent = sent.map((b) => refuseBatch(b, 'not-owner'));
    } else if (outcome === 'unavailable') {
      this.source.requeueChanges(write.changes);
      sent = sent.map((b) => refuseBatch(b, 'unavailable'));
    }
    const next = this.pending.length > 0 ? this.flush() : NOTHING;
    return { send: [...sent, ...next.send], write: next.write, stepDown: outcome === 'fenced' };
  }

  /**
   * end — the ownership ended: the batches waiting are refused now (to
   * send), and from now on the lane acts on nothing (see the rules). A
   * second call returns nothing.
   */
  end(): LaneStep<R> {
    if (this.over) return NOTHING;
    this.over = true;
    return { send: this.pending.splice(0).map((b) => refuseBatch(b, 'not-owner')), write: null, stepDown: false };
  }

  /** drop — forgets every batch not yet sent (the process died). */
  drop(): void {
    this.pending = [];
    this.inFlight = null;
    this.over = true;
  }

  private flush(): LaneStep<R> {
    const batches = this.pending.splice(0);
    const serving = !this.over && !this.fenced;
    const changes = serving ? this.source.takeChanges() : null;
    if (changes === null)
      return { send: serving ? batches : batches.map((b) => refuseBatch(b, 'not-owner')), write: null, stepDown: false };
    this.inFlight = { batches, changes };
    return { send: [], write: { epoch: this.epoch, changes }, stepDown: false };
  }
}

/** refuseBatch — the batch with every grant and receipt turned into the refusal `code`. */
export function refuseBatch<R>(batch: Batch<R>, code: 'not-owner' | 'unavailable'): Batch<R> {
  return { producedUs: batch.producedUs, deliveries: batch.deliveries.map((d) => refuseDelivery(d, code)) };
}

function refuseDelivery<R>(d: Delivery<R>, code: 'not-owner' | 'unavailable'): Delivery<R> {
  if (d.reply.kind !== 'grant' && d.reply.kind !== 'receipt') return d;
  const reply: Reply =
    code === 'not-owner'
      ? {
          v: 2,
          kind: 'error',
          seq: d.reply.seq,
          code,
          fault: 'coordinator',
          message: NOT_OWNER_MESSAGE,
          retryAfterMs: OWNER_RETRY_AFTER_MS,
        }
      : {
          v: 2,
          kind: 'error',
          seq: d.reply.seq,
          code,
          fault: 'coordinator',
          message: STORE_DOWN_MESSAGE,
          retryAfterMs: STORE_RETRY_AFTER_MS,
        };
  return { to: d.to, reply };
}

const NOT_OWNER_MESSAGE = 'this coordinator no longer owns the pool; ask again';
const STORE_DOWN_MESSAGE = 'the state store does not answer: nothing can be granted until it does';
