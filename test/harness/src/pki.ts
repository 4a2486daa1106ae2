/**
 * Certificates for TLS tests, made on the spot with `openssl` (P-256 keys,
 * valid for two days): a CA, a server certificate for 127.0.0.1 and
 * localhost, a client certificate, and a second, unrelated CA with a client
 * certificate of its own (one the servers must refuse). Nothing here is
 * kept beyond the test's scratch folder.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findExecutable } from './binaries.js';

export interface Pki {
  /** The CA that signed the server and client certificates (PEM). */
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** Another CA: trusting it instead of `caFile` must fail the handshake. */
  readonly otherCaFile: string;
  /** A client certificate signed by the other CA: servers trusting `caFile` must refuse it. */
  readonly strangerCertFile: string;
  readonly strangerKeyFile: string;
}

function openssl(args: readonly string[]): void {
  const binary = findExecutable('openssl');
  if (binary === null) throw new Error('TLS tests need the openssl binary (Debian: apt-get install openssl)');
  execFileSync(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** newKeyRequest — a fresh P-256 key at `key` and a request for `commonName` at `out` (a self-signed certificate with `-x509`). */
function newKeyRequest(key: string, out: string, commonName: string, extra: readonly string[] = []): void {
  openssl([
    'req',
    ...extra,
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    out,
    '-subj',
    `/CN=${commonName}`,
  ]);
}

function selfSignedCa(dir: string, name: string, commonName: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}.key`);
  newKeyRequest(key, cert, commonName, ['-x509', '-days', '2']);
  return { cert, key };
}

/** signed — a key and a certificate for `commonName` signed by `ca`, with the extensions in `ext`. */
function signed(
  dir: string,
  name: string,
  commonName: string,
  ca: { cert: string; key: string },
  ext: string,
): { cert: string; key: string } {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.pem`);
  const extFile = join(dir, `${name}.ext`);
  writeFileSync(extFile, ext);
  newKeyRequest(key, csr, commonName);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-out',
    cert,
    '-days',
    '2',
    '-extfile',
    extFile,
  ]);
  return { cert, key };
}

/** makePki — every certificate and key of Pki, written into `dir`. */
export function makePki(dir: string): Pki {
  const ca = selfSignedCa(dir, 'ca', 'tokenlease test CA');
  const other = selfSignedCa(dir, 'other-ca', 'some other CA');
  const server = signed(dir, 'server', '127.0.0.1', ca, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  const client = signed(dir, 'client', 'checkout', ca, 'extendedKeyUsage=clientAuth\n');
  const stranger = signed(dir, 'stranger', 'checkout', other, 'extendedKeyUsage=clientAuth\n');
  return {
    caFile: ca.cert,
    serverCertFile: server.cert,
    serverKeyFile: server.key,
    clientCertFile: client.cert,
    clientKeyFile: client.key,
    otherCaFile: other.cert,
    strangerCertFile: stranger.cert,
    strangerKeyFile: stranger.key,
  };
}
