/**
 * Recorded traces the sweep replays (`--trace FILE ...`): the arrivals of one
 * or more files, merged into one replay (docs/trace-format.md). The line
 * formats are trace-tokenlease.ts (the tokenlease JSON Lines and CSV) and
 * access-log.ts (nginx and Envoy JSON access logs); this file holds what
 * every format shares: the limits, the error, and TraceArrivals, which
 * gathers the arrivals of every file and turns them into a replay.
 *
 * Guarantees: each file is read and checked alone (its own line numbers; a
 * tokenlease file's time order within it), and the first bad line throws a
 * TraceError naming the file, the line number and the field
 * (`trace.jsonl:17: field "cost" must be a positive integer`), so nothing is
 * replayed or reported from a half-read trace. Times are whole µs, exact
 * (trace-time.ts), from 0 to TRACE_TIME_MS_MAX ms: from a trace's start or
 * since the Unix epoch alike. The arrivals of all files are merged by time,
 * stably: equal times keep file order, then line order. The replay's time 0
 * is the earliest arrival rounded down to a whole ms (a trace that starts at
 * 0 replays as it reads), and the last arrival may come at most
 * TRACE_SPAN_MS_MAX after it; the run lasts that span rounded down to a
 * whole ms, plus 1. Instance ids and keys are opaque strings looked up in
 * Maps, never used to index an object; instances are one agent slot each
 * across all files, in order of first arrival (so the order lines come in
 * changes nothing once times are merged), present for the whole trace; every arrival is a `tryTake` (a trace records
 * arrivals, not how long they would wait). The limits (instances, arrivals,
 * keys) are the whole trace's. Nothing here reads a file or a clock
 * (trace-file.ts does).
 */
import type { Arrival, Workload } from '@tokenlease/sim';

type Presence = Workload['presence'][number];

/** TRACE_LINE_CHARS_MAX — longest line of a tokenlease trace, characters; longer lines are refused before parsing. */
export const TRACE_LINE_CHARS_MAX = 4096;
/** TRACE_ARRIVALS_MAX — most arrivals one trace may hold, all files together (the replay keeps them all). */
export const TRACE_ARRIVALS_MAX = 10_000_000;
/** TRACE_SPAN_MS_MAX — longest a trace may last, ms from its first arrival to its last (24 h, as --duration). */
export const TRACE_SPAN_MS_MAX = 86_400_000;
/**
 * TRACE_TIME_MS_MAX — latest time an arrival may have, ms (from the trace's
 * start, or since the Unix epoch: the year 2255): Number.MAX_SAFE_INTEGER
 * µs rounded down to a whole ms, so every time is an exact integer of µs.
 */
export const TRACE_TIME_MS_MAX = 9_007_199_254_740;
/** TRACE_TIME_US_MAX — TRACE_TIME_MS_MAX in µs. */
export const TRACE_TIME_US_MAX = TRACE_TIME_MS_MAX * 1000;
/** TRACE_COST_MAX — largest cost of one arrival, tokens. */
export const TRACE_COST_MAX = 1_000_000_000;
/** TRACE_ID_CHARS_MAX — longest instance id or key, characters. */
export const TRACE_ID_CHARS_MAX = 256;
/** TRACE_KEYS_MAX — most distinct keys a trace may hold when its keys are kept (`--by-key`). */
export const TRACE_KEYS_MAX = 1_000_000;

/** TraceErrorCode — why a trace was refused: a bad line, or a limit of the whole trace. */
export type TraceErrorCode =
  'bad-line' | 'span-too-long' | 'too-many-instances' | 'too-many-arrivals' | 'too-many-keys' | 'no-keys' | 'empty' | 'unreadable';

/**
 * TraceError — a refused trace. `file` is the path as given (the paths,
 * comma-separated, when the fault is the whole trace's), `line` the 1-based
 * line number in that file (0 when the fault is not one line's), `field`
 * the field at fault or null; `message` is one line starting `file:line:`.
 * No message holds a raw key.
 */
export class TraceError extends Error {
  override readonly name = 'TraceError';
  readonly code: TraceErrorCode;
  readonly file: string;
  readonly line: number;
  readonly field: string | null;

  constructor(code: TraceErrorCode, file: string, line: number, field: string | null, problem: string, options?: ErrorOptions) {
    super(`${line > 0 ? `${file}:${line}` : file}: ${problem}`, options);
    this.code = code;
    this.file = file;
    this.line = line;
    this.field = field;
  }
}

/** TraceKeys — the keys of a trace's arrivals: each arrival's index into `names` (−1: it has no key). */
export interface TraceKeys {
  /** Distinct keys in order of first appearance, as the reports name them (hashed). */
  readonly names: readonly string[];
  /** One entry per arrival of the workload, in the same order. */
  readonly ofArrival: readonly number[];
}

