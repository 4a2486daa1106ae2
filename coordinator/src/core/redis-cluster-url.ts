/**
 * Redis Cluster URLs: `redis+cluster://[user:password@]h1:p1,h2:p2` (TLS:
 * `rediss+cluster://`), a login and the seed nodes the cluster client asks
 * for the rest of the cluster; and Sentinel URLs,
 * `redis+sentinel://[user:password@]h1:p1,h2:p2/<master>`, the sentinels
 * asked for the current primary of the master named (no TLS).
 *
 * Rules:
 * - At least one seed and at most CLUSTER_SEEDS_MAX; each is `host:port`
 *   (an IPv6 host in brackets) with a port in [1, 65535]. The port is
 *   required: a cluster has no default port worth guessing.
 * - No database, path, query or fragment: a cluster has database 0 only.
 * - The login, if any, is percent-decoded; no message holds the password
 *   (the URL is shown redacted).
 * - Pure: parsing only.
 */
import { redactUrl } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';

/** RedisSeed — one node the cluster client starts from. */
export interface RedisSeed {
  readonly host: string;
  readonly port: number;
}

/** ClusterUrl — what a cluster URL says. */
export interface ClusterUrl {
  readonly tls: boolean;
  /** The login inside the URL (null: none). */
  readonly user: string | null;
  readonly password: string | null;
  readonly seeds: readonly RedisSeed[];
}

/** SentinelUrl — what a Sentinel URL says: the sentinels to ask, the master's name, the login of the Redis servers. */
export interface SentinelUrl {
  readonly master: string;
  readonly user: string | null;
  readonly password: string | null;
  readonly seeds: readonly RedisSeed[];
}

/** CLUSTER_SEEDS_MAX — the most seeds a cluster URL may list. */
export const CLUSTER_SEEDS_MAX = 64;

const SCHEME = /^(rediss?)\+cluster:\/\//i;
const SENTINEL_SCHEME = /^(rediss?)\+sentinel:\/\//i;
const MASTER_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const SEED = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})$/;

/** isClusterUrl — whether `url` starts with redis+cluster:// or rediss+cluster://. */
export function isClusterUrl(url: string): boolean {
  return SCHEME.test(url);
}

function invalid(name: string, message: string): CoordinatorError {
  return new CoordinatorError('config-invalid', message, { field: name });
}

function decoded(part: string, what: string, shown: string, name: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw invalid(name, `Redis URL ${shown} (${name}) has a badly escaped ${what}`);
  }
}

/**
 * parseClusterUrl — the seeds and login of a cluster URL (see the module
 * rules); CoordinatorError('config-invalid') naming `name` otherwise, the
 * URL redacted. `url` must satisfy isClusterUrl.
 */
export function parseClusterUrl(url: string, name: string): ClusterUrl {
  const shown = JSON.stringify(redactUrl(url));
  const scheme = SCHEME.exec(url);
  if (scheme === null) throw invalid(name, `Redis URL ${shown} (${name}) must start with redis+cluster:// or rediss+cluster://`);
  return { tls: scheme[1]?.toLowerCase() === 'rediss', ...parseSeeds(url.slice(scheme[0].length), shown, name) };
}

/** isSentinelUrl — whether `url` starts with redis+sentinel:// (or rediss+sentinel://, which is refused). */
export function isSentinelUrl(url: string): boolean {
  return SENTINEL_SCHEME.test(url);
}

/**
 * parseSentinelUrl — the sentinels, master name and login of
 * `redis+sentinel://[user:password@]h1:p1,h2:p2/<master>` (the login is
 * the Redis servers', not the sentinels'); CoordinatorError('config-invalid')
 * naming `name` otherwise. `url` must satisfy isSentinelUrl.
 */
export function parseSentinelUrl(url: string, name: string): SentinelUrl {
  const shown = JSON.stringify(redactUrl(url));
  const scheme = SENTINEL_SCHEME.exec(url);
  if (scheme === null || scheme[1]?.toLowerCase() !== 'redis')
    throw invalid(name, `Redis URL ${shown} (${name}): TLS through Sentinel is not supported; use redis+sentinel:// or rediss+cluster://`);
  const rest = url.slice(scheme[0].length);
  const slash = rest.lastIndexOf('/');
  const master = slash < 0 ? '' : rest.slice(slash + 1);
  if (!MASTER_NAME.test(master))
    throw invalid(name, `Redis URL ${shown} (${name}) must end with /<master name> (letters, digits, '.', '_' or '-', at most 64)`);
  return { master, ...parseSeeds(rest.slice(0, slash), shown, name) };
}

function parseSeeds(text: string, shown: string, name: string): Omit<ClusterUrl, 'tls'> {
  let rest = text;
  const at = rest.lastIndexOf('@');
  let user: string | null = null;
  let password: string | null = null;
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = userinfo.indexOf(':');
    const userPart = colon < 0 ? userinfo : userinfo.slice(0, colon);
    if (userPart !== '') user = decoded(userPart, 'user', shown, name);
    if (colon >= 0) password = decoded(userinfo.slice(colon + 1), 'password', shown, name);
  }
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  if (/[/?#]/.test(rest))
    throw invalid(name, `Redis URL ${shown} (${name}) may hold no database, path or options: a cluster has database 0 only`);
  if (rest === '') throw invalid(name, `Redis URL ${shown} (${name}) names no seed node (expected redis+cluster://host:port,host:port)`);
  const parts = rest.split(',');
  if (parts.length > CLUSTER_SEEDS_MAX) throw invalid(name, `Redis URL ${shown} (${name}) lists more than ${CLUSTER_SEEDS_MAX} seeds`);
  const seeds = parts.map((part, i): RedisSeed => {
    const match = SEED.exec(part);
    if (match === null) throw invalid(name, `seed ${i + 1} ${JSON.stringify(part)} of Redis URL ${shown} (${name}) is not host:port`);
    const port = Number(match[2]);
    if (port < 1 || port > 65_535)
      throw invalid(name, `seed ${i + 1} ${JSON.stringify(part)} of Redis URL ${shown} (${name}) has a port outside [1, 65535]`);
    const host = (match[1] as string).replace(/^\[(.*)\]$/, '$1');
    return { host, port };
  });
  return { user, password, seeds };
}
