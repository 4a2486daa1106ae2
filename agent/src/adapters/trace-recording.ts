/**
 * TraceRecording: an agent's arrivals for chosen pools, written to a trace
 * file the sweep replays (`tokenlease-sweep --trace FILE`; format in
 * docs/trace-format.md). Started by the agent option `record`, by
 * `agent.record(options)`, or by the HTTP middleware's `record` option.
 *
 * Guarantees:
 * - The take paths only note arrivals into a preallocated buffer
 *   (core/arrival-log.ts); a timer every `flushMs` turns them into JSON
 *   Lines and appends them to the file, one write at a time, off the
 *   request path. A line is `{"tMs":…,"instance":…,"cost":…,"key":…}`:
 *   `tMs` is wall-clock ms since the Unix epoch (the clock read once when
 *   the recording starts, then the agent's monotonic clock), so the files
 *   of several instances merge on one time line; times never decrease
 *   within a file. `key` is the pool's name: a keyed pool's name holds
 *   only the keyed hash of its key (adapters/key-hash.ts), never the key.
 * - The file is opened for appending (created 0600); it never grows past
 *   `maxBytes`, counting what it held before: the write that would pass it
 *   is cut after its last whole line that fits, and the recording stops.
 * - A recording stops for good, with one `recording-stopped` event saying
 *   why, when the file is full, when the buffer overflowed between two
 *   writes (the trace would have a hole: raise `flushMs`'s rate or
 *   `bufferArrivals`, or sample), when it has seen `RECORDED_POOLS_MAX`
 *   pools, or when a write fails; what was noted before is still written.
 *   It never throws into a request and never stops the agent.
 * - `stop()` writes what is held and closes the file; the agent's `close()`
 *   does it too.
 */
import { closeSync, fstatSync, openSync, write } from 'node:fs';
import {
  ArrivalLog,
  ARRIVAL_BUFFER_DEFAULT,
  ARRIVAL_BUFFER_MAX,
  PoolArrivals,
  PoolSelection,
  type ArrivalSink,
} from '../core/arrival-log.js';
import { US_PER_MS } from '../core/units.js';
import { AgentError } from '../errors.js';

/** RECORD_MAX_BYTES_DEFAULT — the largest a trace file grows by default: 256 MiB (about 3 million arrivals). */
export const RECORD_MAX_BYTES_DEFAULT = 256 * 1024 * 1024;
/** RECORD_FLUSH_MS_DEFAULT — how often held arrivals are written, ms. */
export const RECORD_FLUSH_MS_DEFAULT = 200;
/** RECORDED_POOLS_MAX — the most distinct pools one recording takes; past it the recording stops (the sweep replays at most this many keys). */
export const RECORDED_POOLS_MAX = 1_000_000;
/** RECORD_INSTANCE_CHARS_MAX — the longest instance id a trace line may carry (the sweep's limit). */
export const RECORD_INSTANCE_CHARS_MAX = 256;

/** RecordOptions — where and what an agent records (see the head of this file). */
export interface RecordOptions {
  /** The trace file, appended to (created when missing). */
  readonly path: string;
  /** Pools recorded: exact names, or `prefix*` for every pool whose name starts so (`tenant:*`); default every pool. */
  readonly pools?: readonly string[];
  /** Share of the selected pools recorded, 0 < sample <= 1, chosen by a hash of the pool name (the same on every instance); default 1. */
  readonly sample?: number;
  /** The file's largest size, bytes, what it held before included; default 256 MiB. */
  readonly maxBytes?: number;
  /** The `instance` of every line; default the agent id. At most 256 characters. */
  readonly instance?: string;
  /** How often held arrivals are written, ms; default 200. */
  readonly flushMs?: number;
  /** Arrivals held between two writes, at most; default 65,536 (20 bytes each). */
  readonly bufferArrivals?: number;
}

/** Why a recording stopped: the file full, the buffer overflowed, too many pools, a failed write, or stopped by the service. */
export type RecordingStopReason = 'full' | 'overflow' | 'too-many-pools' | 'write-failed' | 'stopped';

/** RecordingEvent — the one event of a recording: it stopped, and why. */
export interface RecordingEvent {
  readonly type: 'recording-stopped';
  readonly path: string;
  readonly reason: RecordingStopReason;
  readonly message: string;
}

/** RecordingStats — a recording's progress. */
export interface RecordingStats {
  readonly path: string;
  /** Arrivals written to the file. */
  readonly writtenArrivals: number;
  /** Arrivals noted and not yet written. */
  readonly pendingArrivals: number;
  /** The file's size as this recording left it, bytes (what it held before included). */
  readonly fileBytes: number;
  /** Distinct pools recorded. */
  readonly pools: number;
  /** Null while recording, else why it stopped. */
  readonly stopped: RecordingStopReason | null;
}

