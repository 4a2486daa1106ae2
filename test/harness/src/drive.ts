/**
 * driveTraffic — offers a traffic shape to a limiter for a while and reports
 * every admission at the exact clock reading it was decided at.
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
  readonly onAdmit?: (tUs: number, cost: number) => void;
  /** Checked every loop; true ends the drive early. */
  readonly stopped?: () => boolean;
}

export interface DriveResult {
  admittedTokens: number;
  admittedCount: number;
  deniedTokens: number;
  deniedCount: number;
}

export async function driveTraffic(options: DriveOptions): Promise<DriveResult> {
  const { limiter, clock, onAdmit } = options;
  const startUs = clock();
  const endUs = startUs + options.durationMs * 1000;
  const arrivals = new Arrivals(options.traffic, options.random, startUs);
  const result: DriveResult = { admittedTokens: 0, admittedCount: 0, deniedTokens: 0, deniedCount: 0 };
  for (;;) {
    const nowUs = clock();
    if (nowUs >= endUs || options.stopped?.() === true) return result;
    for (const cost of arrivals.due(nowUs)) {
      const tUs = clock();
      if (limiter.tryTakeAt(cost, tUs)) {
        result.admittedTokens += cost;
        result.admittedCount += 1;
        onAdmit?.(tUs, cost);
      } else {
        result.deniedTokens += cost;
        result.deniedCount += 1;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
