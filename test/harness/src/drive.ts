/**
 * driveTraffic — offers a traffic shape to a limiter for a while and reports
 * every admission at the exact clock reading it was decided at, with where
 * it came from: the lease (inside the envelope), the local fallback bucket
 * or shadow mode (both outside it: the envelope checks leave them out).
 */
import type { Limiter } from '@tokenlease/agent';
import { Arrivals, type Traffic } from './traffic.js';
import type { Random } from '@tokenlease/shared/testing';

export interface DriveOptions {
  readonly limiter: Limiter;
  readonly traffic: Traffic;
  readonly random: Random;
  /** The agent's clock, µs (the same clock the agent was created with). */
  readonly clock: () => number;
  readonly durationMs: number;
  readonly onAdmit?: (tUs: number, cost: number, source: AdmissionSource) => void;
  /** Every denial, at the clock reading it was decided at. */
  readonly onDeny?: (tUs: number, cost: number) => void;
  /** Checked every loop; true ends the drive early. */
  readonly stopped?: () => boolean;
}

/** AdmissionSource — what admitted a cost: the lease, the fallback bucket, or shadow mode (a would-be denial). */
export type AdmissionSource = 'lease' | 'fallback' | 'shadow';

export interface DriveResult {
  admittedTokens: number;
  admittedCount: number;
  deniedTokens: number;
  deniedCount: number;
  /** Of the admitted: tokens admitted only because of shadow mode, and from the fallback bucket. */
  shadowTokens: number;
  fallbackTokens: number;
}

export async function driveTraffic(options: DriveOptions): Promise<DriveResult> {
  const { limiter, clock, onAdmit } = options;
  const startUs = clock();
  const endUs = startUs + options.durationMs * 1000;
  const arrivals = new Arrivals(options.traffic, options.random, startUs);
  const result: DriveResult = { admittedTokens: 0, admittedCount: 0, deniedTokens: 0, deniedCount: 0, shadowTokens: 0, fallbackTokens: 0 };
  const slot = limiter.slot;
  for (;;) {
    const nowUs = clock();
    if (nowUs >= endUs || options.stopped?.() === true) return result;
    for (const cost of arrivals.due(nowUs)) {
      const tUs = clock();
      const shadowBefore = slot.shadowDeniedCount;
      const fallbackBefore = slot.fallbackCount;
      if (limiter.tryTakeAt(cost, tUs)) {
        result.admittedTokens += cost;
        result.admittedCount += 1;
        const source = slot.shadowDeniedCount > shadowBefore ? 'shadow' : slot.fallbackCount > fallbackBefore ? 'fallback' : 'lease';
        if (source === 'shadow') result.shadowTokens += cost;
        if (source === 'fallback') result.fallbackTokens += cost;
        onAdmit?.(tUs, cost, source);
      } else {
        result.deniedTokens += cost;
        result.deniedCount += 1;
        options.onDeny?.(tUs, cost);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
