import { describe, expect, it } from 'vitest';
import { appendOnlyVerdict, connectReason } from './redis-connect-reason.js';

const coded = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe('connectReason', () => {
  it.each<[string, unknown, unknown, boolean, string | RegExp]>([
    ['the last connection error over the rejection', new Error('None of startup nodes is available'), new Error('boom'), false, 'boom'],
    [
      'the rejection when nothing else was heard',
      new Error('connect ECONNREFUSED 127.0.0.1:1'),
      null,
      false,
      'connect ECONNREFUSED 127.0.0.1:1',
    ],
    [
      'a refused login, on one line',
      null,
      new Error('WRONGPASS invalid\n username-password pair'),
      false,
      'authentication failed (WRONGPASS invalid username-password pair)',
    ],
    [
      'a command the ACL refuses',
      null,
      new Error("NOPERM this user has no permissions to run the 'info' command"),
      false,
      /^permission refused to this user/,
    ],
    [
      'an untrusted server certificate',
      null,
      coded('self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN'),
      false,
      /^certificate problem: .*--redis-ca or REDIS_CA/,
    ],
    [
      'our certificate refused',
      null,
      coded('alert', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'),
      false,
      /^TLS handshake failure: .*--redis-cert and --redis-key/,
    ],
    [
      'a reset after a TLS handshake without a certificate',
      null,
      coded('write ECONNRESET', 'ECONNRESET'),
      true,
      /^write ECONNRESET \(no client certificate was given: .*--redis-cert and --redis-key/,
    ],
    ['a reset with a certificate given: no hint', null, coded('write ECONNRESET', 'ECONNRESET'), false, 'write ECONNRESET'],
  ])('%s', (_name, error, lastError, tlsWithoutCert, expected) => {
    const reason = connectReason(error, lastError, tlsWithoutCert);
    if (typeof expected === 'string') expect(reason).toBe(expected);
    else expect(reason).toMatch(expected);
    expect(reason).not.toContain('\n');
  });
});

describe('appendOnlyVerdict', () => {
  it.each<[string, unknown, RegExp | null]>([
    ['append-only, fsync always', ['appendonly', 'yes', 'appendfsync', 'always'], null],
    ['fsync every second', ['appendfsync', 'everysec', 'appendonly', 'yes'], /appendfsync everysec: a crash of Redis may lose/],
    ['no append-only file', ['appendonly', 'no', 'appendfsync', 'always'], /without appendonly/],
    ['nothing said about fsync', ['appendonly', 'yes'], /appendfsync \?/],
    ['a reply that is no list', 'OK', null],
  ])('%s', (_name, reply, expected) => {
    const verdict = appendOnlyVerdict(reply);
    if (expected === null) expect(verdict).toBeNull();
    else expect(verdict).toMatch(expected);
  });
});
