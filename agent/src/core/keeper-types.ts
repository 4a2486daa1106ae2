/**
 * The lease keeper's types: what it asks its adapter to send, the request
 * it has in flight, and its counters.
 */
import type { LeaseReport, LeaseRequest, LeaseReturn } from '@tokenlease/shared';

/** SendAction — a request to send and await (type 'send'), or a usage report to publish with no reply awaited ('publish', timeoutMs 0). */
export interface SendAction {
  readonly type: 'send' | 'publish';
  readonly seq: number;
  readonly message: LeaseRequest | LeaseReturn | LeaseReport;
  readonly timeoutMs: number;
}

export interface InFlight {
  readonly seq: number;
  readonly message: LeaseRequest | LeaseReturn;
  readonly firstSentAtUs: number;
  attempts: number;
  /** After a failed attempt: when to send it again; null while an attempt is out. */
  retryAtUs: number | null;
}

export interface KeeperStats {
  requests: number;
  attempts: number;
  failures: number;
  tokensGranted: number;
  tokensReturned: number;
  leasesStarted: number;
  /** Usage reports published. */
  reports: number;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
}
