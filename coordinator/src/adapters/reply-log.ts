/**
 * sendReplies — encodes and sends each delivery, logging refusals (warn)
 * and grants (debug, with `tUs` on the host monotonic clock so grants line
 * up with agents' logs).
 */
import { encodeMessage, type ReplyPort } from '@tokenlease/shared';
import type { Logger } from 'pino';
import type { PoolFault } from '../core/coordinator-core.js';
import type { Delivery } from '../core/pool.js';

export function sendReplies(logger: Logger, deliveries: readonly Delivery<ReplyPort>[], tUs: number, subject?: string): void {
  for (const { to, reply } of deliveries) {
    if (reply.kind === 'error') {
      logger.warn({ event: 'request-refused', subject, code: reply.code, fault: reply.fault, seq: reply.seq, reason: reply.message }, 'request refused');
    } else if (reply.kind === 'grant') {
      logger.debug({ event: 'grant', leaseId: reply.leaseId, seq: reply.seq, tokensGranted: reply.tokensGranted, tokensHeld: reply.tokensHeld, ttlMs: reply.ttlMs, epoch: reply.epoch, tUs }, 'grant');
    }
    to.respond(encodeMessage(reply));
  }
}

/** INTERNAL_ERROR — what a request gets when handling it broke an invariant. */
export const INTERNAL_ERROR = encodeMessage({ v: 1, kind: 'error', seq: null, code: 'internal', fault: 'coordinator', message: 'internal error; see the coordinator log', retryAfterMs: 1000 });

/** logFaults — one error line per contained pool fault (the pool restarted or was dropped). */
export function logFaults(logger: Logger, faults: readonly PoolFault[]): void {
  for (const { pool, error } of faults) logger.error({ event: 'pool-failed', err: error, pool }, 'pool failed: its requests were refused and it restarts');
}
