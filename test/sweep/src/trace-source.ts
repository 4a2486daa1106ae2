/**
 * Which reader reads a trace's files: the tokenlease format's
 * (trace-tokenlease.ts) or an access log's (access-log.ts). Every file of a
 * trace is in one format, and its arrivals go into one TraceArrivals.
 */
import { AccessLogReader, type AccessLogSource } from './access-log.js';
import { TokenleaseReader } from './trace-tokenlease.js';
import { TraceArrivals, type Trace, type TraceLineReader, type TraceReadOptions } from './trace.js';

/** TraceSource — the format of a trace's files, and for an access log its fields and key hash. */
export type TraceSource = { readonly format: 'tokenlease' } | AccessLogSource;

/** TOKENLEASE_SOURCE — the tokenlease format, the default. */
export const TOKENLEASE_SOURCE: TraceSource = { format: 'tokenlease' };

/** lineReader — the reader of the file `path` in `source`'s format, adding to `arrivals`. */
export function lineReader(source: TraceSource, path: string, arrivals: TraceArrivals): TraceLineReader {
  return source.format === 'tokenlease' ? new TokenleaseReader(path, arrivals) : new AccessLogReader(path, arrivals, source);
}

/** readTraceLines — the replay of files held in memory, `[path, lines]` each, in order: the parsing of a trace without I/O (tests, small traces). */
export function readTraceLines(
  files: ReadonlyArray<readonly [string, Iterable<string>]>,
  source: TraceSource,
  options: TraceReadOptions,
): Trace {
  const arrivals = new TraceArrivals(options);
  for (const [path, lines] of files) {
    const reader = lineReader(source, path, arrivals);
    for (const line of lines) reader.line(line);
  }
  return arrivals.finish();
}
