/**
 * JSON access logs as traces (`--trace-format nginx-json | envoy-json`): one
 * request a line, a JSON object with many fields, of which the mapped ones
 * (trace-fields.ts) give the arrival's time, instance, cost and key.
 *
 * Guarantees: every line is checked as it comes; a line that is not a JSON
 * object, or lacks its mapped time or instance, or holds one that is not
 * what the mapping says, throws a TraceError naming the file, the line and
 * the field, and never the field's value (a log line can hold anything).
 * Other fields are ignored, however many. Lines need not be in time order
 * (a log is written as requests complete): TraceArrivals sorts them,
 * stably. A key is a secret: it is hashed as soon as it is read
 * (`hashKey`, the middleware's HMAC construction), and only its hashed name
 * is kept; a line without its key (absent, null, "" or "-", as nginx writes
 * an empty variable) has none. Times are read to the whole µs exactly
 * (trace-time.ts).
 */
import { fieldValue, INSTANCE_UNMAPPED, type AccessLogFormat, type FieldPath, type TraceFields } from './trace-fields.js';
import { memberText } from './json-source.js';
import { decimalUs, isoDateUs, jsonNumberUs } from './trace-time.js';
import {
  TRACE_COST_MAX,
  TRACE_ID_CHARS_MAX,
  TRACE_TIME_MS_MAX,
  TRACE_TIME_US_MAX,
  TraceError,
  type TraceArrivals,
  type TraceLineReader,
} from './trace.js';

/** ACCESS_LOG_LINE_CHARS_MAX — longest access-log line, characters (logs carry user agents, paths, headers); longer ones are refused. */
export const ACCESS_LOG_LINE_CHARS_MAX = 16_384;

/** AccessLogSource — how to read an access log: its format, its fields, and the hash that names its keys. */
export interface AccessLogSource {
  readonly format: AccessLogFormat;
  readonly fields: TraceFields;
  /** hashKey — the name a raw key goes by in reports (`<rule>:<digest>`); the raw key goes no further. */
  readonly hashKey: (rawKey: string) => string;
}

/** NO_KEY — the values that mean a line has no key: absent, null, empty, or nginx's "-" for an empty variable. */
const NO_KEY: ReadonlySet<unknown> = new Set([undefined, null, '', '-']);
/** NUMERIC — a time string read as a number of the time's unit, not as a date. */
const NUMERIC = /^\d+(?:\.\d+)?$/;
/** WHOLE — a cost string read as a whole number of tokens. */
const WHOLE = /^\d+$/;

/** kind — what a JSON value is, for an error that must not show it. */
function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** AccessLogReader — reads one access log's lines into `arrivals`. Blank lines are skipped (they still count for line numbers). */
export class AccessLogReader implements TraceLineReader {
  readonly lineCharsMax = ACCESS_LOG_LINE_CHARS_MAX;
  private lineNumber = 0;
  private readonly file: number;

  constructor(
    private readonly path: string,
    private readonly arrivals: TraceArrivals,
    private readonly source: AccessLogSource,
  ) {
    this.file = arrivals.file(path, source.fields.time.text);
  }

  line(raw: string): void {
    this.lineNumber += 1;
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.length > ACCESS_LOG_LINE_CHARS_MAX) this.fail(null, `line is longer than ${ACCESS_LOG_LINE_CHARS_MAX} characters`);
    if (text.trim() === '') return;
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      record = undefined;
    }
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      this.fail(null, `is not a JSON object; a ${this.source.format} log has one JSON object a line`);
    }
    const { fields } = this.source;
    const tUs = this.time(fieldValue(record, fields.time), fields.time, text);
    const instance = fields.instance === null ? INSTANCE_UNMAPPED : this.instance(fieldValue(record, fields.instance), fields.instance);
    const cost = fields.cost === null ? 1 : this.cost(fieldValue(record, fields.cost), fields.cost);
    const key = fields.key === null ? undefined : this.key(fieldValue(record, fields.key), fields.key);
    this.arrivals.add(this.file, this.lineNumber, tUs, instance, cost, key);
  }

  private fail(path: FieldPath | null, problem: string, name?: string): never {
    const where = path === null ? '' : `field ${JSON.stringify(path.text)} (${name ?? ''}) `;
    throw new TraceError('bad-line', this.path, this.lineNumber, path?.text ?? null, `${where}${problem}`);
  }

  private missing(path: FieldPath, name: string): never {
    const hint = name === 'instance' ? `; map another with --trace-field instance=PATH, or none with --trace-field instance=` : '';
    this.fail(path, `is missing${hint}`, name);
  }

  private time(value: unknown, path: FieldPath, text: string): number {
    if (value === undefined || value === null) this.missing(path, 'time');
    const unit = this.source.fields.timeUnit;
    const tUs =
      typeof value === 'number'
        ? jsonNumberUs(value, unit, () => memberText(text, path.names))
        : typeof value !== 'string'
          ? null
          : NUMERIC.test(value)
            ? decimalUs(value, unit)
            : isoDateUs(value);
    if (tUs === null || tUs > TRACE_TIME_US_MAX) {
      const units = unit === 's' ? 'seconds' : unit === 'ms' ? 'milliseconds' : 'microseconds';
      this.fail(
        path,
        `must be ${units} since the Unix epoch (a number or a numeric string, at most ${TRACE_TIME_MS_MAX} ms) or an ISO 8601 date with its zone, like 2025-12-02T08:00:00.123Z; it is ${kind(value)} that is neither`,
        'time',
      );
    }
    return tUs;
  }

  private instance(value: unknown, path: FieldPath): string {
    if (value === undefined || value === null || value === '') this.missing(path, 'instance');
    const id = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    if (typeof id !== 'string' || id.length > TRACE_ID_CHARS_MAX)
      this.fail(path, `must be a string of 1 to ${TRACE_ID_CHARS_MAX} characters or a number; it is ${kind(value)}`, 'instance');
    return id;
  }

  private cost(value: unknown, path: FieldPath): number {
    if (value === undefined || value === null) this.fail(path, 'is missing; a mapped cost must be on every line', 'cost');
    const cost = typeof value === 'string' && WHOLE.test(value) ? Number(value) : value;
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > TRACE_COST_MAX)
      this.fail(
        path,
        `must be a whole number of tokens in [1, ${TRACE_COST_MAX}] (a number or a numeric string); it is ${kind(value)}`,
        'cost',
      );
    return cost;
  }

  private key(value: unknown, path: FieldPath): string | undefined {
    if (NO_KEY.has(value)) return undefined;
    if (typeof value === 'number' && Number.isFinite(value)) return this.source.hashKey(String(value));
    if (typeof value !== 'string') this.fail(path, `must be a string or a number; it is ${kind(value)}`, 'key');
    return this.source.hashKey(value);
  }
}
