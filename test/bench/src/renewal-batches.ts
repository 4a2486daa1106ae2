/**
 * How the scaling probes drive renewals, alike for the coordinator core
 * (lease-scaling.ts) and the row sketch (row-sketch.ts), so their figures
 * compare: batches of distinct agents picked at random, a virtual clock
 * moving by a fixed step per request, and a warm-up before the timed
 * renewals.
 */
import type { Random } from '@tokenlease/shared/testing';
import type { SimulatedAgents } from './simulated-agents.js';

/** BATCH_SIZE — renewals per batch, each by a distinct agent (fewer with fewer agents). */
export const BATCH_SIZE = 500;
/** WARMUP_MS — CPU time renewed before the timed renewals, ms. */
export const WARMUP_MS = 200;
/** VIRTUAL_US_PER_CALL — virtual time per request: 100,000 requests per virtual second. */
export const VIRTUAL_US_PER_CALL = 10;
/** SEED — the probes' random seed (plus the lease count, so each count draws its own agents). */
export const SEED = 2026;

/** distinctPicks — `k` distinct entries of `picks` at random, by a partial Fisher–Yates shuffle of it in place. */
export function distinctPicks(picks: number[], k: number, random: Random): number[] {
  for (let i = 0; i < k; i += 1) {
    const j = i + Math.floor(random.next() * (picks.length - i));
    const t = picks[i] as number;
    picks[i] = picks[j] as number;
    picks[j] = t;
  }
  return picks.slice(0, k);
}

/**
 * batchRequests — each agent of `batch`'s next acquire, its clock reading
 * the virtual time it will be handed over at: the i-th, VIRTUAL_US_PER_CALL
 * × (i + 1) after `nowUs`.
 */
export function batchRequests(agents: SimulatedAgents, batch: readonly number[], nowUs: number): Uint8Array[] {
  return batch.map((index, i) => agents.request(index, Math.floor((nowUs + (i + 1) * VIRTUAL_US_PER_CALL) / 1000)));
}
