/**
 * Redaction: URLs as they may be shown in an error, a log line or a status.
 *
 * Rules:
 * - Whatever stands between the scheme and the last `@` is user
 *   information: `user:password` keeps the user and shows the password as
 *   REDACTED; a lone name (`nats://token@host`, a NATS token or a Redis
 *   password) is shown as REDACTED whole, since it may be the secret. The
 *   last `@`, not the first `/`: a password may hold `/`, `?` or `#`
 *   unencoded, and redacting too much is harmless.
 * - A string that is no URL at all is redacted by the same rule, never
 *   echoed as it came.
 * - Nothing else changes: scheme, host and port stay, so the reader still
 *   sees which server was meant.
 * - A list (`redactUrlList`) is redacted entry by entry: a comma cannot
 *   stand in a password given inside a list of URLs.
 */

/** REDACTED — what stands where a secret was. */
export const REDACTED = '***';

/** redactUrl — `url` with its password, token or lone user information replaced by REDACTED. */
export function redactUrl(url: string): string {
  const schemeEnd = url.indexOf('://');
  const start = schemeEnd < 0 ? 0 : schemeEnd + 3;
  const rest = url.slice(start);
  const at = rest.lastIndexOf('@');
  if (at < 0) return url;
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(':');
  const shown = colon < 0 ? REDACTED : `${userinfo.slice(0, colon)}:${REDACTED}`;
  return `${url.slice(0, start)}${shown}${rest.slice(at)}`;
}

/** redactUrlList — a comma-separated list of URLs, each redacted by `redactUrl`. */
export function redactUrlList(list: string): string {
  return list
    .split(',')
    .map((url) => redactUrl(url))
    .join(',');
}
