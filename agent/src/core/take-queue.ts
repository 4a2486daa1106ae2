/**
 * TakeQueue: the `take()` calls of one pool that wait for tokens, as a pure
 * core: arrivals and `nowUs` in, decisions out (which waiters are admitted,
 * which timed out), and the next instant it must be polled. The Limiter
 * drives it with a timer, the simulator on its virtual clock.
 *
 * Rules:
 * - A take that arrives when nothing waits is tried at once, as `tryTake`
 *   is: admitted when the slot holds its cost, else its denial is recorded
 *   on the slot (the keeper learns of the demand) and it waits. One that
 *   arrives while takes wait never overtakes them: it waits behind them.
 * - Refused (a return value, never a throw: nothing waits and nothing
 *   changes), in this order: `closed` once the queue is closed;
 *   `invalid-argument` for a timeout that is not a whole number of ms ≥ 0
 *   or a cost that is not a positive integer; `never-fits` for a cost
 *   above the largest lease of the pool (`costMaxTokens`, once known), as
 *   no wait helps; `unknown-pool` while the coordinator says the pool does
 *   not exist.
 * - A take that arrives before the pool's limits are known waits for them
 *   before deciding: when a grant makes them known, every waiter whose
 *   cost no lease can hold is refused `never-fits` at the next poll, and
 *   when the coordinator answers `unknown-pool`, every waiter is refused so.
 * - Waiters are admitted in arrival order while the slot can spend the
 *   head's whole cost (FIFO: a head that does not fit blocks those behind
 *   it, so a large cost is not starved by small ones). Asking the slot
 *   first spends and records nothing when the head does not fit.
 * - A waiter times out once `nowUs` reaches its deadline (arrival +
 *   timeout) and it has not been admitted: a head that fits at that poll
 *   is admitted, one that does not is dropped and the next is considered.
 * - The cost of every waiter counts in the keeper's `waitingTokens`, so the
 *   keeper asks for it; a waiter's cost leaves it when the waiter does.
 * - After `close` every waiter is handed back unadmitted and every new
 *   take is refused.
 * - Every admitted take comes with the slot's receipt for it
 *   (`LeaseSlot.takeReceiptAt`), so its tokens can be given back; a probe's
 *   is RECEIPT_NONE.
 * - Shadow mode (the slot's `shadowAt`): a valid take is admitted at once,
 *   as `tryTake` admits it (spent when the lease holds it, else a would-be
 *   denial counted apart), never refused `never-fits` or `unknown-pool`
 *   and never waiting; takes that waited from before the switch are
 *   admitted at the next poll.
 */
import { AgentError } from '../errors.js';
import { RECEIPT_DENIED, RECEIPT_NONE, type LeaseSlot } from './lease-slot.js';
import { US_PER_MS } from './units.js';

/** TAKE_TIMEOUT_MS_DEFAULT — how long a `take()` waits when its caller does not say. */
export const TAKE_TIMEOUT_MS_DEFAULT = 1000;

/** TakeQueueHost — the pool's slot, and the keeper's count of the tokens waiting takes need. */
export interface TakeQueueHost {
  readonly slot: LeaseSlot;
  waitingTokens: number;
}

/** TakeArrival — what became of an arriving take: admitted now (with the slot's receipt), waiting, or refused with `error`. */
export type TakeArrival =
  | { readonly kind: 'admitted'; readonly receipt: number }
  | { readonly kind: 'waiting' }
  | { readonly kind: 'refused'; readonly error: AgentError };

/**
 * TakeDecisions — the tickets of the waiters a poll admitted (with each
 * one's receipt at the same index), of those that timed out and of those
 * refused (with why), each in arrival order.
 */
export interface TakeDecisions<T> {
  readonly admitted: readonly T[];
  readonly receipts: readonly number[];
  readonly timedOut: readonly T[];
  readonly refused: ReadonlyArray<{ readonly ticket: T; readonly error: AgentError }>;
}

interface Waiter<T> {
  readonly cost: number;
  /** False for a probe: admitted when its cost fits, without spending it (see `arrive`). */
  readonly spend: boolean;
  readonly deadlineUs: number;
  readonly ticket: T;
}

const PROBE_ADMITTED: TakeArrival = { kind: 'admitted', receipt: RECEIPT_NONE };
const WAITING: TakeArrival = { kind: 'waiting' };
const NOTHING: TakeDecisions<never> = { admitted: [], receipts: [], timedOut: [], refused: [] };

export class TakeQueue<T> {
  private waiters: Waiter<T>[] = [];
  private closed = false;

  /** TakeQueue — waiting takes on `host.slot`; `T` is what the driver needs to answer a take (a resolver, a record). */
  constructor(private readonly host: TakeQueueHost) {}

  /** length — how many takes wait. */
  get length(): number {
    return this.waiters.length;
  }