function invalid(message: string): never {
  throw new AgentError('invalid-argument', `option record: ${message}`);
}

function wholeIn(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max)
    invalid(`${name} must be a whole number in [${min}, ${max}], got ${JSON.stringify(value)}`);
  return value;
}

/** checkPatterns — the `pools` option: a non-empty list of names or `prefix*` patterns, or null for every pool. */
function checkPatterns(pools: unknown): readonly string[] | null {
  if (pools === undefined) return null;
  if (!Array.isArray(pools) || pools.length === 0 || !pools.every((p): p is string => typeof p === 'string' && p !== '' && p !== '*'))
    invalid('pools must be a non-empty list of pool names or prefix* patterns (omit it to record every pool)');
  return pools;
}

/** writeAll — writes all of `bytes` at the file's end (append mode), however many calls it takes. */
function writeAll(fd: number, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const from = (offset: number): void => {
      write(fd, bytes, offset, bytes.length - offset, null, (error, written) => {
        if (error !== null) reject(error);
        else if (offset + written < bytes.length) from(offset + written);
        else resolve();
      });
    };
    from(0);
  });
}

export class TraceRecording {
  private readonly log: ArrivalLog;
  private readonly selection: PoolSelection;
  /** Each recorded pool's number in the log, and its name as JSON (the `key` of its lines). */
  private readonly poolKeys = new Map<string, number>();
  private readonly keyTexts: string[] = [];
  private readonly instanceText: string;
  private readonly maxBytes: number;
  private readonly originWallMs: number;
  private readonly originUs: number;
  private readonly timer: NodeJS.Timeout;
  private fd: number | null;
  private bytes: number;
  private written = 0;
  private lastUs = -Infinity;
  private writing: Promise<void> | null = null;
  private stopReason: RecordingStopReason | null = null;

  /**
   * start — opens `options.path` for appending and starts writing every
   * `flushMs`. `instance` is the default instance id, `clock` the agent's
   * monotonic clock (µs). Throws AgentError('invalid-argument') for a bad
   * option or a file that cannot be opened (the message names the path).
   */
  static start(options: RecordOptions, instance: string, clock: () => number, emit: (event: RecordingEvent) => void): TraceRecording {
    if (typeof options !== 'object' || options === null) invalid('must be an object with at least a path');
    if (typeof options.path !== 'string' || options.path === '') invalid('path must name a file');
    const id = options.instance ?? instance;
    if (typeof id !== 'string' || id === '' || id.length > RECORD_INSTANCE_CHARS_MAX)
      invalid(`instance must be 1 to ${RECORD_INSTANCE_CHARS_MAX} characters; set record.instance`);
    const sample = options.sample ?? 1;
    if (typeof sample !== 'number' || !(sample > 0 && sample <= 1)) invalid(`sample must be in (0, 1], got ${JSON.stringify(sample)}`);
    const selection = new PoolSelection(checkPatterns(options.pools), sample);
    const maxBytes = wholeIn('maxBytes', options.maxBytes ?? RECORD_MAX_BYTES_DEFAULT, 1, Number.MAX_SAFE_INTEGER);
    const flushMs = wholeIn('flushMs', options.flushMs ?? RECORD_FLUSH_MS_DEFAULT, 1, 60_000);
    const buffer = wholeIn('bufferArrivals', options.bufferArrivals ?? ARRIVAL_BUFFER_DEFAULT, 1, ARRIVAL_BUFFER_MAX);
    let fd: number;
    try {
      fd = openSync(options.path, 'a', 0o600);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw new AgentError('invalid-argument', `option record: cannot open ${options.path} for appending (${code})`, { cause: error });
    }
    return new TraceRecording(options.path, fd, id, selection, new ArrivalLog(buffer), maxBytes, flushMs, clock, emit);
  }

  private constructor(
    readonly path: string,
    fd: number,
    instance: string,
    selection: PoolSelection,
    log: ArrivalLog,
    maxBytes: number,
    flushMs: number,
    clock: () => number,
    private readonly emit: (event: RecordingEvent) => void,
  ) {
    this.fd = fd;
    this.bytes = fstatSync(fd).size;
    this.instanceText = JSON.stringify(instance);
    this.selection = selection;
    this.log = log;
    this.maxBytes = maxBytes;
    this.originWallMs = Date.now();
    this.originUs = clock();
    // A write still under way when the timer rings is not queued behind: the next ring takes what came meanwhile.
    this.timer = setInterval(() => {
      if (this.writing === null) void this.flush();
    }, flushMs);
    this.timer.unref();
    if (this.bytes >= maxBytes) this.end('full', `the file already holds ${this.bytes} bytes of at most ${maxBytes}`);
  }

