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

/** KeeperStats — a lease keeper's counts: requests, their attempts and failures, tokens granted and returned, leases, reports, and its last error. */
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

/** GrantVerifier — whether `sig` is a valid signature of `text` by one of the agent's configured keys. */
export type GrantVerifier = (text: string, sig: string) => boolean;

/** KeeperHooks — what the keeper is given besides its options: its draws of randomness and its grant check by signature. */
export interface KeeperHooks {
  /** Fresh randomness for a moved agent id: 16 to 32 base64url characters a call (moved-id.ts). */
  readonly idSuffix: () => string;
  /** Checks each grant's signature (shared grant-signature.ts); null: grants need none. */
  readonly verifyGrant: GrantVerifier | null;
}
