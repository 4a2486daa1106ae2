/**
 * What the Redis adapter says about a Redis at start, in words that hold
 * no secret: why a first connection failed (a refused login names no
 * password, a certificate problem names the setting that fixes it), and
 * whether its persistence may lose acknowledged writes.
 *
 * Rules:
 * - The client's last connection error, when there is one, says more than
 *   the error the connect call rejected with.
 * - One line: newlines in a server's message are folded.
 * - A TLS connection given no client certificate that the server then
 *   drops (TLS 1.3 asks for the certificate after the handshake, so the
 *   client sees only a reset) gets a hint naming the certificate settings.
 * - Persistence: `appendonly yes` with `appendfsync always` keeps every
 *   acknowledged write across a restart; anything else is said, and a
 *   reply that is no CONFIG GET list says nothing.
 * - Pure: the Redis adapter passes the errors and replies it saw.
 */

/** Why the first connection failed, on one line, in words that hold no secret (a refused AUTH names no password). */
export function connectReason(error: unknown, lastError: unknown, tlsWithoutCert = false): string {
  const reason = whyRefused(error, lastError);
  if (tlsWithoutCert && /ECONNRESET|EPIPE|socket hang up|Connection is closed/.test(reason))
    return `${reason} (no client certificate was given: if the server asks for one, --redis-cert and --redis-key, or REDIS_CERT and REDIS_KEY)`;
  return reason;
}

function whyRefused(error: unknown, lastError: unknown): string {
  const text = (e: unknown): string => (e instanceof Error ? e.message : String(e)).trim().replace(/\s*\n\s*/g, ' ');
  const said = lastError === null ? text(error) : text(lastError);
  const code = (lastError as { code?: unknown } | null)?.code;
  if (/WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(said)) return `authentication failed (${said})`;
  if (/NOPERM/.test(said)) return `permission refused to this user (${said})`;
  if (typeof code !== 'string') return said;
  if (/ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|HANDSHAKE_FAILURE)/.test(code))
    return `TLS handshake failure: the server refused our certificate or its absence (${code}; --redis-cert and --redis-key, or REDIS_CERT and REDIS_KEY)`;
  if (/^(UNABLE_TO|CERT_|DEPTH_ZERO|SELF_SIGNED|ERR_TLS_CERT)/.test(code))
    return `certificate problem: the server's certificate is not trusted (${code}; --redis-ca or REDIS_CA names the CA that signed it)`;
  if (/^(ERR_SSL|ERR_TLS|ERR_OSSL)/.test(code)) return `TLS handshake failure (${code})`;
  return said;
}

/** appendOnlyVerdict — why a Redis whose `CONFIG GET append*` answered `reply` may lose acknowledged writes on its restart, or null. */
export function appendOnlyVerdict(reply: unknown): string | null {
  if (!Array.isArray(reply)) return null;
  const settings = new Map<string, string>();
  for (let i = 0; i + 1 < reply.length; i += 2) settings.set(String(reply[i]), String(reply[i + 1]));
  if (settings.get('appendonly') !== 'yes')
    return 'Redis runs without appendonly: a restart loses the leases granted since its last snapshot, and may over-admit';
  if (settings.get('appendfsync') !== 'always')
    return `Redis runs with appendfsync ${settings.get('appendfsync') ?? '?'}: a crash of Redis may lose the last acknowledged grants, and may over-admit`;
  return null;
}
