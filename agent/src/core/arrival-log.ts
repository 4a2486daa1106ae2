/**
 * ArrivalLog: the arrivals an agent records for a trace the sweep replays
 * (docs/trace-format.md; the file is written by adapters/trace-recording.ts).
 *
 * Guarantees:
 * - Noting an arrival (`PoolArrivals.note`, from the take paths while a
 *   recording runs) writes three numbers into preallocated typed arrays:
 *   no allocation, no lookup, no I/O, no clock read (the caller's reading
 *   is used). With no recording, the take paths pay one null check.
 * - The buffer holds at most `capacity` arrivals between two drains. An
 *   arrival that finds it full is not kept, and from then on the log is
 *   `stopped` for good with `overflowed` set: a trace with a hole would
 *   understate demand, so a recording stops whole rather than go on with
 *   gaps. Nothing is noted after `stop()`.
 * - `drain` hands every held arrival over in the order noted and empties
 *   the buffer.
 * - Which pools are recorded (PoolSelection) is decided once per pool, by
 *   name: exact names and `prefix*` patterns, and a sampled share of the
 *   pools chosen by a hash of the name, so every instance of a service
 *   samples the same pools (keys) and a sampled key's trace is complete.
 */

import { nameHash32 } from '@tokenlease/shared';

/** ArrivalSink — where one pool's arrivals go while it is recorded. */
export interface ArrivalSink {
  /** note — an arrival of `cost` tokens at `nowUs` (the agent's clock, µs). Allocation-free. */
  note(cost: number, nowUs: number): void;
}

/** ARRIVAL_BUFFER_DEFAULT — arrivals held between two writes of a recording, by default (at 200 ms a write, about 300,000 a second). */
export const ARRIVAL_BUFFER_DEFAULT = 65_536;
/** ARRIVAL_BUFFER_MAX — the most arrivals a recording's buffer may hold (20 bytes each). */
export const ARRIVAL_BUFFER_MAX = 16_777_216;

/** ArrivalLog — the arrivals noted since the last drain, with each one's pool as a small number (`key`). */
export class ArrivalLog {
  private readonly timesUs: Float64Array;
  private readonly costs: Float64Array;
  private readonly keys: Uint32Array;
  private held = 0;
  /** Arrivals noted and kept since the log began. */
  noted = 0;
  /** Whether an arrival found the buffer full (and was lost): the log stopped then. */
  overflowed = false;
  /** Whether nothing more is noted (stop(), or an overflow). */
  stopped = false;

  constructor(readonly capacity: number) {
    this.timesUs = new Float64Array(capacity);
    this.costs = new Float64Array(capacity);
    this.keys = new Uint32Array(capacity);
  }

  /** note — one arrival of pool `key`; lost, and the log stopped, when the buffer is full. */
  note(key: number, cost: number, nowUs: number): void {
    if (this.stopped) return;
    const at = this.held;
    if (at === this.capacity) {
      this.overflowed = true;
      this.stopped = true;
      return;
    }
    this.timesUs[at] = nowUs;
    this.costs[at] = cost;
    this.keys[at] = key;
    this.held = at + 1;
    this.noted += 1;
  }

  /** pending — arrivals held, not yet drained. */
  get pending(): number {
    return this.held;
  }

  /** drain — calls `visit` for every held arrival, in the order noted, then empties the buffer; returns how many. */
  drain(visit: (key: number, cost: number, atUs: number) => void): number {
    const count = this.held;
    for (let i = 0; i < count; i += 1) visit(this.keys[i] as number, this.costs[i] as number, this.timesUs[i] as number);
    this.held = 0;
    return count;
  }

  /** stop — nothing more is noted; what is held can still be drained. */
  stop(): void {
    this.stopped = true;
  }
}

/** PoolArrivals — one pool's sink into a shared ArrivalLog. */
export class PoolArrivals implements ArrivalSink {
  constructor(
    private readonly log: ArrivalLog,
    private readonly key: number,
  ) {}

  note(cost: number, nowUs: number): void {
    this.log.note(this.key, cost, nowUs);
  }
}

/** nameShare — where `name` falls in [0, 1), the same on every instance: its 32-bit name hash (nameHash32) over 2^32. */
export function nameShare(name: string): number {
  return nameHash32(name) / 2 ** 32;
}

/**
 * PoolSelection — which pools a recording takes: those matching a pattern
 * (an exact name, or `prefix*` for every pool starting so; null: every
 * pool), and of those the share `sample` (0 < sample <= 1) whose name
 * hashes below it.
 */
export class PoolSelection {
  private readonly exact = new Set<string>();
  private readonly prefixes: string[] = [];

  constructor(
    patterns: readonly string[] | null,
    private readonly sample: number,
  ) {
    this.all = patterns === null;
    for (const pattern of patterns ?? []) {
      if (pattern.endsWith('*')) this.prefixes.push(pattern.slice(0, -1));
      else this.exact.add(pattern);
    }
  }

  private readonly all: boolean;

  /** takes — whether pool `name` is recorded. */
  takes(name: string): boolean {
    const matches = this.all || this.exact.has(name) || this.prefixes.some((prefix) => name.startsWith(prefix));
    return matches && (this.sample >= 1 || nameShare(name) < this.sample);
  }
}
