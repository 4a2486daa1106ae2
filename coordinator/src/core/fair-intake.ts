/**
 * FairIntake: requests taken off the bus, waiting to be handled, served a
 * turn per identity, so that a client that floods delays itself and not its
 * neighbours.
 *
 * Every request shares one subscription and one event loop: handled in the
 * order they arrive, one identity sending tens of thousands a second puts
 * all of them in front of another identity's first request. Taking a
 * request in costs far less than handling it, so the adapter takes every
 * message in here as it arrives and handles them from here in turns.
 *
 * Rules:
 * - Each identity (the subject's identity token) has its own queue, first
 *   in first out, so one agent's requests keep their order.
 * - `take` serves identities round robin, one request each per round:
 *   an identity's first request waits behind at most one request of each
 *   other identity with requests queued, however many those have.
 * - At most `capacity` requests are queued in all. When full, the newest
 *   request of the longest queue is shed (the adapter answers it
 *   `unavailable` with a retry hint); a request of a shorter queue takes
 *   its place, so a full intake never refuses a quiet identity's request
 *   to keep a flooder's.
 * - Work per request is O(1): queues are arrays read from a head index,
 *   identities in turn are a queue of their own, and the longest queue is
 *   tracked as requests arrive (a flooder is the one that keeps arriving).
 * - Names off the wire are keys of a `Map` only; an identity's entry is
 *   dropped when its queue empties, so memory follows what is queued.
 */
import { PROTOCOL_VERSION, type ErrorReply } from '@tokenlease/shared';

class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head += 1;
    // Compact once the read half dominates, so memory follows the queue.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  pop(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    return this.items.pop();
  }
}

/** Offered — what `offer` did: queued the request, or shed one (it, or the newest of the longest queue). */
export type Offered<T> = { readonly queued: true; readonly shed: T | null } | { readonly queued: false; readonly shed: T };

/**
 * DEFAULT_INTAKE_CAPACITY — requests queued in all before the longest queue
 * sheds: about 100 ms of work at full speed. A larger intake keeps more of
 * a flood's buffers alive for the garbage collector to walk, and its pauses
 * delay everyone (65,536: another identity's renewals p50 0.6 s under a
 * flood in CI, against 7–39 ms). A burst larger than this is shed in part
 * and asked again after the retry hint.
 */
export const DEFAULT_INTAKE_CAPACITY = 4096;

export class FairIntake<T> {
  private readonly queues = new Map<string, Fifo<T>>();
  /** Identities with requests queued, in turn order; each appears once. */
  private readonly turns = new Fifo<string>();
  private queued = 0;
  /** The identity whose queue was the longest when last seen growing, or null. */
  private longest: string | null = null;

  constructor(readonly capacity = DEFAULT_INTAKE_CAPACITY) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`intake capacity must be a positive integer, not ${capacity}`);
  }

  /** size — requests queued. */
  get size(): number {
    return this.queued;
  }

  /** identities — identities with requests queued. */
  get identities(): number {
    return this.queues.size;
  }

  /**
   * offer — queues `item` of `identity`; when the intake is full, sheds the
   * newest request of the longest queue instead (which may be `item`).
   */
  offer(identity: string, item: T): Offered<T> {
    let queue = this.queues.get(identity);
    let shed: T | null = null;
    if (this.queued >= this.capacity) {
      const longest = this.longest === null ? undefined : this.queues.get(this.longest);
      if (longest === undefined || queue === longest || (queue !== undefined && queue.size >= longest.size)) {
        return { queued: false, shed: item };
      }
      shed = longest.pop() as T;
      this.queued -= 1;
    }
    if (queue === undefined) {
      queue = new Fifo<T>();
      this.queues.set(identity, queue);
      this.turns.push(identity);
    }
    queue.push(item);
    this.queued += 1;
    const longest = this.longest === null ? undefined : this.queues.get(this.longest);
    if (longest === undefined || queue.size > longest.size) this.longest = identity;
    return { queued: true, shed };
  }

  /** take — the next request in turn (the head of the next identity's queue), or undefined when none is queued. */
  take(): T | undefined {
    for (let identity = this.turns.shift(); identity !== undefined; identity = this.turns.shift()) {
      const queue = this.queues.get(identity);
      if (queue === undefined) continue;
      const item = queue.shift();
      if (item === undefined) {
        // Emptied by shedding while it waited for its turn.
        this.forget(identity);
        continue;
      }
      this.queued -= 1;
      if (queue.size > 0) this.turns.push(identity);
      else this.forget(identity);
      return item;
    }
    return undefined;
  }

  private forget(identity: string): void {
    this.queues.delete(identity);
    if (this.longest === identity) this.longest = null;
  }
}

/** INTAKE_RETRY_AFTER_MS — how long a shed request is told to wait before asking again. */
export const INTAKE_RETRY_AFTER_MS = 250;

/**
 * shedReply — the answer to a request the intake shed: `unavailable`, not
 * the requester's fault, with a retry hint, quoting the request's seq when
 * it has one (so its sender matches the answer to it); nothing changed.
 * Shedding must cost far less than handling, or a flood that fills the
 * intake slows the reading of everyone's requests: the seq is read by a
 * scan of the bytes, not by parsing the message.
 */
export function shedReply(payload: Uint8Array): ErrorReply {
  return {
    v: PROTOCOL_VERSION,
    kind: 'error',
    seq: seqOf(payload),
    code: 'unavailable',
    fault: 'coordinator',
    message: 'the coordinator takes in more requests of your identity than its turn allows; ask again',
    retryAfterMs: INTAKE_RETRY_AFTER_MS,
  };
}

const SEQ_KEY = [...'"seq":'].map((c) => c.charCodeAt(0));
const ZERO = 48;
const NINE = 57;

/** seqOf — the first `"seq":<digits>` of `payload` as a safe integer, or null (the answer then names no seq). */
export function seqOf(payload: Uint8Array): number | null {
  const last = payload.length - SEQ_KEY.length;
  outer: for (let i = 0; i <= last; i += 1) {
    for (let j = 0; j < SEQ_KEY.length; j += 1) if (payload[i + j] !== SEQ_KEY[j]) continue outer;
    let seq = 0;
    let digits = 0;
    for (let k = i + SEQ_KEY.length; k < payload.length; k += 1) {
      const c = payload[k] as number;
      if (c < ZERO || c > NINE) break;
      seq = seq * 10 + (c - ZERO);
      digits += 1;
    }
    return digits > 0 && digits <= 16 && Number.isSafeInteger(seq) ? seq : null;
  }
  return null;
}
