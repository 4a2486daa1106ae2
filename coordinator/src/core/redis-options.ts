/**
 * Redis connection settings: flags over environment variables, to one
 * validated RedisConnectOptions.
 *
 * Rules:
 * - Each setting is taken from its flag, else its variable (`--redis-ca`
 *   over REDIS_CA); an empty variable counts as unset. `--memory` (the
 *   caller's business) means no Redis whatever the environment says.
 * - A login may stand inside the URL (`redis://user:password@host`,
 *   `redis://:password@host`) or come from `--redis-user`/REDIS_USER and
 *   `--redis-password`/REDIS_PASSWORD, which win over the URL's.
 * - TLS files need a `rediss://` URL: a CA or client certificate given for
 *   a plain `redis://` URL is refused rather than silently unused, and a
 *   client certificate needs its key.
 * - A cluster (`redis+cluster://h1:p1,h2:p2`, redis-cluster-url.ts) is
 *   reached through its seeds; its URL's login is taken apart into `user`
 *   and `password` (the flags still win), as the cluster client needs it.
 *   So is a Sentinel URL's (`redis+sentinel://h1:p1,h2:p2/<master>`), whose
 *   sentinels name the master's current primary; no TLS files with it.
 * - Replica confirmation (`--redis-replicas N`/REDIS_REPLICAS, default 0
 *   for one Redis and 1 for a cluster; `--redis-replica-timeout-ms`/
 *   REDIS_REPLICA_TIMEOUT_MS, default 250; 1 through Sentinel too): a write a reply depends on
 *   must be acknowledged by N replicas (WAIT) within the timeout, or it
 *   counts as not answered. Both are integers in their ranges.
 * - No message holds a secret: the URL is shown redacted (`shown`).
 * - Pure: the environment is a parameter; the Redis adapter reads the files.
 */
import { redactUrl } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import { isClusterUrl, isSentinelUrl, parseClusterUrl, parseSentinelUrl, type RedisSeed } from './redis-cluster-url.js';

/** RedisField — one Redis setting. */
export type RedisField = 'url' | 'user' | 'password' | 'caFile' | 'certFile' | 'keyFile' | 'replicas' | 'replicaTimeoutMs';

/** REDIS_ENV — the environment variable of each setting. */
export const REDIS_ENV: Readonly<Record<RedisField, string>> = {
  url: 'REDIS_URL',
  user: 'REDIS_USER',
  password: 'REDIS_PASSWORD',
  caFile: 'REDIS_CA',
  certFile: 'REDIS_CERT',
  keyFile: 'REDIS_KEY',
  replicas: 'REDIS_REPLICAS',
  replicaTimeoutMs: 'REDIS_REPLICA_TIMEOUT_MS',
};

/** REDIS_FLAGS — the flag of each setting, without its dashes. */
export const REDIS_FLAGS: Readonly<Record<RedisField, string>> = {
  url: 'redis',
  user: 'redis-user',
  password: 'redis-password',
  caFile: 'redis-ca',
  certFile: 'redis-cert',
  keyFile: 'redis-key',
  replicas: 'redis-replicas',
  replicaTimeoutMs: 'redis-replica-timeout-ms',
};

/** REPLICAS_MAX — the most replicas a write may be made to wait for. */
export const REPLICAS_MAX = 16;
/** REPLICA_TIMEOUT_MS_DEFAULT — how long a write waits for its replicas by default, ms. */
export const REPLICA_TIMEOUT_MS_DEFAULT = 250;
/** REPLICA_TIMEOUT_MS_MAX — the longest wait for replicas, ms (WAIT's 0, forever, is not allowed). */
export const REPLICA_TIMEOUT_MS_MAX = 10_000;

/** RedisTls — the files of a TLS connection (null: not given; the system's CAs are trusted). */
export interface RedisTls {
  readonly caFile: string | null;
  readonly certFile: string | null;
  readonly keyFile: string | null;
}

/** RedisConnectOptions — one validated way to reach Redis. */
export interface RedisConnectOptions {
  /** The URL as given, credentials and all: for the client only, never to print. */
  readonly url: string;
  /** The URL to print: redacted. */
  readonly shown: string;
  /** An ACL user and a password given apart from the URL (null: the URL's, if any). */
  readonly user: string | null;
  readonly password: string | null;
  /** Null for a redis:// URL. */
  readonly tls: RedisTls | null;
  /** The seed nodes of a Redis Cluster (a redis+cluster:// URL); null for one Redis. */
  readonly cluster: readonly RedisSeed[] | null;
  /** The sentinels and master name of a redis+sentinel:// URL; null otherwise. */
  readonly sentinel: { readonly master: string; readonly seeds: readonly RedisSeed[] } | null;
  /** How many replicas must acknowledge a write before a reply that depends on it leaves (0: none are waited for). */
  readonly replicas: number;
  /** How long a write waits for those replicas, ms; then it counts as not answered. */
  readonly replicaTimeoutMs: number;
}

function invalid(field: string, message: string): CoordinatorError {
  return new CoordinatorError('config-invalid', message, { field });
}

