/** CoordinatorErrorCode — what went wrong, a CoordinatorError's `code`. */
export type CoordinatorErrorCode =
  | 'config-invalid'
  | 'config-unreadable'
  | 'startup-failed'
  /** The HTTP endpoint (`--http`) could not listen. */
  | 'listen-failed'
  | 'invalid-argument'
  /** The state store holds a record that is not tokenlease state. */
  | 'state-invalid'
  /** The state store cannot be reached (or did not answer in time): nothing is granted meanwhile. */
  | 'store-unavailable'
  /** A fenced write was refused: another coordinator owns the pool now. */
  | 'not-owner';

/**
 * CoordinatorError — the one error class of `@tokenlease/coordinator`.
 * Callers match on `code`; `pool` and `field` name what was wrong.
 */
export class CoordinatorError extends Error {
  override readonly name = 'CoordinatorError';
  readonly code: CoordinatorErrorCode;
  readonly pool: string | undefined;
  readonly field: string | undefined;

  constructor(code: CoordinatorErrorCode, message: string, details: { pool?: string; field?: string; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.pool = details.pool;
    this.field = details.field;
  }
}
