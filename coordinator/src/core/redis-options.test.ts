import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { CoordinatorError } from '../errors.js';
import { checkKeyPrefix, resolveRedisOptions } from './redis-options.js';

const SECRET = 'Sup3r-Secret';

describe('resolveRedisOptions', () => {
  it('is null when neither a flag nor the environment names a Redis', () => {
    expect(resolveRedisOptions({}, {})).toBeNull();
    expect(resolveRedisOptions({}, { REDIS_URL: '' })).toBeNull();
  });

  it('keeps the URL for the client and shows it redacted', () => {
    expect(resolveRedisOptions({}, { REDIS_URL: `redis://app:${SECRET}@127.0.0.1:6379/0` })).toEqual({
      url: `redis://app:${SECRET}@127.0.0.1:6379/0`,
      shown: 'redis://app:***@127.0.0.1:6379/0',
      user: null,
      password: null,
      tls: null,
      cluster: null,
      sentinel: null,
      replicas: 0,
      replicaTimeoutMs: 250,
    });
  });

  it('takes a login and TLS files from flags over the environment', () => {
    const resolved = resolveRedisOptions(
      { redis: 'rediss://127.0.0.1:6380', 'redis-password': SECRET, 'redis-ca': '/f/ca.pem' },
      { REDIS_URL: 'redis://elsewhere:1', REDIS_USER: 'app', REDIS_PASSWORD: 'old', REDIS_CERT: '/e/c.pem', REDIS_KEY: '/e/c.key' },
    );
    expect(resolved).toEqual({
      url: 'rediss://127.0.0.1:6380',
      shown: 'rediss://127.0.0.1:6380',
      user: 'app',
      password: SECRET,
      tls: { caFile: '/f/ca.pem', certFile: '/e/c.pem', keyFile: '/e/c.key' },
      cluster: null,
      sentinel: null,
      replicas: 0,
      replicaTimeoutMs: 250,
    });
  });

  it('uses TLS trusting the system CAs for a rediss:// URL alone', () => {
    expect(resolveRedisOptions({ redis: 'rediss://h:6380' }, {})?.tls).toEqual({ caFile: null, certFile: null, keyFile: null });
  });

  it.each<[string, Record<string, string>, Record<string, string>, string]>([
    ['a URL that is none', { redis: `redis://a:${SECRET}@h:99999` }, {}, '--redis'],
    ['another scheme', {}, { REDIS_URL: `http://a:${SECRET}@h` }, 'REDIS_URL'],
    ['a user without a password', { redis: 'redis://h' }, { REDIS_USER: 'app' }, 'REDIS_USER'],
    ['a CA for a plain redis:// URL', { redis: `redis://:${SECRET}@h`, 'redis-ca': '/ca.pem' }, {}, '--redis-ca'],
    ['a certificate without its key', { redis: 'rediss://h', 'redis-cert': '/c.pem' }, {}, '--redis-cert'],
    ['a key without its certificate', { redis: 'rediss://h' }, { REDIS_KEY: '/c.key' }, 'REDIS_KEY'],
    ['an empty CA flag', { redis: 'rediss://h', 'redis-ca': '' }, {}, '--redis-ca'],
    ['a cluster URL with no seed', { redis: `redis+cluster://a:${SECRET}@` }, {}, '--redis'],
    ['a cluster URL with an empty seed', {}, { REDIS_URL: `redis+cluster://:${SECRET}@h1:7000,,h3:7002` }, 'REDIS_URL'],
    ['a cluster seed without a port', { redis: 'redis+cluster://h1:7000,h2' }, {}, '--redis'],
    ['a cluster seed with port 0', { redis: 'redis+cluster://h1:0' }, {}, '--redis'],
    ['a cluster seed with a port past 65535', { redis: `redis+cluster://a:${SECRET}@h1:65536` }, {}, '--redis'],
    ['a cluster URL with a database', { redis: `redis+cluster://a:${SECRET}@h1:7000/2` }, {}, '--redis'],
    ['a cluster URL with options', { redis: 'redis+cluster://h1:7000?x=1' }, {}, '--redis'],
    ['a badly escaped cluster password', { redis: 'redis+cluster://a:%E0%A4%A@h1:7000' }, {}, '--redis'],
    ['too many cluster seeds', { redis: `redis+cluster://${Array.from({ length: 65 }, (_, i) => `h:${i + 1}`).join(',')}` }, {}, '--redis'],
    ['a CA for a plain cluster URL', { redis: 'redis+cluster://h1:7000', 'redis-ca': '/ca.pem' }, {}, '--redis-ca'],
    ['a Sentinel URL without a master name', { redis: `redis+sentinel://a:${SECRET}@h1:26379` }, {}, '--redis'],
    ['a Sentinel URL with an empty master name', { redis: `redis+sentinel://a:${SECRET}@h1:26379/` }, {}, '--redis'],
    ['a Sentinel master name with a space', {}, { REDIS_URL: `redis+sentinel://:${SECRET}@h1:26379/my%20master` }, 'REDIS_URL'],
    ['a Sentinel URL without a sentinel', { redis: `redis+sentinel://a:${SECRET}@/mymaster` }, {}, '--redis'],
    ['a sentinel without a port', { redis: 'redis+sentinel://h1:26379,h2/mymaster' }, {}, '--redis'],
    ['TLS through Sentinel', { redis: `rediss+sentinel://a:${SECRET}@h1:26379/mymaster` }, {}, '--redis'],
    ['a CA for a Sentinel URL', { redis: 'redis+sentinel://h1:26379/mymaster', 'redis-ca': '/ca.pem' }, {}, '--redis-ca'],
    ['replicas that are not a count', { redis: 'redis://h', 'redis-replicas': '-1' }, {}, '--redis-replicas'],
    ['more replicas than allowed', { redis: 'redis://h' }, { REDIS_REPLICAS: '17' }, 'REDIS_REPLICAS'],
    ['a replica timeout of 0 (WAIT forever)', { redis: 'redis://h', 'redis-replica-timeout-ms': '0' }, {}, '--redis-replica-timeout-ms'],
    ['a fractional replica timeout', { redis: 'redis://h' }, { REDIS_REPLICA_TIMEOUT_MS: '2.5' }, 'REDIS_REPLICA_TIMEOUT_MS'],
    ['a replica timeout past the limit', { redis: 'redis://h', 'redis-replica-timeout-ms': '10001' }, {}, '--redis-replica-timeout-ms'],
  ])('refuses %s, naming the setting and no secret', (_name, flags, env, field) => {
    const error = thrown(CoordinatorError, () => resolveRedisOptions(flags, env));
    expect(error.code).toBe('config-invalid');
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
    expect(error.message).not.toContain(SECRET);
  });

  it('takes a cluster URL: its seeds, its login apart, and one replica confirming each write by default', () => {
    expect(
      resolveRedisOptions({ redis: `redis+cluster://app:${encodeURIComponent(SECRET + '@x')}@10.0.0.1:7000,[::1]:7001/` }, {}),
    ).toEqual({
      url: `redis+cluster://app:${encodeURIComponent(SECRET + '@x')}@10.0.0.1:7000,[::1]:7001/`,
      shown: 'redis+cluster://app:***@10.0.0.1:7000,[::1]:7001/',
      user: 'app',
      password: `${SECRET}@x`,
      tls: null,
      cluster: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
      ],
      sentinel: null,
      replicas: 1,
      replicaTimeoutMs: 250,
    });
  });

  it('lets the login flags win over a cluster URL’s, and takes TLS files for rediss+cluster://', () => {
    const resolved = resolveRedisOptions(
      { redis: `REDISS+CLUSTER://old:old@h1:7000`, 'redis-password': SECRET, 'redis-ca': '/ca.pem' },
      { REDIS_REPLICAS: '2', REDIS_REPLICA_TIMEOUT_MS: '1000' },
    );
    expect(resolved).toMatchObject({
      user: 'old',
      password: SECRET,
      tls: { caFile: '/ca.pem', certFile: null, keyFile: null },
      cluster: [{ host: 'h1', port: 7000 }],
      replicas: 2,
      replicaTimeoutMs: 1000,
    });
  });

  it('takes a Sentinel URL: its sentinels, the master name, the servers’ login apart, one replica confirming each write by default', () => {
    expect(
      resolveRedisOptions({ redis: `redis+sentinel://app:${encodeURIComponent(SECRET)}@10.0.0.1:26379,[::1]:26380/my-master.1` }, {}),
    ).toEqual({
      url: `redis+sentinel://app:${encodeURIComponent(SECRET)}@10.0.0.1:26379,[::1]:26380/my-master.1`,
      shown: 'redis+sentinel://app:***@10.0.0.1:26379,[::1]:26380/my-master.1',
      user: 'app',
      password: SECRET,
      tls: null,
      cluster: null,
      sentinel: {
        master: 'my-master.1',
        seeds: [
          { host: '10.0.0.1', port: 26379 },
          { host: '::1', port: 26380 },
        ],
      },
      replicas: 1,
      replicaTimeoutMs: 250,
    });
  });

  it.each<[Record<string, string>, Record<string, string>, number, number]>([
    [{ redis: 'redis://h' }, {}, 0, 250],
    [{ redis: 'redis://h', 'redis-replicas': '1' }, { REDIS_REPLICAS: '3' }, 1, 250],
    [{ redis: 'redis+cluster://h:7000' }, {}, 1, 250],
    [{ redis: 'redis+cluster://h:7000' }, { REDIS_REPLICAS: '0', REDIS_REPLICA_TIMEOUT_MS: '' }, 0, 250],
    [{ redis: 'redis://h', 'redis-replica-timeout-ms': '10000' }, {}, 0, 10_000],
  ])('replica confirmation from %j and %j: %i replicas within %i ms', (flags, env, replicas, replicaTimeoutMs) => {
    expect(resolveRedisOptions(flags, env)).toMatchObject({ replicas, replicaTimeoutMs });
  });
});

describe('checkKeyPrefix', () => {
  it.each(['tokenlease', 'team-a:limits', 'a'])('takes %j', (prefix) => {
    expect(checkKeyPrefix(prefix)).toBe(prefix);
  });

  // A brace in the prefix would make its hash tag the key's, instead of the unit's `{…}` that keeps a unit's keys together.
  it.each(['', 'a{b}', 'a}', 'a b', 'tab\there', 'line\n'])('refuses %j, naming it', (prefix) => {
    const error = thrown(CoordinatorError, () => checkKeyPrefix(prefix));
    expect(error.code).toBe('config-invalid');
    // Worded as every setting's problem (the rule of --redis-prefix): the value shown unless it is empty.
    const got = prefix === '' ? '' : `, got ${JSON.stringify(prefix)}`;
    expect(error.message).toBe(`Redis key prefix may not be empty or hold braces or spaces${got}`);
  });
});