  /** sinkFor — where `pool`'s arrivals go, or null when this recording does not take it (or has stopped). */
  sinkFor(pool: string): ArrivalSink | null {
    if (this.log.stopped || !this.selection.takes(pool)) return null;
    let key = this.poolKeys.get(pool);
    if (key === undefined) {
      if (this.poolKeys.size >= RECORDED_POOLS_MAX) {
        this.end('too-many-pools', `it has recorded ${RECORDED_POOLS_MAX} pools; choose fewer with pools or sample`);
        return null;
      }
      key = this.keyTexts.length;
      this.poolKeys.set(pool, key);
      this.keyTexts.push(JSON.stringify(pool));
    }
    return new PoolArrivals(this.log, key);
  }

  /** flush — writes what is held now (after any write in progress), and closes the file once the recording stopped; never rejects. */
  async flush(): Promise<void> {
    while (this.writing !== null) await this.writing;
    if (this.log.overflowed && this.stopReason === null)
      this.end('overflow', `more than ${this.log.capacity} arrivals came between two writes; raise bufferArrivals or sample`);
    if (this.fd !== null && this.log.pending > 0) {
      this.writing = this.writeHeld(this.fd).finally(() => {
        this.writing = null;
      });
      await this.writing;
    }
    if (this.stopReason !== null && this.log.pending === 0) this.close();
  }

  /**
   * stop — stops noting, writes what is held (so a file that fills or a
   * buffer that overflowed still says so), then closes the file. Never
   * rejects.
   */
  async stop(): Promise<void> {
    this.log.stop();
    await this.flush();
    if (this.stopReason === null) this.end('stopped', 'the service stopped it');
    this.close();
  }

  /** stopped — whether this recording has ended (and notes nothing more). */
  get stopped(): boolean {
    return this.stopReason !== null;
  }

  stats(): RecordingStats {
    return {
      path: this.path,
      writtenArrivals: this.written,
      pendingArrivals: this.log.pending,
      fileBytes: this.bytes,
      pools: this.poolKeys.size,
      stopped: this.stopReason,
    };
  }

  /** writeHeld — the held arrivals as lines, appended; cut at the last whole line within maxBytes. */
  private async writeHeld(fd: number): Promise<void> {
    let text = '';
    let lines = 0;
    this.log.drain((key, cost, atUs) => {
      // A caller's own time (tryTakeAt) may lag the last one written: the file's times never decrease.
      const us = atUs < this.lastUs ? this.lastUs : atUs;
      this.lastUs = us;
      const tMs = (this.originWallMs + (us - this.originUs) / US_PER_MS).toFixed(3);
      text += `{"tMs":${tMs},"instance":${this.instanceText},"cost":${cost},"key":${this.keyTexts[key] as string}}\n`;
      lines += 1;
    });
    let bytes = Buffer.from(text, 'utf8');
    if (this.bytes + bytes.length > this.maxBytes) {
      const cut = bytes.lastIndexOf(0x0a, this.maxBytes - this.bytes - 1) + 1;
      lines = cut === 0 ? 0 : bytes.subarray(0, cut).toString('utf8').split('\n').length - 1;
      bytes = bytes.subarray(0, cut);
      this.end('full', `the file reached its limit of ${this.maxBytes} bytes`);
    }
    if (bytes.length === 0) return;
    try {
      await writeAll(fd, bytes);
      this.bytes += bytes.length;
      this.written += lines;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      this.close();
      this.end('write-failed', `a write to the file failed (${code})`);
    }
  }

  /** end — stops noting (once), says why, stops the timer, and has what was noted written and the file closed soon after (by `flush`). */
  private end(reason: RecordingStopReason, why: string): void {
    if (this.stopReason !== null) return;
    this.stopReason = reason;
    this.log.stop();
    clearInterval(this.timer);
    this.emit({ type: 'recording-stopped', path: this.path, reason, message: `recording to ${this.path} stopped: ${why}` });
    // Whatever was noted still goes to the file, once the write that may be under way (the caller's) is done.
    setImmediate(() => void this.flush());
  }

  /** close — closes the file (once); only when no write is under way, or from the write that failed. */
  private close(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    try {
      closeSync(fd);
    } catch {
      // Already closed by a failed write's handling, or the descriptor is gone: nothing left to release.
    }
  }
}
