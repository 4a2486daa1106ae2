/**
 * The keyed hash of partition keys against vectors computed apart from it
 * (Python's hmac: HMAC-SHA-256 over `<rule> NUL <key>`, first 16 bytes,
 * base64url without padding), so the middleware and the sweep name the
 * same pools and a change of construction cannot pass unnoticed.
 */
import { describe, expect, it } from 'vitest';
import { DIGEST_CHARS, digestName, hashedKeyName, keyDigest } from './key-hash.js';

const SECRET = new TextEncoder().encode('0123456789abcdef-secret');

describe('hashedKeyName', () => {
  it.each([
    ['tenant', 'sk_live_abc', 'tenant:JrnEXSRfypj_2a3WjtgIJQ'],
    ['key', 'ключ', 'key:vez0C4-lgvGn-AVeeBN0LQ'],
  ])('names rule %s, key %s as %s', (rule, key, name) => {
    expect(hashedKeyName(SECRET, rule, key)).toBe(name);
    expect(digestName(rule, keyDigest(SECRET, rule, key))).toBe(name);
    expect(name.length).toBe(rule.length + 1 + DIGEST_CHARS);
  });

  it('names one key under two rules, or two keys under one rule, apart', () => {
    const names = [hashedKeyName(SECRET, 'a', 'k'), hashedKeyName(SECRET, 'b', 'k'), hashedKeyName(SECRET, 'a', 'k2')];
    expect(new Set(names.map((name) => name.split(':')[1])).size).toBe(3);
  });
});
