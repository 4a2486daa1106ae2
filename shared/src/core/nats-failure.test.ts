import { describe, expect, it } from 'vitest';
import { classifyNatsFailure, natsFailureMessage, type ConnectFailure } from './nats-failure.js';
import { natsEnvLayer, resolveNatsOptions } from './nats-options.js';

const SECRET = 'Sup3r-Secret';
const withUser = resolveNatsOptions([natsEnvLayer({ NATS_URL: `nats://alice:${SECRET}@127.0.0.1:14222` })]);
const withCa = resolveNatsOptions([natsEnvLayer({ NATS_URL: 'nats://127.0.0.1:14222', NATS_CA: '/ca.pem' })]);
const plain = resolveNatsOptions([natsEnvLayer({ NATS_URL: 'nats://127.0.0.1:14222' })]);

/** An error as nats.js or Node's TLS layer throws it: a message and a code. */
function failure(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

describe('classifyNatsFailure', () => {
  it.each<[string, Error, typeof withUser, ConnectFailure['code'], RegExp]>([
    [
      'a refused login',
      failure('AUTHORIZATION_VIOLATION', "'Authorization Violation'"),
      withUser,
      'bus-auth-failed',
      /authorization violation: the server refused the login/,
    ],
    ['no login where one is wanted', failure('AUTHORIZATION_VIOLATION'), plain, 'bus-auth-failed', /wants a login and none was given/],
    ['expired credentials', failure('AUTHENTICATION_EXPIRED'), withUser, 'bus-auth-failed', /expired/],
    ['TLS the server lacks', failure('SERVER_OPT_NA', 'tls'), withCa, 'bus-tls-failed', /TLS handshake failure: .* does not offer it/],
    [
      'an untrusted server certificate',
      failure('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'),
      plain,
      'bus-tls-failed',
      /certificate problem: .* not trusted .*NATS_CA or --nats-ca/,
    ],
    ['a self-signed server certificate', failure('DEPTH_ZERO_SELF_SIGNED_CERT'), plain, 'bus-tls-failed', /certificate problem/],
    [
      'an expired server certificate',
      failure('CERT_HAS_EXPIRED', 'certificate has expired'),
      withCa,
      'bus-tls-failed',
      /certificate problem: .* has expired/,
    ],
    ['a certificate for another host', failure('ERR_TLS_CERT_ALTNAME_INVALID'), withCa, 'bus-tls-failed', /not for this host/],
    [
      'our certificate refused',
      failure('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA'),
      withCa,
      'bus-tls-failed',
      /refused our certificate .*NATS_CERT or --nats-cert/,
    ],
    [
      'an unusable key',
      failure('ERR_OSSL_X509_KEY_VALUES_MISMATCH'),
      withCa,
      'bus-tls-failed',
      /certificate problem: the client certificate, its key or the CA/,
    ],
    [
      'another TLS failure',
      failure('ERR_SSL_WRONG_VERSION_NUMBER'),
      withCa,
      'bus-tls-failed',
      /TLS handshake failure \(ERR_SSL_WRONG_VERSION_NUMBER/,
    ],
    [
      'a timeout without a client certificate',
      failure('TIMEOUT'),
      withCa,
      'bus-connect-timeout',
      /timeout: no completed login within 5000 ms \(a server that requires a client certificate .*NATS_CERT or --nats-cert/,
    ],
    ['a refused connection', failure('CONNECTION_REFUSED'), withUser, 'bus-unreachable', /connection refused/],
    ['an unknown host', failure('ENOTFOUND'), plain, 'bus-unreachable', /host not found/],
    ['anything else', new Error('boom'), plain, 'bus-unreachable', /boom/],
  ])('%s', (_name, error, options, code, reason) => {
    const classified = classifyNatsFailure(error, options);
    expect(classified.code).toBe(code);
    expect(classified.reason).toMatch(reason);
    const line = natsFailureMessage(options, classified);
    expect(line).not.toContain(SECRET);
    expect(line).not.toContain('\n');
    expect(line).toMatch(/^cannot connect to NATS at nats:\/\/127\.0\.0\.1:14222 \(/);
  });
});
