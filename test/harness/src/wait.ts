/**
 * Waiting on real processes by what they say, not by the clock: a test
 * asks a condition (a status reply, a log event, a metric) until it holds,
 * polling at a short interval, and fails with what it waited for once its
 * bound has passed. A condition that throws counts as not yet.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** WAIT_POLL_MS — how often `waitUntil` asks again, ms. */
const WAIT_POLL_MS = 50;

/** waitUntil — resolves once `test` resolves true; rejects naming `what` after `timeoutMs`. */
export async function waitUntil(what: string, timeoutMs: number, test: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(test)
        .catch(() => false)
    )
      return;
    if (Date.now() >= deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await sleep(WAIT_POLL_MS);
  }
}
