/**
 * Recorded traces the sweep replays (`--trace FILE`): one arrival a line,
 * in JSON Lines or CSV (docs/trace-format.md; schema in trace.schema.json).
 *
 * Guarantees: TraceReader takes a file's lines one at a time and keeps only
 * the arrivals (never the text), so a trace streams; every line is checked
 * as it comes, and the first bad one throws a TraceError naming the file,
 * the line number and the field (`trace.jsonl:17: field "cost" must be a
 * positive integer`), so nothing is replayed or reported from a half-read
 * trace. Times are non-decreasing ms from the trace's start, read to the
 * whole µs (rounded); costs are whole tokens; instance ids and keys are
 * opaque strings looked up in a Map, never used to index an object. The
 * replay is a simulator Workload: one agent slot per distinct instance (in
 * order of first appearance), each present for the whole trace, every
 * arrival a `tryTake` (a trace records arrivals, not how long they would
 * wait), the run's duration the trace's span rounded up to a whole ms past
 * its last arrival. Nothing here reads a file or a clock (trace-file.ts does).
 */
import type { Arrival, Workload } from '@tokenlease/sim';

type Presence = Workload['presence'][number];

/** TRACE_LINE_CHARS_MAX — longest line a trace may have, characters; longer lines are refused before parsing. */
export const TRACE_LINE_CHARS_MAX = 4096;
/** TRACE_ARRIVALS_MAX — most arrivals one trace may hold (the replay keeps them all). */
export const TRACE_ARRIVALS_MAX = 10_000_000;
/** TRACE_SPAN_MS_MAX — latest arrival time, ms from the trace's start (24 h, as --duration). */
export const TRACE_SPAN_MS_MAX = 86_400_000;
/** TRACE_COST_MAX — largest cost of one arrival, tokens. */
export const TRACE_COST_MAX = 1_000_000_000;
/** TRACE_ID_CHARS_MAX — longest instance id or key, characters. */
export const TRACE_ID_CHARS_MAX = 256;

/** TraceErrorCode — why a trace was refused: a bad line, or a limit of the whole trace. */
export type TraceErrorCode = 'bad-line' | 'too-many-instances' | 'too-many-arrivals' | 'empty' | 'unreadable';

/**
 * TraceError — a refused trace. `file` is the path as given, `line` the
 * 1-based line number (0 when the fault is the whole trace's), `field` the
 * field at fault or null; `message` is one line starting `file:line:`.
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

/** Trace — a replayable trace: the simulator's arrivals and the instance ids behind its agent slots. */
export interface Trace {
  /** Arrivals (agent slot = index into `instances`), presence and demand of each slot. */
  readonly workload: Workload;
  /** Instance ids in slot order (order of first appearance). */
  readonly instances: readonly string[];
  /** Duration of the replay, whole ms: the last arrival's time rounded down, plus 1. */
  readonly durationMs: number;
}

const FIELDS = ['tMs', 'instance', 'cost', 'key'] as const;
type Field = (typeof FIELDS)[number];
const DECIMAL = /^\d+(?:\.\d+)?$/;
const WHOLE = /^\d+$/;

/** One arrival's fields as read, before the checks that need the trace so far. */
interface Fields {
  readonly tMs: unknown;
  readonly instance: unknown;
  readonly cost: unknown;
  readonly key: unknown;
}

/**
 * TraceReader — reads one trace's lines in order; `instancesMax` bounds the
 * distinct instances (the sweep's agent limit). The first non-blank line
 * picks the format: `{` starts JSON Lines, anything else must be the CSV
 * header. Blank lines are skipped (they still count for line numbers).
 */
export class TraceReader {
  private lineNumber = 0;
  private csvColumns: readonly Field[] | null = null;
  private format: 'jsonl' | 'csv' | null = null;
  private lastTMs = 0;
  private readonly slots = new Map<string, number>();
  private readonly arrivals: Arrival[] = [];
  private readonly offeredTokens: number[] = [];

  /** `keyOnly`: replay only the arrivals of that key (every line is still checked, time order included); null: all. */
  constructor(
    private readonly file: string,
    private readonly instancesMax: number,
    private readonly keyOnly: string | null = null,
  ) {}

