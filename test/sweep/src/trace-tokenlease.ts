/**
 * The tokenlease trace format (`--trace-format tokenlease`, the default):
 * one arrival a line, in JSON Lines or CSV, fields `tMs`, `instance`, `cost`
 * and `key` (docs/trace-format.md; schema in trace.schema.json).
 *
 * Guarantees: TokenleaseReader takes one file's lines one at a time and
 * keeps nothing of the text; every line is checked as it comes, and the
 * first bad one throws a TraceError naming the file, the line and the
 * field. Times are ms in [0, TRACE_TIME_MS_MAX] (from the trace's start or
 * since the Unix epoch), read to the whole µs exactly (trace-time.ts), and
 * never decrease within the file; costs are whole tokens; instance ids and
 * keys (hashed already, opaque) are at most TRACE_ID_CHARS_MAX characters.
 * Unknown fields or columns are refused: this format is the sweep's own.
 */
import { memberText } from './json-source.js';
import { decimalUs, jsonNumberUs } from './trace-time.js';
import {
  TRACE_COST_MAX,
  TRACE_ID_CHARS_MAX,
  TRACE_LINE_CHARS_MAX,
  TRACE_TIME_MS_MAX,
  TRACE_TIME_US_MAX,
  TraceError,
  type TraceArrivals,
  type TraceLineReader,
} from './trace.js';

const FIELDS = ['tMs', 'instance', 'cost', 'key'] as const;
type Field = (typeof FIELDS)[number];
const DECIMAL = /^\d+(?:\.\d+)?$/;
const WHOLE = /^\d+$/;

/** CsvDecimal — a CSV time cell that is a decimal, kept as text to be read to the µs from its digits (JSON.parse never makes one). */
class CsvDecimal {
  constructor(readonly text: string) {}
}

/** One arrival's fields as read, before they are checked. */
interface Fields {
  /** A JSON value, or a CSV cell: a CsvDecimal when it is a decimal, else its text. */
  readonly tMs: unknown;
  readonly instance: unknown;
  readonly cost: unknown;
  readonly key: unknown;
}

/**
 * TokenleaseReader — reads one tokenlease file's lines in order into
 * `arrivals`. The first non-blank line picks the format: `{` starts JSON
 * Lines, anything else must be the CSV header. Blank lines are skipped
 * (they still count for line numbers).
 */
export class TokenleaseReader implements TraceLineReader {
  readonly lineCharsMax = TRACE_LINE_CHARS_MAX;
  private lineNumber = 0;
  private csvColumns: readonly Field[] | null = null;
  private format: 'jsonl' | 'csv' | null = null;
  private lastUs = 0;
  private lastTMs: unknown = 0;
  private readonly file: number;

  constructor(
    private readonly path: string,
    private readonly arrivals: TraceArrivals,
  ) {
    this.file = arrivals.file(path, 'tMs');
  }

  line(raw: string): void {
    this.lineNumber += 1;
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.length > TRACE_LINE_CHARS_MAX) this.fail(null, `line is longer than ${TRACE_LINE_CHARS_MAX} characters`);
    if (text.trim() === '') return;
    if (this.format === null) {
      this.format = text.trimStart().startsWith('{') ? 'jsonl' : 'csv';
      if (this.format === 'csv') return void (this.csvColumns = this.readHeader(text));
    }
    this.add(this.format === 'jsonl' ? this.readJson(text) : this.readCsv(text), text);
  }

  private fail(field: string | null, problem: string): never {
    const where = field === null ? '' : `field ${JSON.stringify(field)} `;
    throw new TraceError('bad-line', this.path, this.lineNumber, field, `${where}${problem}`);
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
    const cost = cell('cost');
    const key = cell('key');
    const tMs = cell('tMs');
    return {
      tMs: tMs !== undefined && DECIMAL.test(tMs) ? new CsvDecimal(tMs) : tMs,
      instance: cell('instance'),
      cost: cost === undefined || cost === '' ? undefined : WHOLE.test(cost) ? Number(cost) : cost,
      key: key === '' ? undefined : key,
    };
  }

  private add(fields: Fields, text: string): void {
    const tUs = this.checkTime(fields.tMs, text);
    const instance = this.checkId('instance', fields.instance, true) as string;
    const cost = fields.cost === undefined ? 1 : fields.cost;
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > TRACE_COST_MAX) {
      this.fail('cost', `must be a positive integer up to ${TRACE_COST_MAX} (tokens; default 1), not ${JSON.stringify(cost)}`);
    }
    const key = this.checkId('key', fields.key, false);
    this.arrivals.add(this.file, this.lineNumber, tUs, instance, cost, key);
  }

  /** checkTime — the arrival's time in whole µs, in range and not before the line before it. */
  private checkTime(tMs: unknown, text: string): number {
    const decimal = tMs instanceof CsvDecimal ? tMs.text : null;
    const tUs =
      decimal !== null
        ? decimalUs(decimal, 'ms')
        : typeof tMs === 'number'
          ? jsonNumberUs(tMs, 'ms', () => memberText(text, ['tMs']))
          : null;
    const shown = decimal ?? tMs;
    if (tUs === null || tUs > TRACE_TIME_US_MAX) {
      const got = tMs === undefined ? 'it is missing' : `not ${JSON.stringify(shown)}`;
      this.fail('tMs', `must be a number of ms in [0, ${TRACE_TIME_MS_MAX}], from the trace's start or since the Unix epoch; ${got}`);
    }
    if (tUs < this.lastUs) {
      this.fail('tMs', `must not decrease: ${String(shown)} comes after ${String(this.lastTMs)}; sort the trace by time`);
    }
    this.lastUs = tUs;
    this.lastTMs = shown;
    return tUs;
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
}
