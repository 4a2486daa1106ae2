import { generateKeyPairSync, sign } from 'node:crypto';
import { thrown } from '@tokenlease/shared/testing';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { grantVerifierOf } from './grant-verifier.js';

const pair = (): { publicKey: string; privateKey: string } =>
  generateKeyPairSync('ed25519', {
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
const signed = (text: string, privateKey: string): string => sign(null, Buffer.from(text), privateKey).toString('base64url');

describe('grantVerifierOf', () => {
  const current = pair();
  const next = pair();
  const rogue = pair();

  it('is null without keys', () => {
    expect(grantVerifierOf(undefined)).toBeNull();
  });

  it('accepts what any configured key signed (a rotation), and nothing else', () => {
    const verify = grantVerifierOf([current.publicKey, next.publicKey]);
    expect(verify?.('grant text', signed('grant text', current.privateKey))).toBe(true);
    expect(verify?.('grant text', signed('grant text', next.privateKey))).toBe(true);
    expect(verify?.('grant text', signed('grant text', rogue.privateKey))).toBe(false);
    expect(verify?.('other text', signed('grant text', current.privateKey))).toBe(false);
    expect(verify?.('grant text', 'A'.repeat(86))).toBe(false);
  });

  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const bad: readonly (readonly [string, unknown, RegExp])[] = [
    ['an empty list', [], /a list of 1 to 16 public keys/],
    ['not a list', current.publicKey, /a list of 1 to 16 public keys/],
    ['a private key', [current.privateKey], /grantPublicKeys\[0\] is a private key/],
    [
      'text that is no key',
      ['-----BEGIN PUBLIC KEY-----\nsecret-looking text\n-----END PUBLIC KEY-----'],
      /grantPublicKeys\[0\] is not a public key in PEM/,
    ],
    ['an RSA key', [current.publicKey, rsa], /grantPublicKeys\[1\] is not an Ed25519 key/],
    ['a number', [7], /grantPublicKeys\[0\] must be a PEM string or a KeyObject/],
  ];
  it.each(bad)('refuses %s with invalid-argument, never showing the key', (_name, keys, why) => {
    const error = thrown(AgentError, () => grantVerifierOf(keys));
    expect(error.code).toBe('invalid-argument');
    expect(error.message).toMatch(why);
    expect(error.message).not.toMatch(/BEGIN|secret-looking/);
  });
});
