/**
 * The grant signing key: a coordinator given one signs each grant as it leaves (ReplyLog),
 * over the grant and its request; a key file that is not one stops it, naming neither the
 * path nor the text.
 */
import { generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { decodeReply, grantSigningText, type LeaseGrant } from '@tokenlease/shared';
import type { ReplyPort } from '@tokenlease/shared/nats';
import { GRANT_SIGNING_KEY_ENV, grantSignerFrom, signerOf } from './grant-signer.js';
import { ReplyLog } from './reply-log.js';

const GRANT: LeaseGrant = {
  v: 2,
  kind: 'grant',
  seq: 7,
  leaseId: 'L1',
  tokensGranted: 20,
  tokensHeld: 20,
  ttlMs: 500,
  epoch: 3,
  maxLeaseTokens: 20,
  capacityTokens: 100,
  refillTokens: 100,
  refillPeriodMs: 1000,
  retryAfterMs: 0,
};
const FOR = { agentId: 'agent-1', pool: 'api' };

function capture(): { port: ReplyPort; sent: Uint8Array[] } {
  const sent: Uint8Array[] = [];
  return { port: { respond: (bytes: Uint8Array) => sent.push(bytes) > 0, replySubject: '_INBOX.x' }, sent };
}

describe('grant signing', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');

  it('signs each grant as it leaves, over the grant and the request it answers; other replies go as they are', () => {
    const log = new ReplyLog(pino({ level: 'silent' }), 'tokenlease', () => 0, 1000, null, signerOf(privateKey));
    const { port, sent } = capture();
    log.send([{ to: port, reply: GRANT, grantFor: FOR }], 0, { pool: 'api' });
    log.send([{ to: port, reply: { v: 2, kind: 'receipt', seq: 8, tokensReturned: 3 } }], 0, { pool: 'api' });
    const decoded = decodeReply(sent[0] as Uint8Array);
    if (!decoded.ok || decoded.value.kind !== 'grant' || decoded.value.sig === undefined) throw new Error('no signed grant sent');
    const text = Buffer.from(grantSigningText(decoded.value, FOR));
    expect(verify(null, text, publicKey, Buffer.from(decoded.value.sig, 'base64url'))).toBe(true);
    const forAnother = Buffer.from(grantSigningText(decoded.value, { ...FOR, agentId: 'agent-2' }));
    expect(verify(null, forAnother, publicKey, Buffer.from(decoded.value.sig, 'base64url'))).toBe(false);
    expect(new TextDecoder().decode(sent[1])).not.toContain('sig');
  });

  it('signs nothing without a key', () => {
    const log = new ReplyLog(pino({ level: 'silent' }), 'tokenlease', () => 0, 1000);
    const { port, sent } = capture();
    log.send([{ to: port, reply: GRANT, grantFor: FOR }], 0, { pool: 'api' });
    expect(new TextDecoder().decode(sent[0])).not.toContain('sig');
  });

  const dir = mkdtempSync(join(tmpdir(), 'tl-signing-'));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const failWith = (status: number, message: string): never => {
    throw new Error(`${status} ${message}`);
  };
  const ed25519Pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const rsaPem = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  it('reads the key from --grant-signing-key, else from the environment, else signs nothing', () => {
    expect(grantSignerFrom({ 'grant-signing-key': file('k.pem', ed25519Pem) }, {}, failWith)).not.toBeNull();
    expect(grantSignerFrom({}, { [GRANT_SIGNING_KEY_ENV]: file('k2.pem', ed25519Pem) }, failWith)).not.toBeNull();
    expect(grantSignerFrom({}, {}, failWith)).toBeNull();
  });

  const bad: readonly (readonly [string, string, RegExp])[] = [
    ['a missing file', join(dir, 'secret-name-missing.pem'), /2 --grant-signing-key: the grant signing key file could not be read/],
    [
      'a file of text',
      file('secret-name-text.pem', 'my-secret-passphrase'),
      /2 --grant-signing-key: the file does not hold a private key in PEM/,
    ],
    ['an RSA key', file('secret-name-rsa.pem', rsaPem), /2 --grant-signing-key: the key is not an Ed25519 key/],
  ];
  it.each(bad)('stops at %s with status 2, naming neither its path nor its text', (_name, path, why) => {
    expect(() => grantSignerFrom({ 'grant-signing-key': path }, {}, failWith)).toThrow(why);
    try {
      grantSignerFrom({ 'grant-signing-key': path }, {}, failWith);
    } catch (error) {
      expect(String(error)).not.toMatch(/secret-name|my-secret|BEGIN/);
    }
  });
});
