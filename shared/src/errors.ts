/** SharedErrorCode — what went wrong, a TokenleaseError's `code`: `invariant` is tokenlease's own mistake, `bus-*` the bus's. */
export type SharedErrorCode =
  | 'invalid-argument'
  | 'out-of-range'
  | 'invalid-rate'
  | 'invalid-pool-name'
  | 'invalid-identity'
  | 'invalid-subject'
  | 'invalid-message'
  | 'invalid-nats-options'
  | 'bus-unreachable'
  | 'bus-auth-failed'
  | 'bus-tls-failed'
  | 'bus-connect-timeout'
  | 'bus-timeout'
  | 'bus-no-responders'
  | 'bus-closed'
  | 'bus-failure'
  | 'invariant';

/** ErrorDetails — what a TokenleaseError names besides its code and message: the pool, field and lease concerned, and its cause. */
export interface ErrorDetails {
  readonly pool?: string;
  readonly field?: string;
  readonly leaseId?: string;
  readonly cause?: unknown;
}

/**
 * TokenleaseError — the one error class of `@tokenlease/shared`.
 *
 * Callers match on `code`, never on `message`: `invariant` is a broken
 * invariant inside tokenlease; `bus-*` is the bus (NATS) failing; every
 * other code is a bad argument, or a malformed message from a peer.
 */
export class TokenleaseError extends Error {
  override readonly name = 'TokenleaseError';
  readonly code: SharedErrorCode;
  readonly pool: string | undefined;
  readonly field: string | undefined;
  readonly leaseId: string | undefined;

  constructor(code: SharedErrorCode, message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.pool = details.pool;
    this.field = details.field;
    this.leaseId = details.leaseId;
  }
}

/**
 * assertInvariant — throws a `TokenleaseError('invariant')` when `condition`
 * is false. Its message is built before the call: on a request's path,
 * where a message would format numbers on every call, write
 * `if (!condition) invariantBroken(message)` instead.
 */
export function assertInvariant(condition: boolean, message: string): asserts condition {
  if (!condition) invariantBroken(message);
}

/** invariantBroken — throws the `TokenleaseError('invariant')` that `message` describes. */
export function invariantBroken(message: string): never {
  throw new TokenleaseError('invariant', `invariant broken: ${message}`);
}
