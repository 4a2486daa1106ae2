/**
 * Replica confirmation: how a fenced write and the `WAIT` that follows it
 * on the same connection end together.
 *
 * Rules:
 * - A write the fence refused wrote nothing: `fenced`, whatever WAIT said
 *   (there is nothing to confirm, and stepping down is always safe).
 * - A write that passed the fence is `written` only when at least
 *   `replicasRequired` replicas acknowledged it (WAIT counts the replicas
 *   that have every write this connection made so far); fewer is
 *   `unconfirmed`: the write may be lost with its primary, so the reply
 *   that depends on it must not leave. The caller treats it as a store
 *   that did not answer (`unavailable`, state kept, retried).
 * - `replicasRequired` 0 asks nothing of WAIT: `written` at once.
 * - A script reply other than 1 counts as fenced, as it always has: a
 *   write is trusted only on the script's word that it passed the fence.
 * - A WAIT reply that is not a non-negative integer is the store's
 *   fault: CoordinatorError('state-invalid').
 *
 * Pure: the Redis adapter runs the write and the WAIT in one pipeline, to
 * the node that owns the pool's slot, and passes their replies here.
 */
import { CoordinatorError } from '../errors.js';

/** ConfirmedWrite — written (and confirmed), refused by the fence, or written but not confirmed in time. */
export type ConfirmedWrite =
  { readonly outcome: 'written' } | { readonly outcome: 'fenced' } | { readonly outcome: 'unconfirmed'; readonly replicasAcked: number };

/**
 * confirmWrite — the outcome of a fenced write script that answered
 * `scriptReply` (1 written, anything else fenced) followed by a WAIT that
 * answered `waitReply` (replicas that acknowledged; null when no WAIT was
 * sent, which `replicasRequired` 0 allows). Throws
 * CoordinatorError('state-invalid') on a WAIT reply that is no count.
 */
export function confirmWrite(scriptReply: unknown, waitReply: unknown, replicasRequired: number): ConfirmedWrite {
  if (scriptReply !== 1) return { outcome: 'fenced' };
  if (replicasRequired === 0) return { outcome: 'written' };
  if (typeof waitReply !== 'number' || !Number.isSafeInteger(waitReply) || waitReply < 0)
    throw new CoordinatorError('state-invalid', `WAIT answered ${JSON.stringify(waitReply)}, not a count of replicas`);
  return waitReply >= replicasRequired ? { outcome: 'written' } : { outcome: 'unconfirmed', replicasAcked: waitReply };
}
