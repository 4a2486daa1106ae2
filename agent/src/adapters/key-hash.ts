/**
 * Keyed hashes of the HTTP middleware's partition keys: a key (an API key,
 * a user id, a client address, a route) becomes part of a pool name only as
 * its HMAC-SHA-256 under the service's key secret, so no raw key reaches a
 * NATS subject, a log, a metric label, the status page or a pool listing,
 * and a key of any length names a pool of a bounded name.
 *
 * - The digest covers the rule's name and the key (`<rule> NUL <key>`,
 *   UTF-8), so one key under two rules names unrelated pools.
 * - Its first 16 bytes (128 bits) are kept: the pool is `<rule>:<digest>`
 *   with the digest in base64url (22 characters).
 * - Every instance of a service must use the same secret, or one key names
 *   a different pool on each. Anyone who holds the secret and a key finds
 *   its pool with `keyPoolName`; without the secret, a pool name tells
 *   nothing of the key, even for keys from a small set (addresses, ids).
 */
import { createHmac } from 'node:crypto';
import { AgentError } from '../errors.js';

/** KEY_SECRET_BYTES_MIN — the shortest key secret accepted, bytes. */
export const KEY_SECRET_BYTES_MIN = 16;
/** DIGEST_BYTES — how much of the HMAC a pool name keeps. */
const DIGEST_BYTES = 16;
/** DIGEST_CHARS — the digest's length in base64url. */
export const DIGEST_CHARS = 22;

/** KeySecret — the secret of the keyed hash: a string (its UTF-8 bytes) or bytes. */
export type KeySecret = string | Uint8Array;

/** checkKeySecret — the secret as bytes; throws AgentError('invalid-argument') when it is not one or is shorter than 16 bytes. */
export function checkKeySecret(secret: unknown): Uint8Array {
  const bytes =
    typeof secret === 'string' ? new TextEncoder().encode(secret) : secret instanceof Uint8Array ? Uint8Array.from(secret) : null;
  if (bytes === null || bytes.length < KEY_SECRET_BYTES_MIN)
    throw new AgentError(
      'invalid-argument',
      `option keySecret must be a string or bytes of at least ${KEY_SECRET_BYTES_MIN} bytes, the same on every instance`,
    );
  return bytes;
}

/** keyDigest — the first 16 bytes of HMAC-SHA-256(secret, `<rule> NUL <key>`). */
export function keyDigest(secret: Uint8Array, rule: string, key: string): Uint8Array {
  const mac = createHmac('sha256', secret).update(rule, 'utf8').update('\0').update(key, 'utf8').digest();
  return new Uint8Array(mac.buffer, mac.byteOffset, DIGEST_BYTES);
}

/** digestName — the pool `<rule>:<digest in base64url>`. */
export function digestName(rule: string, digest: Uint8Array): string {
  return `${rule}:${Buffer.from(digest).toString('base64url')}`;
}

/**
 * keyPoolName — the pool a keyed rule `rule` charges for `key` under
 * `secret`: what an operator who knows a key looks up in `tokenlease
 * pools` or on the status page.
 */
export function keyPoolName(rule: string, key: string, secret: KeySecret): string {
  return digestName(rule, keyDigest(checkKeySecret(secret), rule, key));
}
