/**
 * Clocks that run at another rate, for chaos tests of clock drift: a child
 * process run under libfaketime (Debian's `faketime` package) sees every
 * clock, monotonic ones too, advance `rate` seconds per real second from
 * its start, and its timers follow. Its own pid is kept (the library is
 * preloaded, not a wrapper process), so it is signalled like any other.
 *
 * What such a process logs is on its own clock. `ClockMap` maps that back
 * to the host's: the process prints its clock now and then (an agent
 * process's `stats` lines carry `tUs`), the map notes when each line
 * arrived, and, the process's clock being exactly linear in the host's
 * with the known rate, keeps the offset of the earliest-arriving line:
 * `host = own / rate + offset`, late by at most the least time a line took
 * to arrive (well under a millisecond on one machine).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Child } from './processes.js';

/** FaketimeUnavailableError — libfaketime is not installed: a clock-rate scenario cannot run (and must not pass). */
export class FaketimeUnavailableError extends Error {
  constructor() {
    super('clock-rate faults need libfaketime (Debian: apt-get install faketime)');
    this.name = 'FaketimeUnavailableError';
  }
}

const LIBRARY = 'libfaketimeMT.so.1';
const LIBRARY_DIRS = ['/usr/lib/faketime', '/usr/local/lib/faketime', '/usr/lib64/faketime'];

/** libfaketimePath — the multi-threaded libfaketime (Node.js runs threads), in Debian's multiarch folders or the usual ones; null if none. */
export function libfaketimePath(): string | null {
  const dirs = [...LIBRARY_DIRS];
  if (existsSync('/usr/lib')) {
    for (const entry of readdirSync('/usr/lib')) if (entry.includes('-linux-')) dirs.push(join('/usr/lib', entry, 'faketime'));
  }
  return dirs.map((dir) => join(dir, LIBRARY)).find((path) => existsSync(path)) ?? null;
}

/** clockRateEnv — the environment that runs a process's clocks at `rate` times the host's from its start; throws FaketimeUnavailableError. */
export function clockRateEnv(rate: number): NodeJS.ProcessEnv {
  if (!(rate > 0) || !Number.isFinite(rate)) throw new RangeError(`a clock rate must be a positive number, got ${rate}`);
  const library = libfaketimePath();
  if (library === null) throw new FaketimeUnavailableError();
  return { LD_PRELOAD: library, FAKETIME: `+0 x${rate}` };
}

/** ClockMap — maps the clock of a process running at `rate` to the host's, from its lines that carry `tUs` (module comment). */
export class ClockMap {
  private offsetUs = Infinity;
  private firstSeen: { readonly ownUs: number; readonly hostUs: number } | null = null;
  private lastSeen: { readonly ownUs: number; readonly hostUs: number } | null = null;
  samples = 0;

  private constructor(
    readonly rate: number,
    private readonly hostNowUs: () => number,
  ) {}

  /** watch — a map for `child`, whose clock runs at `rate`, fed by every stdout line of it with a numeric `tUs` from now on. */
  static watch(child: Child, rate: number, hostNowUs: () => number): ClockMap {
    const map = new ClockMap(rate, hostNowUs);
    child.onLine((line) => {
      const at = hostNowUs();
      const match = /"tUs":(\d+)/.exec(line);
      if (match !== null) map.saw(Number(match[1]), at);
    });
    return map;
  }

  /** saw — the process's clock read `ownUs` in a line that arrived at the host's `hostUs`. */
  saw(ownUs: number, hostUs: number): void {
    this.samples += 1;
    this.offsetUs = Math.min(this.offsetUs, hostUs - ownUs / this.rate);
    this.firstSeen ??= { ownUs, hostUs };
    this.lastSeen = { ownUs, hostUs };
  }

  /** toHostUs — an instant of the process's clock on the host's; throws before any line was seen. */
  toHostUs(ownUs: number): number {
    if (this.samples === 0) throw new Error(`no clock line seen yet: cannot map the clock (${this.hostNowUs()} µs now)`);
    return Math.round(ownUs / this.rate + this.offsetUs);
  }

  /** measuredRate — the process's elapsed time over the host's between the first and last lines seen (null before two, over less than 1 s). */
  measuredRate(): number | null {
    const first = this.firstSeen;
    const last = this.lastSeen;
    if (first === null || last === null || last.hostUs - first.hostUs < 1_000_000) return null;
    return (last.ownUs - first.ownUs) / (last.hostUs - first.hostUs);
  }
}
