/**
 * WriteLane: write before reply, for one pool of a durable coordinator.
 *
 * Rules:
 * - The replies a request or tick produces (a batch) leave only after the
 *   pool's changes behind them are written. Writes go one at a time, in
 *   order; whatever piles up meanwhile goes into the next write (group
 *   commit). A batch with no change to write leaves at once, in lane order.
 * - A fenced write means another epoch owns the pool: every grant and
 *   receipt it covered becomes `not-owner`, the lane stays fenced (every
 *   later one too), and the owner should step down.
 * - A store that does not answer: every grant and receipt the write covered
 *   becomes `unavailable`, and its changes are marked changed again, so the
 *   agent's retry gets the original grant once a later write lands.
 * - A lane whose process does not own the pool refuses grants and receipts
 *   as `not-owner` and writes nothing.
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

/** ChangeSource — where a lane takes the pool's changes from, and puts back those not written. */
export interface ChangeSource {
  takeChanges(): PoolChanges | null;
  requeueChanges(changes: PoolChanges): void;
}

/** WriteOutcome — how a write ended: written, refused by the store's fence, or not answered. */
export type WriteOutcome = 'written' | 'fenced' | 'unavailable';

/** LaneStep — what to do now: send these batches, start this write (then call `landed`), step down. */
export interface LaneStep<R> {
  readonly send: readonly Batch<R>[];
  readonly write: PoolChanges | null;
  readonly stepDown: boolean;
}

/** STORE_RETRY_AFTER_MS — how long an agent refused `unavailable` waits before asking again. */
export const STORE_RETRY_AFTER_MS = 250;
/** OWNER_RETRY_AFTER_MS — how long an agent refused `not-owner` waits before asking again. */
export const OWNER_RETRY_AFTER_MS = 50;

export class WriteLane<R> {
  private pending: Batch<R>[] = [];
  private inFlight: { readonly batches: readonly Batch<R>[]; readonly changes: PoolChanges } | null = null;
  private fenced = false;

  /** writing — whether a write is in flight. */
  get writing(): boolean {
    return this.inFlight !== null;
  }

  /** isFenced — whether a write of this lane was fenced. */
  get isFenced(): boolean {
    return this.fenced;
  }

  /** submit — a batch produced while the process does (`owner`) or does not own the pool. */
  submit(batch: Batch<R>, source: ChangeSource, owner: boolean): LaneStep<R> {
    this.pending.push(batch);
    return this.inFlight === null ? this.flush(source, owner) : { send: [], write: null, stepDown: false };
  }

  /** landed — the write in flight ended with `outcome`; what piled up meanwhile goes next. */
  landed(outcome: WriteOutcome, source: ChangeSource, owner: boolean): LaneStep<R> {
    const write = this.inFlight;
    if (write === null) return { send: [], write: null, stepDown: false };
    this.inFlight = null;
    let sent = write.batches;
    if (outcome === 'fenced') {
      this.fenced = true;
      sent = sent.map((b) => refuseBatch(b, 'not-owner'));
    } else if (outcome === 'unavailable') {
      source.requeueChanges(write.changes);
      sent = sent.map((b) => refuseBatch(b, 'unavailable'));
    }
    const next = this.pending.length > 0 ? this.flush(source, owner) : { send: [], write: null, stepDown: false };
    return { send: [...sent, ...next.send], write: next.write, stepDown: outcome === 'fenced' };
  }

  /** drop — forgets every batch not yet sent (the process died). */
  drop(): void {
    this.pending = [];
    this.inFlight = null;
  }

  private flush(source: ChangeSource, owner: boolean): LaneStep<R> {
    const batches = this.pending.splice(0);
    const serving = owner && !this.fenced;
    const changes = serving ? source.takeChanges() : null;
    if (changes === null)
      return { send: serving ? batches : batches.map((b) => refuseBatch(b, 'not-owner')), write: null, stepDown: false };
    this.inFlight = { batches, changes };
    return { send: [], write: changes, stepDown: false };
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