  /** line — the next line, without its line ending (a trailing `\r` is dropped). Throws TraceError if it is bad. */
  line(raw: string): void {
    this.lineNumber += 1;
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.length > TRACE_LINE_CHARS_MAX) this.fail(null, `line is longer than ${TRACE_LINE_CHARS_MAX} characters`);
    if (text.trim() === '') return;
    if (this.format === null) {
      this.format = text.trimStart().startsWith('{') ? 'jsonl' : 'csv';
      if (this.format === 'csv') return void (this.csvColumns = this.readHeader(text));
    }
    this.add(this.format === 'jsonl' ? this.readJson(text) : this.readCsv(text));
  }

  /** finish — the replay of every line read; throws TraceError for a trace without arrivals. */
  finish(): Trace {
    const last = this.arrivals[this.arrivals.length - 1];
    if (last === undefined && this.keyOnly !== null)
      throw new TraceError('empty', this.file, 0, null, `has no arrivals of key ${JSON.stringify(this.keyOnly)}`);
    if (last === undefined)
      throw new TraceError('empty', this.file, 0, null, 'has no arrivals; a trace needs at least one line after any header');
    const durationMs = Math.floor(last.tUs / 1000) + 1;
    const instances = [...this.slots.keys()];
    const presence: Presence[] = instances.map((_, agent) => ({
      agent,
      incarnation: 0,
      fromUs: 0,
      toUs: durationMs * 1000,
      crashes: false,
    }));
    const demandPerSecond = this.offeredTokens.map((tokens) => (tokens * 1000) / durationMs);
    return { workload: { arrivals: this.arrivals, presence, demandPerSecond }, instances, durationMs };
  }

  private fail(field: string | null, problem: string): never {
    const where = field === null ? '' : `field ${JSON.stringify(field)} `;
    throw new TraceError('bad-line', this.file, this.lineNumber, field, `${where}${problem}`);
  }

  private readHeader(text: string): readonly Field[] {
    const names = text.split(',').map((name) => name.trim());
    const form = 'a CSV trace starts with the header tMs,instance,cost,key (cost and key optional), a JSON Lines trace with {';
    for (const name of names) {
      if (!(FIELDS as readonly string[]).includes(name))
        this.fail(null, `header column ${JSON.stringify(name)} is not a trace field; ${form}`);
    }
    if (new Set(names).size !== names.length) this.fail(null, `header names a column twice; ${form}`);
    for (const required of ['tMs', 'instance'] as const) {
      if (!names.includes(required)) this.fail(null, `header lacks column ${JSON.stringify(required)}; ${form}`);
    }
    return names as Field[];
  }

  private readJson(text: string): Fields {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.fail(null, 'is not a JSON object; a JSON Lines trace has one object a line, like {"tMs":0,"instance":"a"}');
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) this.fail(null, 'is not a JSON object');
    const own = value as Record<string, unknown>;
    for (const name of Object.keys(own)) {
      if (!(FIELDS as readonly string[]).includes(name)) this.fail(name, `is not a trace field; use tMs, instance, cost and key`);
    }
    const field = (name: Field): unknown => (Object.hasOwn(own, name) ? own[name] : undefined);
    return { tMs: field('tMs'), instance: field('instance'), cost: field('cost'), key: field('key') };
  }

  private readCsv(text: string): Fields {
    const columns = this.csvColumns ?? [];
    const cells = text.split(',');
    if (text.includes('"')) this.fail(null, 'has a quote; trace CSV has no quoting, so ids and keys may not hold commas or quotes');
    if (cells.length !== columns.length)
      this.fail(null, `has ${cells.length} cells; the header has ${columns.length} (${columns.join(',')})`);
    const cell = (name: Field): string | undefined => {
      const at = columns.indexOf(name);
      return at < 0 ? undefined : cells[at];
    };
    const number = (name: Field, pattern: RegExp): unknown => {
      const got = cell(name);
      if (got === undefined || (got === '' && name === 'cost')) return undefined;
      return pattern.test(got) ? Number(got) : got;
    };
    const key = cell('key');
    return { tMs: number('tMs', DECIMAL), instance: cell('instance'), cost: number('cost', WHOLE), key: key === '' ? undefined : key };
  }

  private add(fields: Fields): void {
    const tMs = this.checkTime(fields.tMs);
    const instance = this.checkId('instance', fields.instance, true) as string;
    const cost = fields.cost === undefined ? 1 : fields.cost;
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > TRACE_COST_MAX) {
      this.fail('cost', `must be a positive integer up to ${TRACE_COST_MAX} (tokens; default 1), not ${JSON.stringify(cost)}`);
    }
    const key = this.checkId('key', fields.key, false);
    if (this.keyOnly !== null && key !== this.keyOnly) {
      // Another key's arrival: checked, ordered, not replayed.
      this.lastTMs = tMs;
      return;
    }
    if (this.arrivals.length >= TRACE_ARRIVALS_MAX) {
      throw new TraceError(
        'too-many-arrivals',
        this.file,
        this.lineNumber,
        null,
        `has more than ${TRACE_ARRIVALS_MAX} arrivals; split the trace`,
      );
    }
    const agent = this.slotOf(instance);
    this.lastTMs = tMs;
    this.offeredTokens[agent] = (this.offeredTokens[agent] ?? 0) + cost;
    this.arrivals.push({ tUs: Math.round(tMs * 1000), agent, incarnation: 0, cost, waitMs: 0 });
  }

  private checkTime(tMs: unknown): number {
    if (typeof tMs !== 'number' || !Number.isFinite(tMs) || tMs < 0 || tMs > TRACE_SPAN_MS_MAX) {
      const got = tMs === undefined ? 'it is missing' : `not ${JSON.stringify(tMs)}`;
      this.fail('tMs', `must be a number of ms in [0, ${TRACE_SPAN_MS_MAX}] from the trace's start; ${got}`);
    }
    if (tMs < this.lastTMs) this.fail('tMs', `must not decrease: ${tMs} comes after ${this.lastTMs}; sort the trace by time`);
    return tMs;
  }

  private checkId(field: 'instance' | 'key', value: unknown, required: boolean): string | undefined {
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || value === '' || value.length > TRACE_ID_CHARS_MAX) {
      this.fail(
        field,
        `must be a non-empty string of at most ${TRACE_ID_CHARS_MAX} characters${value === undefined ? '; it is missing' : ''}`,
      );
    }
    return value;
  }

  private slotOf(instance: string): number {
    const known = this.slots.get(instance);
    if (known !== undefined) return known;
    if (this.slots.size >= this.instancesMax) {
      throw new TraceError(
        'too-many-instances',
        this.file,
        this.lineNumber,
        'instance',
        `field "instance": ${JSON.stringify(instance)} would be instance ${this.slots.size + 1}; the sweep simulates at most ${this.instancesMax} agents`,
      );
    }
    this.slots.set(instance, this.slots.size);
    return this.slots.size - 1;
  }
}

/** readTraceLines — a TraceReader fed every line of `lines`: the parsing of a trace held in memory (tests, small files). */
export function readTraceLines(file: string, lines: Iterable<string>, instancesMax: number, keyOnly: string | null = null): Trace {
  const reader = new TraceReader(file, instancesMax, keyOnly);
  for (const line of lines) reader.line(line);
  return reader.finish();
}
