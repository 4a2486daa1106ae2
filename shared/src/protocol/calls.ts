/**
 * Call counts: what agents tell coordinators about the calls they decided
 * locally, so that operators see what clients see. An agent denies without
 * asking anyone, so without these a pool's status would show no refusal
 * while its clients received thousands of 429s.
 *
 * Rules:
 * - A call is one decision: one `tryTake` (or one HTTP request charged to
 *   the pool), whatever its cost. `admitted` counts calls admitted,
 *   `denied` calls denied, `shadowDenied` calls shadow mode admitted that
 *   enforcing would have denied (not in `admitted`).
 * - On the wire (an acquire or a return, field `calls`) they are the calls
 *   since the agent's last request the coordinator answered with a grant or
 *   a receipt; absent when all three are 0. In a status reply and a pools
 *   listing they are the totals the coordinator was told since it made the
 *   pool.
 * - They inform operators only: no grant, share or refusal depends on
 *   them, so an agent that misstates them misleads a dashboard, never the
 *   limit.
 */
import { FieldProblem, intField, type Fields } from './fields.js';

/** CALLS_MAX — the largest count of calls in one field. */
export const CALLS_MAX = 2 ** 52;

/** CallCounts — calls admitted, denied, and admitted only by shadow mode. */
export interface CallCounts {
  readonly admitted: number;
  readonly denied: number;
  readonly shadowDenied: number;
}

/** NO_CALLS — all three counts 0. */
export const NO_CALLS: CallCounts = { admitted: 0, denied: 0, shadowDenied: 0 };

/** readCallCounts — the counts in `obj[field]`: an object of three integers in [0, CALLS_MAX]. */
export function readCallCounts(obj: Fields, field: string): CallCounts {
  const value = obj[field];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FieldProblem(field, 'must be an object');
  const counts = value as Fields;
  const count = (name: string): number => intField({ [`${field}.${name}`]: counts[name] }, `${field}.${name}`, 0, CALLS_MAX);
  return { admitted: count('admitted'), denied: count('denied'), shadowDenied: count('shadowDenied') };
}
