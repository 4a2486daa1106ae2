/**
 * CallReports: what the keeper tells the coordinator of the calls it
 * decided on this pool (shared calls.ts), so operators see fleet-wide
 * admissions and denials that never left the agent.
 *
 * Rules:
 * - Each acquire and return carries the slot's calls since the last told:
 *   admitted (from the lease or the fallback), denied, and admitted only by
 *   shadow mode; nothing when all three are 0.
 * - They count as told when that request is answered with a grant or a
 *   receipt: a retry repeats the same message, which the coordinator counts
 *   once; a request refused or abandoned leaves them for the next one.
 * - The coordinator counts the calls of a request it accepted (before its
 *   grant), so a grant whose reply is lost for good, and whose retries are
 *   abandoned, may have its calls counted again: operators' figures, never
 *   an admission.
 */
import { CALLS_MAX, type CallCounts } from '@tokenlease/shared';
import type { LeaseSlot } from './lease-slot.js';

export class CallReports {
  private toldAdmitted = 0;
  private toldDenied = 0;
  private toldShadowDenied = 0;

  constructor(private readonly slot: LeaseSlot) {}

  /** pending — the calls not yet told (each at most CALLS_MAX), or null when there are none. */
  pending(): CallCounts | null {
    const s = this.slot;
    const admitted = Math.min(CALLS_MAX, s.admittedCount + s.fallbackCount - this.toldAdmitted);
    const denied = Math.min(CALLS_MAX, s.deniedCount - this.toldDenied);
    const shadowDenied = Math.min(CALLS_MAX, s.shadowDeniedCount - this.toldShadowDenied);
    return admitted > 0 || denied > 0 || shadowDenied > 0 ? { admitted, denied, shadowDenied } : null;
  }

  /** answered — a request carrying `calls` was answered with a grant or a receipt: they are told. */
  answered(calls: CallCounts | undefined): void {
    if (calls === undefined) return;
    this.toldAdmitted += calls.admitted;
    this.toldDenied += calls.denied;
    this.toldShadowDenied += calls.shadowDenied;
  }
}
