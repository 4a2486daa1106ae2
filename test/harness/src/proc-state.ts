/**
 * Process state as the kernel tells it (Linux /proc), for checking that a
 * fault really happened: a SIGSTOPped process shows state `T`, and runs
 * again after SIGCONT.
 */
import { readFileSync } from 'node:fs';
import type { Child } from './processes.js';

/** POLL_MS — how often waitForProcState looks, ms. */
const POLL_MS = 5;

/** procState — the scheduler state letter of `pid` from /proc (`T`: stopped), or null when unknown. */
export function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name in parentheses may hold spaces; the state follows its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) || null;
  } catch {
    return null;
  }
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
