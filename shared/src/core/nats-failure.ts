/**
 * Why a connection to NATS failed, in one line that names the servers and
 * the reason and holds no secret.
 *
 * Rules:
 * - The reason is one of: authorization violation (the server refused the
 *   login, or wanted one), TLS handshake failure, certificate problem (ours
 *   or the server's), timeout, unreachable; each with a stable code.
 * - The line names the servers as NatsConnectOptions holds them (without
 *   credentials) and the login by kind (describeNatsLogin), and adds what
 *   the underlying error said, which never carries a secret: nats.js and
 *   Node's TLS errors name codes, subjects and certificates, not passwords.
 * - Pure: the error is read, not thrown or logged here.
 */
import type { SharedErrorCode } from '../errors.js';
import { NATS_FLAGS } from './nats-flags.js';
import { describeNatsLogin, NATS_ENV, type NatsConnectOptions, type NatsField } from './nats-options.js';

/** ConnectFailure — the code of a failed connection and its reason in words. */
export interface ConnectFailure {
  readonly code: Extract<SharedErrorCode, 'bus-auth-failed' | 'bus-tls-failed' | 'bus-connect-timeout' | 'bus-unreachable'>;
  readonly reason: string;
}

/** Node's codes for a certificate the client could not verify. */
const UNTRUSTED_SERVER = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
]);
const EXPIRED_SERVER = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);
const WRONG_NAME = new Set(['ERR_TLS_CERT_ALTNAME_INVALID', 'HOSTNAME_MISMATCH']);
/** OpenSSL alerts the server sends when it refuses our certificate (or the lack of one). */
const CLIENT_CERT_REFUSED =
  /ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|HANDSHAKE_FAILURE)/;

/** The names of a setting, as a reader may have given it: `NATS_CA or --nats-ca`. */
function setting(...fields: NatsField[]): string {
  return fields.map((f) => `${NATS_ENV[f]} or --${NATS_FLAGS[f]}`).join(', ');
}

function codeOf(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : '';
}

/** The error's message on one line (OpenSSL's span several). */
function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).trim().replace(/\s*\n\s*/g, ' ');
}

/** classifyNatsFailure — the code and reason of `error`, thrown by a first connection made with `options`. */
export function classifyNatsFailure(error: unknown, options: NatsConnectOptions): ConnectFailure {
  const code = codeOf(error);
  const said = messageOf(error);
  const noCert = options.tls?.certFile == null;
  if (code === 'AUTHORIZATION_VIOLATION') {
    const reason =
      options.auth.kind === 'none'
        ? `authorization violation: the server wants a login and none was given (a user and password, a token, an NKey seed or a creds file)`
        : 'authorization violation: the server refused the login';
    return { code: 'bus-auth-failed', reason };
  }
  if (code === 'AUTHENTICATION_EXPIRED' || code === 'ACCOUNT_EXPIRED')
    return { code: 'bus-auth-failed', reason: `authorization violation: the credentials have expired (${said})` };
  if (code === 'AUTHENTICATION_TIMEOUT')
    return { code: 'bus-auth-failed', reason: 'authorization violation: the server timed out waiting for the login' };
  if (code === 'SERVER_OPT_NA')
    return {
      code: 'bus-tls-failed',
      reason: 'TLS handshake failure: TLS was asked for (a CA, a client certificate or tls://) but the server does not offer it',
    };
  if (UNTRUSTED_SERVER.has(code))
    return {
      code: 'bus-tls-failed',
      reason: `certificate problem: the server's certificate is not trusted (${said}); give the CA that signed it (${setting('caFile')})`,
    };
  if (EXPIRED_SERVER.has(code)) return { code: 'bus-tls-failed', reason: `certificate problem: the server's certificate ${said}` };
  if (WRONG_NAME.has(code))
    return { code: 'bus-tls-failed', reason: `certificate problem: the server's certificate is not for this host (${said})` };
  if (CLIENT_CERT_REFUSED.test(code)) {
    const hint = noCert ? `; it wants a client certificate (${setting('certFile', 'keyFile')})` : '';
    return { code: 'bus-tls-failed', reason: `TLS handshake failure: the server refused our certificate (${code})${hint}` };
  }
  if (code.startsWith('ERR_OSSL') || (code === 'ERR_INVALID_ARG_TYPE' && options.tls !== null))
    return { code: 'bus-tls-failed', reason: `certificate problem: the client certificate, its key or the CA cannot be used (${said})` };
  if (code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS') || code === 'EPROTO')
    return { code: 'bus-tls-failed', reason: `TLS handshake failure (${code}: ${said})` };
  if (code === 'TIMEOUT' || code === 'CONNECTION_TIMEOUT') {
    const hint = noCert
      ? ` (a server that requires a client certificate and gets none ends this way: ${setting('certFile', 'keyFile')})`
      : ' (a server that refuses the client certificate ends this way)';
    return { code: 'bus-connect-timeout', reason: `timeout: no completed login within ${options.connectTimeoutMs} ms${hint}` };
  }
  if (code === 'CONNECTION_REFUSED' || code === 'ECONNREFUSED') return { code: 'bus-unreachable', reason: 'connection refused' };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { code: 'bus-unreachable', reason: `host not found (${code})` };
  return { code: 'bus-unreachable', reason: code === '' ? said : `${code}: ${said}` };
}

/** natsFailureMessage — the one line for `failure`: which servers, which login, and why. */
export function natsFailureMessage(options: NatsConnectOptions, failure: ConnectFailure): string {
  return `cannot connect to NATS at ${options.servers.join(',')} (${describeNatsLogin(options)}): ${failure.reason}`;
}
