/**
 * Process state as the kernel tells it (Linux /proc), for checking that a
 * fault really happened: a SIGSTOPped process shows state `T`, and runs
 * again after SIGCONT; and the CPU time a process has used, for the
 * benchmarks that charge each system what its clients and servers spent.
 */
import { readFileSync } from 'node:fs';
import type { Child } from './processes.js';

/** POLL_MS — how often waitForProcState looks, ms. */
const POLL_MS = 5;

/** CLOCK_TICKS_PER_SECOND — the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux for every architecture Node runs on). */
const CLOCK_TICKS_PER_SECOND = 100;

/** statFields — the fields of /proc/<pid>/stat after the command name (from the state on), or null when the process is gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name in parentheses may hold spaces; the state follows its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** procState — the scheduler state letter of `pid` from /proc (`T`: stopped), or null when unknown. */
export function procState(pid: number): string | null {
  return statFields(pid)?.[0] || null;
}

/**
 * procCpuSeconds — user + system CPU time `pid` has used so far (utime +
 * stime, all its threads), seconds, in steps of 10 ms; null when the
 * process is gone.
 */
export function procCpuSeconds(pid: number): number | null {
  const fields = statFields(pid);
  // utime and stime are fields 14 and 15 of stat, 12 and 13 counted from the state (field 3).
  if (fields === null || fields.length < 14) return null;
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** waitForProcState — polls until `test(procState(pid))`; false after `timeoutMs`. */
export async function waitForProcState(pid: number, test: (state: string | null) => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (test(procState(pid))) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** isRunning — the process has not exited (a stopped process still counts). */
export function isRunning(child: Child): boolean {
  return child.proc.exitCode === null && child.proc.signalCode === null;
}