/** Trace — a replayable trace: the simulator's arrivals and the instance ids behind its agent slots. */
export interface Trace {
  /** Arrivals (agent slot = index into `instances`; times in µs from `originMs`), presence and demand of each slot. */
  readonly workload: Workload;
  /** Instance ids in slot order (order of first arrival). */
  readonly instances: readonly string[];
  /** Duration of the replay, whole ms: the last arrival's time rounded down, plus 1. */
  readonly durationMs: number;
  /** The replay's time 0 as the trace writes times: the first arrival rounded down to a whole ms. */
  readonly originMs: number;
  /** The arrivals' keys when they were kept (TraceReadOptions.keepKeys), else null. */
  readonly keys: TraceKeys | null;
}

/** TraceReadOptions — what the replay keeps of the lines read. */
export interface TraceReadOptions {
  /** Most distinct instances (the sweep's agent limit). */
  readonly instancesMax: number;
  /** Replay only the arrivals of this key (as the reports name it); every line is still checked. Null: all. */
  readonly keyOnly: string | null;
  /** Keep each arrival's key (for the per-key report), at most `keysMax` distinct keys. */
  readonly keepKeys: boolean;
  /** Most distinct keys kept; default TRACE_KEYS_MAX. */
  readonly keysMax?: number;
}

/** TraceLineReader — the reader of one file's lines in one format; it adds each arrival to a TraceArrivals. */
export interface TraceLineReader {
  /** Longest line this format allows, characters (the file reader refuses a longer one before it is whole). */
  readonly lineCharsMax: number;
  /** line — the next line, without its line ending (a trailing `\r` is dropped). Throws TraceError if it is bad. */
  line(raw: string): void;
}

/** TraceFile — one file of a trace as TraceArrivals knows it. */
interface TraceFile {
  readonly path: string;
  /** The field that holds the time, as errors name it (`tMs`, or an access log's path). */
  readonly timeField: string;
}

/**
 * TraceArrivals — every arrival of a trace's files, in file order then line
 * order, until `finish` merges them into a replay. Readers call `file` once
 * per file, then `add` for each arrival, checked (times whole µs in range,
 * ids and costs valid); the limits of the whole trace are checked here.
 */
export class TraceArrivals {
  private readonly files: TraceFile[] = [];
  /** Instance ids in order of first appearance in the lines; the slots are numbered in time order by `finish`. */
  private readonly instanceIds = new Map<string, number>();
  private readonly keyIndex = new Map<string, number>();
  // One column per field (file order, then line order): numbers, never a string per arrival.
  private readonly tUs: number[] = [];
  private readonly instance: number[] = [];
  private readonly cost: number[] = [];
  private readonly key: number[] = [];
  private readonly fileOf: number[] = [];
  private readonly lineOf: number[] = [];

  constructor(private readonly options: TraceReadOptions) {}

  /** file — starts the next file, whose times are in `timeField`; returns its index for `add`. */
  file(path: string, timeField: string): number {
    this.files.push({ path, timeField });
    return this.files.length - 1;
  }

  /**
   * add — one arrival of file `file` at line `line`: at `tUs` (whole µs, in
   * [0, TRACE_TIME_US_MAX]) on `instance`, of `cost` tokens, with `key` (as
   * the reports name it) or none. Throws TraceError for a limit of the trace.
   */
  add(file: number, line: number, tUs: number, instance: string, cost: number, key: string | undefined): void {
    if (this.options.keyOnly !== null && key !== this.options.keyOnly) return;
    if (this.tUs.length >= TRACE_ARRIVALS_MAX) {
      this.fail(
        'too-many-arrivals',
        file,
        line,
        null,
        `the trace has more than ${TRACE_ARRIVALS_MAX} arrivals (all files together); split it`,
      );
    }
    const id = this.idOf(instance, file, line);
    const keyAt = this.options.keepKeys && key !== undefined ? this.keyOf(key, file, line) : -1;
    this.tUs.push(tUs);
    this.instance.push(id);
    this.cost.push(cost);
    this.key.push(keyAt);
    this.fileOf.push(file);
    this.lineOf.push(line);
  }

