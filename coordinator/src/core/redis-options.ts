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
 *   counts as not answered. Both are integers in the ranges of their
 *   forms (redis-settings.ts, where every setting is described).
 * - No message holds a secret: the URL is shown redacted (`shown`).
 * - Pure: the environment is a parameter; the Redis adapter reads the files.
 */
import { redactUrl } from '@tokenlease/shared';
import { checkSetting, givenSetting, type Given, type Setting } from '@tokenlease/shared/command-line';
import type { z } from 'zod';
import { CoordinatorError } from '../errors.js';
import { isClusterUrl, isSentinelUrl, parseClusterUrl, parseSentinelUrl, type RedisSeed } from './redis-cluster-url.js';
import { REDIS_PREFIX, REDIS_SETTINGS, REPLICA_TIMEOUT_MS_DEFAULT, type RedisField } from './redis-settings.js';

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

/**
 * checkKeyPrefix — `prefix` if it may start every key of a store, by the
 * rule of `--redis-prefix` (redis-settings.ts, REDIS_PREFIX: not empty; no
 * braces, since a key's hash tag must be its unit's `{…}`; no spaces);
 * CoordinatorError('config-invalid') otherwise.
 */
export function checkKeyPrefix(prefix: string): string {
  const checked = checkSetting(REDIS_PREFIX, 'Redis key prefix', prefix);
  if (!checked.ok) throw new CoordinatorError('config-invalid', checked.message);
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
  const pick = (field: RedisField): Given | null => givenSetting(REDIS_SETTINGS[field], flags, env);
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
  for (const [field, file] of [['caFile', ca] as const, ['certFile', cert] as const, ['keyFile', key] as const]) {
    if (file !== null) checked(field, file);
  }
  const [replicasGiven, timeoutGiven] = [pick('replicas'), pick('replicaTimeoutMs')];
  const replicas = replicasGiven === null ? (seeded === null ? 0 : 1) : checked('replicas', replicasGiven);
  const replicaTimeoutMs = timeoutGiven === null ? REPLICA_TIMEOUT_MS_DEFAULT : checked('replicaTimeoutMs', timeoutGiven);
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

/** RedisValue — the type of a field's value once its form took it. */
type RedisValue<F extends RedisField> = z.output<(typeof REDIS_SETTINGS)[F]['value']>;

/** checked — `given` through the value form of `field` (redis-settings.ts); refused naming the flag or variable. */
function checked<F extends RedisField>(field: F, given: Given): RedisValue<F> {
  const result = checkSetting(REDIS_SETTINGS[field] as Setting<RedisValue<F>>, given.name, given.value);
  if (!result.ok) throw invalid(given.name, result.message);
  return result.value;
}
