/**
 * Where each trace field comes from in a JSON access-log line: the formats
 * `--trace-format` names, their default fields, and `--trace-field
 * NAME=PATH` (docs/trace-format.md, "Access logs").
 *
 * A PATH is a field name, or names joined by `.` to reach into nested
 * objects (`request.headers.x-api-key`); inside a name, `\.` is a dot and
 * `\\` a backslash (so `http\.method` is the top-level field "http.method"),
 * and every other character, `-` and `:` included, is itself. The time's
 * PATH may end in `:s`, `:ms` or `:us`, the unit of a numeric time (default
 * s, as nginx's $msec); `\:` keeps such an ending part of the name. An
 * empty PATH maps nothing: no cost (1 token each), no key, or, for the
 * instance, one instance named `log`.
 *
 * Guarantees: `parseTraceFields` returns a mapping with a time PATH, each
 * PATH 1 to TRACE_FIELD_PATH_CHARS_MAX characters of at most
 * TRACE_FIELD_DEPTH_MAX names, or throws a SweepArgsError naming
 * `--trace-field`; `formatTraceFields` prints what parses back to the same
 * mapping. `fieldValue` looks names up as own properties only: a name off
 * the command line never reaches a prototype.
 */
import { SweepArgsError } from './args-error.js';
import { TIME_UNITS, type TimeUnit } from './trace-time.js';

/** TraceFormat — what a trace file is: tokenlease's own format, or a JSON access log. */
export type TraceFormat = 'tokenlease' | AccessLogFormat;
/** AccessLogFormat — the JSON access logs `--trace-format` reads. */
export type AccessLogFormat = 'nginx-json' | 'envoy-json';
/** TRACE_FORMATS — every format, the default first. */
export const TRACE_FORMATS: readonly TraceFormat[] = ['tokenlease', 'nginx-json', 'envoy-json'];

/** TraceFieldName — a trace field an access log's fields map to. */
export type TraceFieldName = 'time' | 'instance' | 'cost' | 'key';
const FIELD_NAMES: readonly TraceFieldName[] = ['time', 'instance', 'cost', 'key'];

/** TRACE_FIELD_PATH_CHARS_MAX — longest PATH of `--trace-field`, characters. */
export const TRACE_FIELD_PATH_CHARS_MAX = 256;
/** TRACE_FIELD_DEPTH_MAX — most names one PATH joins. */
export const TRACE_FIELD_DEPTH_MAX = 16;

/** FieldPath — a PATH: its text as typed (without the time's unit), and its names. */
export interface FieldPath {
  readonly text: string;
  readonly names: readonly string[];
}

/** TraceFields — where each trace field is in an access-log line; null: not mapped. */
export interface TraceFields {
  readonly time: FieldPath;
  /** The unit of a numeric time. */
  readonly timeUnit: TimeUnit;
  readonly instance: FieldPath | null;
  readonly cost: FieldPath | null;
  readonly key: FieldPath | null;
}

/** INSTANCE_UNMAPPED — the one instance of an access log without an instance field. */
export const INSTANCE_UNMAPPED = 'log';

const path = (text: string): FieldPath => ({ text, names: [text] });

/**
 * ACCESS_LOG_DEFAULTS — each format's fields: nginx's `$msec` and
 * `$hostname` as the log_format names them; Envoy's `%START_TIME%` and
 * `%UPSTREAM_HOST%` as its JSON formats (and Istio's) name them, the
 * upstream host being the instance that served the request.
 */
export const ACCESS_LOG_DEFAULTS: ReadonlyMap<AccessLogFormat, TraceFields> = new Map<AccessLogFormat, TraceFields>([
  ['nginx-json', { time: path('msec'), timeUnit: 's', instance: path('hostname'), cost: null, key: null }],
  ['envoy-json', { time: path('start_time'), timeUnit: 's', instance: path('upstream_host'), cost: null, key: null }],
]);

/** parseTraceFormat — `--trace-format`'s value. */
export function parseTraceFormat(text: string): TraceFormat {
  const format = TRACE_FORMATS.find((one) => one === text);
  if (format === undefined)
    throw new SweepArgsError('--trace-format', `${JSON.stringify(text)} is not a trace format; use ${TRACE_FORMATS.join(', ')}`);
  return format;
}

