/** AgentErrorCode — what went wrong, an AgentError's `code`. */
export type AgentErrorCode =
  | 'invalid-argument'
  | 'closed'
  | 'never-fits'
  | 'unknown-pool'
  /** NATS could not be reached, or did not answer within the connect timeout. */
  | 'unreachable'
  /** NATS refused the login (authorization violation). */
  | 'auth-failed'
  /** The TLS handshake failed, or a certificate was refused. */
  | 'tls-failed';

/**
 * AgentError — the one error class of `@tokenlease/agent`.
 * Callers match on `code`; `pool` names the pool concerned.
 */
export class AgentError extends Error {
  override readonly name = 'AgentError';
  readonly code: AgentErrorCode;
  readonly pool: string | undefined;

  constructor(code: AgentErrorCode, message: string, details: { pool?: string; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.pool = details.pool;
  }
}
