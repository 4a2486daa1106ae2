/**
 * readTraceFiles — streams a trace's files, in order, through their line
 * reader (trace-source.ts) into one replay (trace.ts).
 *
 * Guarantees: each file is read in chunks and cut into lines here, not by
 * node:readline, so a line longer than its format allows is refused as soon
 * as that many characters are pending, never buffered whole: memory per
 * line is bounded whatever a file holds. An unreadable file becomes a
 * TraceError (`unreadable`) naming it; a bad line, the reader's TraceError.
 * Nothing is returned until every file has been read and checked.
 */
import { createReadStream } from 'node:fs';
import { lineReader, type TraceSource } from './trace-source.js';
import { TraceArrivals, TraceError, type Trace, type TraceReadOptions } from './trace.js';

const CHUNK_BYTES = 64 * 1024;

/** readTraceFiles — the replay of the trace in `paths` (read in that order) in `source`'s format, kept as `options` say. */
export async function readTraceFiles(paths: readonly string[], source: TraceSource, options: TraceReadOptions): Promise<Trace> {
  const arrivals = new TraceArrivals(options);
  for (const path of paths) await readFile(path, source, arrivals);
  return arrivals.finish();
}

async function readFile(path: string, source: TraceSource, arrivals: TraceArrivals): Promise<void> {
  const reader = lineReader(source, path, arrivals);
  let pending = '';
  try {
    for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: CHUNK_BYTES })) {
      const lines = (pending + (chunk as string)).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) reader.line(line);
      // An unfinished line this long is refused now: the reader fails on it without it growing further.
      if (pending.length > reader.lineCharsMax) reader.line(pending);
    }
  } catch (error) {
    if (error instanceof TraceError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new TraceError('unreadable', path, 0, null, `cannot be read: ${detail}`, { cause: error });
  }
  if (pending !== '') reader.line(pending);
}
