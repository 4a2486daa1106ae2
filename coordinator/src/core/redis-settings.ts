/**
 * The Redis settings of the coordinator's command line, described once:
 * each with its flag and environment variable twin (`--redis-ca` and
 * REDIS_CA), value form, default and secrecy. redis-options.ts resolves
 * them (the URL's login, TLS only for rediss://, a certificate needs its
 * key) and checks each value with the form given here.
 */
import { filePath, integerIn, matching, text, type Setting, type SettingGroup } from '@tokenlease/shared/command-line';

/** RedisField — one Redis setting. */
export type RedisField = 'url' | 'user' | 'password' | 'caFile' | 'certFile' | 'keyFile' | 'replicas' | 'replicaTimeoutMs';

/** REPLICAS_MAX — the most replicas a write may be made to wait for. */
export const REPLICAS_MAX = 16;
/** REPLICA_TIMEOUT_MS_DEFAULT — how long a write waits for its replicas by default, ms. */
export const REPLICA_TIMEOUT_MS_DEFAULT = 250;
/** REPLICA_TIMEOUT_MS_MAX — the longest wait for replicas, ms (WAIT's 0, forever, is not allowed). */
export const REPLICA_TIMEOUT_MS_MAX = 10_000;

/** REDIS_SETTINGS — each Redis setting, in the order `--help` and the reference list them. */
export const REDIS_SETTINGS = {
  url: {
    flag: 'redis',
    env: 'REDIS_URL',
    value: text(
      'url',
      '`redis://` or `rediss://` URL, `redis[s]+cluster://` seeds, or `redis+sentinel://` sentinels and `/<master>`; a login may stand inside',
    ),
    default: { derived: 'no Redis: the pools are kept in memory' },
    description: 'keep the pools in this Redis, shared with the coordinators on it (durable mode); the URL is shown redacted',
  },
  user: {
    flag: 'redis-user',
    env: 'REDIS_USER',
    value: text('name', 'text'),
    default: { derived: "the URL's, if any" },
    description: "log in as this ACL user (with its password); wins over the URL's",
  },
  password: {
    flag: 'redis-password',
    env: 'REDIS_PASSWORD',
    value: text('password', 'text'),
    default: { derived: "the URL's, if any" },
    secret: 'value',
    description: "the password to log in with; wins over the URL's",
  },
  caFile: {
    flag: 'redis-ca',
    env: 'REDIS_CA',
    value: filePath('PEM file'),
    default: { derived: "the system's CAs" },
    description: "trust these CAs for the server's certificate; needs `rediss://`",
  },
  certFile: {
    flag: 'redis-cert',
    env: 'REDIS_CERT',
    value: filePath('PEM file'),
    description: 'present this client certificate, with its key; needs `rediss://`',
  },
  keyFile: {
    flag: 'redis-key',
    env: 'REDIS_KEY',
    value: filePath('PEM file'),
    secret: 'file',
    description: "the client certificate's private key",
  },
  replicas: {
    flag: 'redis-replicas',
    env: 'REDIS_REPLICAS',
    value: integerIn(0, REPLICAS_MAX),
    default: { derived: '`0`; `1` for a cluster or through Sentinel' },
    description: 'replicas that must acknowledge a write (WAIT) before a reply that depends on it leaves',
  },
  replicaTimeoutMs: {
    flag: 'redis-replica-timeout-ms',
    env: 'REDIS_REPLICA_TIMEOUT_MS',
    value: integerIn(1, REPLICA_TIMEOUT_MS_MAX, 'ms'),
    default: String(REPLICA_TIMEOUT_MS_DEFAULT),
    description: 'longest wait for those replicas; then the write counts as not answered',
  },
} as const satisfies Readonly<Record<RedisField, Setting & { readonly flag: string; readonly env: string }>>;

/** REDIS_PREFIX — `--redis-prefix`: the prefix of the pools' keys; its form is the store's rule for any prefix (no braces: they would pick a cluster slot). */
export const REDIS_PREFIX = {
  flag: 'redis-prefix',
  value: matching(/^[^{}\s]+$/, 'may not be empty or hold braces or spaces', 'prefix', 'text without braces or spaces'),
  default: { derived: "the pools file's `subjectPrefix`" },
  description: "the prefix of the pools' Redis keys",
} as const satisfies Setting;

/** REDIS_GROUP — the Redis settings as one group of a command line. */
export const REDIS_GROUP: SettingGroup = { title: 'Redis', settings: Object.values(REDIS_SETTINGS) };

/** REDIS_ENV — the environment variable of each setting. */
export const REDIS_ENV: Readonly<Record<RedisField, string>> = fieldMap((setting) => setting.env);

/** REDIS_FLAGS — the flag of each setting, without its dashes. */
export const REDIS_FLAGS: Readonly<Record<RedisField, string>> = fieldMap((setting) => setting.flag);

function fieldMap(of: (setting: { readonly flag: string; readonly env: string }) => string): Record<RedisField, string> {
  return Object.fromEntries(Object.entries(REDIS_SETTINGS).map(([field, setting]) => [field, of(setting)])) as Record<RedisField, string>;
}
