import { describe, expect, it } from 'vitest';
import { connectReason } from './redis-connect-reason.js';

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