  /** finish — the replay of every arrival added: merged by time, shifted to the trace's origin. Throws TraceError for an empty or too long trace. */
  finish(): Trace {
    const order = this.timeOrder();
    const first = order[0];
    if (first === undefined) this.failWhole('empty', this.emptyProblem());
    if (this.options.keepKeys && this.keyIndex.size === 0) {
      this.failWhole(
        'no-keys',
        'has no keys, so there is no per-key report (--by-key): a tokenlease trace needs a "key" on its lines, an access log --trace-field key=PATH',
      );
    }
    const originUs = Math.floor((this.tUs[first] ?? 0) / 1000) * 1000;
    const arrivals: Arrival[] = [];
    const ofArrival: number[] = [];
    const slotOfId = new Map<number, number>();
    const offeredTokens = Array.from({ length: this.instanceIds.size }, () => 0);
    for (const i of order) {
      const tUs = (this.tUs[i] ?? 0) - originUs;
      if (tUs > TRACE_SPAN_MS_MAX * 1000) this.failSpan(i, tUs);
      const id = this.instance[i] ?? 0;
      const agent = slotOfId.get(id) ?? slotOfId.size;
      slotOfId.set(id, agent);
      const cost = this.cost[i] ?? 1;
      offeredTokens[agent] = (offeredTokens[agent] ?? 0) + cost;
      arrivals.push({ tUs, agent, incarnation: 0, cost, waitMs: 0 });
      ofArrival.push(this.key[i] ?? -1);
    }
    const durationMs = Math.floor((arrivals[arrivals.length - 1]?.tUs ?? 0) / 1000) + 1;
    const names = [...this.instanceIds.keys()];
    const instances = [...slotOfId.keys()].map((id) => names[id] ?? '');
    const presence: Presence[] = instances.map((_, agent) => ({
      agent,
      incarnation: 0,
      fromUs: 0,
      toUs: durationMs * 1000,
      crashes: false,
    }));
    const demandPerSecond = offeredTokens.map((tokens) => (tokens * 1000) / durationMs);
    return {
      workload: { arrivals, presence, demandPerSecond },
      instances,
      durationMs,
      originMs: originUs / 1000,
      keys: this.options.keepKeys ? { names: [...this.keyIndex.keys()], ofArrival } : null,
    };
  }

  /** timeOrder — the arrivals' indices by time, ties in index order (file, then line): no sort when they already are. */
  private timeOrder(): number[] {
    const order = this.tUs.map((_, i) => i);
    const sorted = this.tUs.every((t, i) => i === 0 || t >= (this.tUs[i - 1] ?? 0));
    return sorted ? order : order.sort((a, b) => (this.tUs[a] ?? 0) - (this.tUs[b] ?? 0) || a - b);
  }

  private emptyProblem(): string {
    if (this.options.keyOnly !== null) return `has no arrivals of key ${JSON.stringify(this.options.keyOnly)}`;
    return 'has no arrivals; a trace needs at least one line after any header';
  }

  private failSpan(i: number, tUs: number): never {
    const file = this.fileOf[i] ?? 0;
    const past = `${(tUs / 1000).toFixed(3).replace(/\.?0+$/, '')} ms after the trace's first arrival (rounded down to a whole ms)`;
    const timeField = this.files[file]?.timeField ?? 'tMs';
    this.fail(
      'span-too-long',
      file,
      this.lineOf[i] ?? 0,
      timeField,
      `field ${JSON.stringify(timeField)}: this arrival comes ${past}; a trace may span at most ${TRACE_SPAN_MS_MAX} ms (24 h), so split it`,
    );
  }

  private idOf(instance: string, file: number, line: number): number {
    const known = this.instanceIds.get(instance);
    if (known !== undefined) return known;
    if (this.instanceIds.size >= this.options.instancesMax) {
      this.fail(
        'too-many-instances',
        file,
        line,
        'instance',
        `field "instance": ${JSON.stringify(instance)} would be instance ${this.instanceIds.size + 1}; the sweep simulates at most ${this.options.instancesMax} agents`,
      );
    }
    this.instanceIds.set(instance, this.instanceIds.size);
    return this.instanceIds.size - 1;
  }

  private keyOf(key: string, file: number, line: number): number {
    const known = this.keyIndex.get(key);
    if (known !== undefined) return known;
    const keysMax = this.options.keysMax ?? TRACE_KEYS_MAX;
    if (this.keyIndex.size >= keysMax) {
      this.fail(
        'too-many-keys',
        file,
        line,
        'key',
        `field "key": this would be key ${this.keyIndex.size + 1}; --by-key reports at most ${keysMax} distinct keys`,
      );
    }
    this.keyIndex.set(key, this.keyIndex.size);
    return this.keyIndex.size - 1;
  }

  private fail(code: TraceErrorCode, file: number, line: number, field: string | null, problem: string): never {
    throw new TraceError(code, this.files[file]?.path ?? '', line, field, problem);
  }

  private failWhole(code: TraceErrorCode, problem: string): never {
    throw new TraceError(code, this.files.map((f) => f.path).join(', '), 0, null, problem);
  }
}
