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
 * - Refused (a return value, nothing waits and nothing changes), in this
 *   order: `closed` once the queue is closed; `invalid-argument` for a
 *   timeout that is not a whole number of ms ≥ 0; `never-fits` for a cost
 *   above the largest lease of the pool (`costMaxTokens`, once known), as
 *   no wait helps; `invalid-argument` for a cost that is not a positive
 *   integer. A bad cost that arrives while nothing waits meets the slot's
 *   rule first, which throws AgentError('invalid-argument').
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
 */
import { AgentError } from '../errors.js';
import type { LeaseSlot } from './lease-slot.js';
import { US_PER_MS } from './units.js';

/** TAKE_TIMEOUT_MS_DEFAULT — how long a `take()` waits when its caller does not say. */
export const TAKE_TIMEOUT_MS_DEFAULT = 1000;

/** TakeQueueHost — the pool's slot, and the keeper's count of the tokens waiting takes need. */
export interface TakeQueueHost {
  readonly slot: LeaseSlot;
  waitingTokens: number;
}

/** TakeArrival — what became of an arriving take: admitted now, waiting, or refused with `error`. */
export type TakeArrival =
  { readonly kind: 'admitted' } | { readonly kind: 'waiting' } | { readonly kind: 'refused'; readonly error: AgentError };

/** TakeDecisions — the tickets of the waiters a poll admitted and of those that timed out, each in arrival order. */
export interface TakeDecisions<T> {
  readonly admitted: readonly T[];
  readonly timedOut: readonly T[];
}

interface Waiter<T> {
  readonly cost: number;
  readonly deadlineUs: number;
  readonly ticket: T;
}

const ADMITTED: TakeArrival = { kind: 'admitted' };
const WAITING: TakeArrival = { kind: 'waiting' };
const NOTHING: TakeDecisions<never> = { admitted: [], timedOut: [] };

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
   * `ticket` comes back from `poll` or `close` if it waits. Throws only
   * for a bad cost while nothing waits (see the rules).
   */
  arrive(cost: number, timeoutMs: number, ticket: T, nowUs: number): TakeArrival {
    const pool = this.host.slot.pool;
    if (this.closed) return refused('closed', 'the agent is closed', pool);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
      return { kind: 'refused', error: new AgentError('invalid-argument', `timeoutMs must be a non-negative integer, got ${timeoutMs}`) };
    }
    const slot = this.host.slot;
    if (this.waiters.length === 0 && slot.takeAt(cost, nowUs)) return ADMITTED;
    if (cost > slot.costMaxTokens) {
      return refused('never-fits', `cost ${cost} exceeds the largest lease of pool ${pool} (${slot.costMaxTokens})`, pool);
    }
    if (!(cost >= 1 && Number.isSafeInteger(cost))) {
      return refused('invalid-argument', `cost must be a positive integer, got ${cost}`, pool);
    }
    this.waiters.push({ cost, deadlineUs: nowUs + timeoutMs * US_PER_MS, ticket });
    this.host.waitingTokens += cost;
    return WAITING;
  }

  /** poll — at `nowUs`: admits waiters from the head while their cost fits, then times out those due (see the rules). */
  poll(nowUs: number): TakeDecisions<T> {
    if (this.waiters.length === 0) return NOTHING;
    const slot = this.host.slot;
    const admitted: T[] = [];
    const timedOut: T[] = [];
    let head = 0;
    for (; head < this.waiters.length; head += 1) {
      const waiter = this.waiters[head] as Waiter<T>;
      if (slot.canTakeAt(waiter.cost, nowUs) && slot.takeAt(waiter.cost, nowUs)) admitted.push(waiter.ticket);
      else if (nowUs >= waiter.deadlineUs) timedOut.push(waiter.ticket);
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
    return admitted.length === 0 && timedOut.length === 0 ? NOTHING : { admitted, timedOut };
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
    const tickets = this.waiters.map((waiter) => waiter.ticket);
    for (const waiter of this.waiters) this.host.waitingTokens -= waiter.cost;
    this.waiters = [];
    return tickets;
  }
}

function refused(code: 'closed' | 'never-fits' | 'invalid-argument', message: string, pool: string): TakeArrival {
  return { kind: 'refused', error: new AgentError(code, message, { pool }) };
}
