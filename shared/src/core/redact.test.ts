import { describe, expect, it } from 'vitest';
import { REDACTED, redactUrl, redactUrlList } from './redact.js';

describe('redactUrl', () => {
  it.each<[string, string]>([
    ['nats://alice:s3cret@127.0.0.1:4222', `nats://alice:${REDACTED}@127.0.0.1:4222`],
    ['nats://t0ken@127.0.0.1:4222', `nats://${REDACTED}@127.0.0.1:4222`],
    ['redis://:pw@127.0.0.1:6379/0', `redis://:${REDACTED}@127.0.0.1:6379/0`],
    ['rediss://app:p%40ss@redis.example:6380', `rediss://app:${REDACTED}@redis.example:6380`],
    ['redis://app:pa/ss@host:6379', `redis://app:${REDACTED}@host:6379`],
    ['redis://app:pa@ss@host:6379', `redis://app:${REDACTED}@host:6379`],
    ['alice:s3cret@host:4222', `alice:${REDACTED}@host:4222`],
    ['nats://127.0.0.1:4222', 'nats://127.0.0.1:4222'],
    ['not a url', 'not a url'],
    ['', ''],
  ])('%s -> %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('never shows the secret, whatever surrounds it', () => {
    for (const url of ['nats://u:SECRET@h', 'nats://SECRET@h', 'redis://:SECRET@h/1?x=y', 'SECRET@h', 'tls://u:SEC@RET@h:1']) {
      expect(redactUrl(url)).not.toMatch(/SEC|RET/);
    }
  });
});

describe('redactUrlList', () => {
  it('redacts each entry of a list', () => {
    expect(redactUrlList('nats://a:x@h1:4222,nats://tok@h2:4222,h3:4222')).toBe(
      `nats://a:${REDACTED}@h1:4222,nats://${REDACTED}@h2:4222,h3:4222`,
    );
  });
});
