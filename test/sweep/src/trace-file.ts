/**
 * readTraceFile — streams a trace file through a TraceReader (trace.ts).
 *
 * Guarantees: the file is read in chunks and cut into lines here, not by
 * node:readline, so a line longer than TRACE_LINE_CHARS_MAX is refused as
 * soon as that many characters are pending, never buffered whole: memory
 * per line is bounded whatever the file holds. An unreadable file becomes a
 * TraceError (`unreadable`) naming it; a bad line, the reader's TraceError.
 */
import { createReadStream } from 'node:fs';
import { TRACE_LINE_CHARS_MAX, TraceError, TraceReader, type Trace } from './trace.js';

const CHUNK_BYTES = 64 * 1024;

/** readTraceFile — the replay of the trace at `path` (JSON Lines or CSV), at most `instancesMax` instances; `keyOnly`: that key's arrivals only. */
export async function readTraceFile(path: string, instancesMax: number, keyOnly: string | null = null): Promise<Trace> {
  const reader = new TraceReader(path, instancesMax, keyOnly);
  let pending = '';
  try {
    for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: CHUNK_BYTES })) {
      const lines = (pending + (chunk as string)).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) reader.line(line);
      // An unfinished line this long is refused now: the reader fails on it without it growing further.
      if (pending.length > TRACE_LINE_CHARS_MAX) reader.line(pending);
    }
  } catch (error) {
    if (error instanceof TraceError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new TraceError('unreadable', path, 0, null, `cannot be read: ${detail}`, { cause: error });
  }
  if (pending !== '') reader.line(pending);
  return reader.finish();
}
