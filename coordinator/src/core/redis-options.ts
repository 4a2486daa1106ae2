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
 * - No message holds a secret: the URL is shown redacted (`shown`).
 * - Pure: the environment is a parameter; the Redis adapter reads the files.
 */
import { redactUrl } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';

/** RedisField — one Redis setting. */
export type RedisField = 'url' | 'user' | 'password' | 'caFile' | 'certFile' | 'keyFile';

/** REDIS_ENV — the environment variable of each setting. */
export const REDIS_ENV: Readonly<Record<RedisField, string>> = {
  url: 'REDIS_URL',
  user: 'REDIS_USER',
  password: 'REDIS_PASSWORD',
  caFile: 'REDIS_CA',
  certFile: 'REDIS_CERT',
  keyFile: 'REDIS_KEY',
};

/** REDIS_FLAGS — the flag of each setting, without its dashes. */
export const REDIS_FLAGS: Readonly<Record<RedisField, string>> = {
  url: 'redis',
  user: 'redis-user',
  password: 'redis-password',
  caFile: 'redis-ca',
  certFile: 'redis-cert',
  keyFile: 'redis-key',
};

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
  const parsed = checkRedisUrl(url.value, url.name);
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
  if (tlsFile !== null && parsed.protocol !== 'rediss:') {
    throw invalid(tlsFile.name, `${tlsFile.name} is given but ${url.name} is not a rediss:// URL: TLS to Redis needs rediss://`);
  }
  for (const file of [ca, cert, key]) if (file !== null && file.value === '') throw invalid(file.name, `${file.name} is empty`);
  return {
    url: url.value,
    shown: redactUrl(url.value),
    user: user?.value ?? null,
    password: password?.value ?? null,
    tls: parsed.protocol === 'rediss:' ? { caFile: ca?.value ?? null, certFile: cert?.value ?? null, keyFile: key?.value ?? null } : null,
  };
}