/** parseTraceFields — `format`'s fields with each `NAME=PATH` of `--trace-field` over them (each NAME at most once). */
export function parseTraceFields(format: AccessLogFormat, texts: readonly string[]): TraceFields {
  const defaults = ACCESS_LOG_DEFAULTS.get(format);
  if (defaults === undefined) throw new Error(`no default fields for ${format}`);
  let fields: TraceFields = defaults;
  const given = new Set<string>();
  for (const text of texts) {
    const at = text.indexOf('=');
    const name = FIELD_NAMES.find((one) => one === text.slice(0, at));
    if (at < 0 || name === undefined) {
      throw new SweepArgsError(
        '--trace-field',
        `${JSON.stringify(text)} is not NAME=PATH with NAME one of ${FIELD_NAMES.join(', ')}, like key=request.headers.x-api-key`,
      );
    }
    if (given.has(name)) throw new SweepArgsError('--trace-field', `maps ${name} twice; give each NAME once`);
    given.add(name);
    fields = withField(fields, name, text.slice(at + 1));
  }
  return fields;
}

function withField(fields: TraceFields, name: TraceFieldName, text: string): TraceFields {
  if (name !== 'time') return { ...fields, [name]: text === '' ? null : parsePath(name, text) };
  const chars = unescaped(name, text);
  let colon = chars.length - 1;
  while (colon >= 0 && !(chars[colon]?.char === ':' && chars[colon]?.escaped === false)) colon -= 1;
  const unit = TIME_UNITS.find((one) => one === joined(chars.slice(colon + 1)));
  if (colon >= 0 && unit !== undefined) {
    return { ...fields, time: pathOf(name, text.slice(0, text.length - unit.length - 1)), timeUnit: unit };
  }
  return { ...fields, time: pathOf(name, text), timeUnit: 's' };
}

function pathOf(name: TraceFieldName, text: string): FieldPath {
  if (text === '') throw new SweepArgsError('--trace-field', `${name} needs a PATH: every line needs a time`);
  return parsePath(name, text);
}

interface Char {
  readonly char: string;
  readonly escaped: boolean;
}

const joined = (chars: readonly Char[]): string => chars.map((c) => c.char).join('');

/** unescaped — the characters of a PATH, each `\x` read as `x`, escaped. */
function unescaped(name: TraceFieldName, text: string): Char[] {
  const chars: Char[] = [];
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i] ?? '';
    if (char !== '\\') {
      chars.push({ char, escaped: false });
      continue;
    }
    i += 1;
    if (i >= text.length) throw new SweepArgsError('--trace-field', `${name}'s PATH ends in a lone \\; write \\\\ for a backslash`);
    chars.push({ char: text[i] ?? '', escaped: true });
  }
  return chars;
}

function parsePath(name: TraceFieldName, text: string): FieldPath {
  if (text.length > TRACE_FIELD_PATH_CHARS_MAX)
    throw new SweepArgsError('--trace-field', `${name}'s PATH is longer than ${TRACE_FIELD_PATH_CHARS_MAX} characters`);
  const names: string[] = [''];
  for (const c of unescaped(name, text)) {
    if (c.char === '.' && !c.escaped) names.push('');
    else names[names.length - 1] += c.char;
  }
  if (names.includes(''))
    throw new SweepArgsError(
      '--trace-field',
      `${name}'s PATH ${JSON.stringify(text)} has an empty name; write \\. for a dot inside a name`,
    );
  if (names.length > TRACE_FIELD_DEPTH_MAX)
    throw new SweepArgsError('--trace-field', `${name}'s PATH joins more than ${TRACE_FIELD_DEPTH_MAX} names`);
  return { text, names };
}

/** formatTraceFields — `--trace-field` values that parse back to `fields`, one per trace field. */
export function formatTraceFields(fields: TraceFields): string[] {
  return [
    `time=${fields.time.text}:${fields.timeUnit}`,
    `instance=${fields.instance?.text ?? ''}`,
    `cost=${fields.cost?.text ?? ''}`,
    `key=${fields.key?.text ?? ''}`,
  ];
}

/** describeTraceFields — the mapping for reports: each trace field's PATH (the time's with its unit), null where none. */
export function describeTraceFields(fields: TraceFields): Record<TraceFieldName, string | null> {
  return {
    time: `${fields.time.text}:${fields.timeUnit}`,
    instance: fields.instance?.text ?? null,
    cost: fields.cost?.text ?? null,
    key: fields.key?.text ?? null,
  };
}

/** fieldValue — the value at `path` in a parsed JSON line (own properties of nested objects only), or undefined. */
export function fieldValue(line: unknown, path: FieldPath): unknown {
  let value = line;
  for (const name of path.names) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}
