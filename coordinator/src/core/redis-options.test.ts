import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { CoordinatorError } from '../errors.js';
import { resolveRedisOptions } from './redis-options.js';

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
  ])('refuses %s, naming the setting and no secret', (_name, flags, env, field) => {
    const error = thrown(CoordinatorError, () => resolveRedisOptions(flags, env));
    expect(error.code).toBe('config-invalid');
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
    expect(error.message).not.toContain(SECRET);
  });
});