  /**
   * arrive — a take of `cost` tokens at `nowUs` that may wait `timeoutMs`;
   * `ticket` comes back from `poll` or `close` if it waits. Never throws:
   * a refusal is a return value (see the rules). `spend` false makes it a
   * probe: it waits in line like a take and is admitted when its cost
   * fits, but spends nothing (an all-or-nothing take over several pools
   * waits so, then spends every part at once).
   */
  arrive(cost: number, timeoutMs: number, ticket: T, nowUs: number, spend = true): TakeArrival {
    const slot = this.host.slot;
    const pool = slot.pool;
    if (this.closed) return refused('closed', 'the agent is closed', pool);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
      return refused('invalid-argument', `timeoutMs must be a non-negative integer, got ${timeoutMs}`, pool);
    }
    if (!(cost >= 1 && Number.isSafeInteger(cost)))
      return refused('invalid-argument', `cost must be a positive integer, got ${cost}`, pool);
    if (spend && slot.shadowAt(nowUs)) return { kind: 'admitted', receipt: slot.takeReceiptAt(cost, nowUs) };
    const problem = refusal(slot, cost);
    if (problem !== null) return { kind: 'refused', error: problem };
    if (this.waiters.length === 0 && !spend && slot.canTakeAt(cost, nowUs)) return PROBE_ADMITTED;
    if (this.waiters.length === 0 && spend) {
      const receipt = slot.takeReceiptAt(cost, nowUs);
      if (receipt !== RECEIPT_DENIED) return { kind: 'admitted', receipt };
    }
    this.waiters.push({ cost, spend, deadlineUs: nowUs + timeoutMs * US_PER_MS, ticket });
    this.host.waitingTokens += cost;
    return WAITING;
  }

  /** poll — at `nowUs`: admits waiters from the head while their cost fits, then times out those due (see the rules). */
  poll(nowUs: number): TakeDecisions<T> {
    if (this.waiters.length === 0) return NOTHING;
    const slot = this.host.slot;
    const admitted: T[] = [];
    const receipts: number[] = [];
    const timedOut: T[] = [];
    const shadow = slot.shadowAt(nowUs);
    const refusedNow = shadow ? [] : this.refuseHopeless();
    let head = 0;
    for (; head < this.waiters.length; head += 1) {
      const waiter = this.waiters[head] as Waiter<T>;
      if (shadow || slot.canTakeAt(waiter.cost, nowUs)) {
        // Fits (or shadow mode admits it): a take spends it now, a probe spends nothing.
        receipts.push(waiter.spend ? slot.takeReceiptAt(waiter.cost, nowUs) : RECEIPT_NONE);
        admitted.push(waiter.ticket);
      } else if (nowUs >= waiter.deadlineUs) timedOut.push(waiter.ticket);
      else break;
      this.host.waitingTokens -= waiter.cost;
    }
    const still: Waiter<T>[] = [];
    for (let i = head; i < this.waiters.length; i += 1) {
      const waiter = this.waiters[i] as Waiter<T>;
      if (nowUs < waiter.deadlineUs) {
        still.push(waiter);
      } else {
        timedOut.push(waiter.ticket);
        this.host.waitingTokens -= waiter.cost;
      }
    }
    this.waiters = still;
    return admitted.length === 0 && timedOut.length === 0 && refusedNow.length === 0
      ? NOTHING
      : { admitted, receipts, timedOut, refused: refusedNow };
  }

  /** refuseHopeless — takes out the waiters no wait can admit now that the pool's limits (or its absence) are known. */
  private refuseHopeless(): Array<{ readonly ticket: T; readonly error: AgentError }> {
    const slot = this.host.slot;
    const out: Array<{ readonly ticket: T; readonly error: AgentError }> = [];
    if (!slot.unknownPool && !this.waiters.some((w) => w.cost > slot.costMaxTokens)) return out;
    const kept: Waiter<T>[] = [];
    for (const waiter of this.waiters) {
      const error = refusal(slot, waiter.cost);
      if (error === null) kept.push(waiter);
      else {
        out.push({ ticket: waiter.ticket, error });
        this.host.waitingTokens -= waiter.cost;
      }
    }
    this.waiters = kept;
    return out;
  }

  /** nextDeadlineUs — the earliest deadline of a waiter, when `poll` must run at the latest; Infinity when none waits. */
  nextDeadlineUs(): number {
    let deadlineUs = Infinity;
    for (const waiter of this.waiters) if (waiter.deadlineUs < deadlineUs) deadlineUs = waiter.deadlineUs;
    return deadlineUs;
  }

  /** close — refuses every later take and hands back the tickets of all waiters, unadmitted, in arrival order. */
  close(): readonly T[] {
    this.closed = true;
    return this.drain();
  }

  /** drain — hands back the tickets of all waiters, unadmitted, in arrival order; later takes are welcome. */
  drain(): readonly T[] {
    const tickets = this.waiters.map((waiter) => waiter.ticket);
    for (const waiter of this.waiters) this.host.waitingTokens -= waiter.cost;
    this.waiters = [];
    return tickets;
  }
}

function refused(code: 'closed' | 'invalid-argument', message: string, pool: string): TakeArrival {
  return { kind: 'refused', error: new AgentError(code, message, { pool }) };
}

/** refusal — why a take of a valid `cost` can never be admitted from `slot` as far as is known now, or null. */
function refusal(slot: LeaseSlot, cost: number): AgentError | null {
  const pool = slot.pool;
  if (cost > slot.costMaxTokens) {
    return new AgentError('never-fits', `cost ${cost} exceeds the largest lease of pool ${pool} (${slot.costMaxTokens})`, { pool });
  }
  if (slot.unknownPool) return new AgentError('unknown-pool', `the coordinator knows no pool named ${pool}`, { pool });
  return null;
}