/** checkRedisUrl — the parsed `url` if it is a redis:// or rediss:// URL naming a host; CoordinatorError('config-invalid') naming `name` otherwise, the URL redacted. */
export function checkRedisUrl(url: string, name = 'the Redis URL'): URL {
  const shown = JSON.stringify(redactUrl(url));
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(name, `Redis URL ${shown} (${name}) is not a URL (expected redis://host:port)`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw invalid(name, `Redis URL ${shown} (${name}) must start with redis:// or rediss://`);
  }
  if (parsed.hostname === '') throw invalid(name, `Redis URL ${shown} (${name}) names no host`);
  return parsed;
}

/** checkKeyPrefix — `prefix` if it may start every key of a store (not empty; no braces, since a key's hash tag must be its unit's `{…}`; no spaces); CoordinatorError('config-invalid') otherwise. */
export function checkKeyPrefix(prefix: string): string {
  if (/[{}\s]/.test(prefix) || prefix.length === 0) {
    throw new CoordinatorError('config-invalid', `Redis key prefix ${JSON.stringify(prefix)} may not be empty or hold braces or spaces`);
  }
  return prefix;
}

/**
 * resolveRedisOptions — the Redis to use from parseArgs `flags` over
 * `env`, or null when neither names a URL. Throws
 * CoordinatorError('config-invalid') naming the flag or variable.
 */
export function resolveRedisOptions(
  flags: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): RedisConnectOptions | null {
  const pick = (field: RedisField): { value: string; name: string } | null => {
    const flag = Object.prototype.hasOwnProperty.call(flags, REDIS_FLAGS[field]) ? flags[REDIS_FLAGS[field]] : undefined;
    if (typeof flag === 'string') return { value: flag, name: `--${REDIS_FLAGS[field]}` };
    const variable = Object.prototype.hasOwnProperty.call(env, REDIS_ENV[field]) ? env[REDIS_ENV[field]] : undefined;
    return variable === undefined || variable === '' ? null : { value: variable, name: REDIS_ENV[field] };
  };
  const url = pick('url');
  if (url === null) return null;
  const cluster = isClusterUrl(url.value) ? parseClusterUrl(url.value, url.name) : null;
  const sentinel = isSentinelUrl(url.value) ? parseSentinelUrl(url.value, url.name) : null;
  const seeded = cluster ?? sentinel;
  const secure = cluster?.tls ?? (sentinel === null && checkRedisUrl(url.value, url.name).protocol === 'rediss:');
  const user = pick('user');
  const password = pick('password');
  if (user !== null && password === null)
    throw invalid(user.name, `${user.name} is given without a password (--redis-password or REDIS_PASSWORD)`);
  const [ca, cert, key] = [pick('caFile'), pick('certFile'), pick('keyFile')];
  if ((cert === null) !== (key === null)) {
    const given = (cert ?? key) as { name: string };
    throw invalid(
      given.name,
      `${given.name} is given without ${cert === null ? '--redis-cert or REDIS_CERT' : '--redis-key or REDIS_KEY'}: a client certificate needs its key`,
    );
  }
  const tlsFile = ca ?? cert;
  if (tlsFile !== null && !secure) {
    if (sentinel !== null)
      throw invalid(
        tlsFile.name,
        `${tlsFile.name} is given but ${url.name} is a redis+sentinel:// URL: TLS through Sentinel is not supported`,
      );
    const scheme = cluster === null ? 'rediss://' : 'rediss+cluster://';
    throw invalid(tlsFile.name, `${tlsFile.name} is given but ${url.name} is not a ${scheme} URL: TLS to Redis needs ${scheme}`);
  }
  for (const file of [ca, cert, key]) if (file !== null && file.value === '') throw invalid(file.name, `${file.name} is empty`);
  const replicas = integerSetting(pick('replicas'), 0, REPLICAS_MAX, seeded === null ? 0 : 1);
  const replicaTimeoutMs = integerSetting(pick('replicaTimeoutMs'), 1, REPLICA_TIMEOUT_MS_MAX, REPLICA_TIMEOUT_MS_DEFAULT);
  // A cluster URL's login is handed to the client apart (a single Redis URL keeps its own: null means the URL's).
  return {
    url: url.value,
    shown: redactUrl(url.value),
    user: user?.value ?? seeded?.user ?? null,
    password: password?.value ?? seeded?.password ?? null,
    tls: secure ? { caFile: ca?.value ?? null, certFile: cert?.value ?? null, keyFile: key?.value ?? null } : null,
    cluster: cluster === null ? null : cluster.seeds,
    sentinel: sentinel === null ? null : { master: sentinel.master, seeds: sentinel.seeds },
    replicas,
    replicaTimeoutMs,
  };
}

/** integerSetting — the integer `given` names, in [min, max]; `fallback` when not given. */
function integerSetting(given: { value: string; name: string } | null, min: number, max: number, fallback: number): number {
  if (given === null) return fallback;
  const value = /^[0-9]{1,9}$/.test(given.value) ? Number(given.value) : NaN;
  if (!(value >= min && value <= max))
    throw invalid(given.name, `${given.name} must be an integer in [${min}, ${max}], got ${JSON.stringify(given.value)}`);
  return value;
}
