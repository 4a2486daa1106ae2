/**
 * Keyed hashes of partition keys: a key (an API key, a user id, a client
 * address, a route) becomes part of a pool name only as its HMAC-SHA-256
 * under a key secret, so no raw key reaches a NATS subject, a log, a
 * metric label, the status page, a pool listing or a sweep report, and a
 * key of any length names a pool of a bounded name.
 *
 * - The digest covers the rule's name and the key (`<rule> NUL <key>`,
 *   UTF-8), so one key under two rules names unrelated pools.
 * - Its first 16 bytes (128 bits) are kept: the pool is `<rule>:<digest>`
 *   with the digest in base64url (22 characters).
 * - Every instance of a service must use the same secret, or one key names
 *   a different pool on each. Anyone who holds the secret and a key finds
 *   its pool with `hashedKeyName`; without the secret, a pool name tells
 *   nothing of the key, even for keys from a small set (addresses, ids).
 *
 * One construction for everyone who names a key's pool: the HTTP
 * middleware (agent) and the sweep replaying access logs, so a report
 * names the pools the status page shows. Checking a secret is the caller's
 * (each says so in its own error type); these take its bytes.
 */
import { createHmac } from 'node:crypto';

/** KEY_SECRET_BYTES_MIN — the shortest key secret accepted, bytes. */
export const KEY_SECRET_BYTES_MIN = 16;
/** DIGEST_BYTES — how much of the HMAC a pool name keeps. */
const DIGEST_BYTES = 16;
/** DIGEST_CHARS — the digest's length in base64url. */
export const DIGEST_CHARS = 22;

/** keyDigest — the first 16 bytes of HMAC-SHA-256(secret, `<rule> NUL <key>`); `secret` as bytes, any length (callers check it). */
export function keyDigest(secret: Uint8Array, rule: string, key: string): Uint8Array {
  const mac = createHmac('sha256', secret).update(rule, 'utf8').update('\0').update(key, 'utf8').digest();
  return new Uint8Array(mac.buffer, mac.byteOffset, DIGEST_BYTES);
}

/** digestName — the pool `<rule>:<digest in base64url>`. */
export function digestName(rule: string, digest: Uint8Array): string {
  return `${rule}:${Buffer.from(digest).toString('base64url')}`;
}

/** hashedKeyName — the pool a keyed rule `rule` charges for `key` under `secret` (bytes): `<rule>:<22 base64url characters>`. */
export function hashedKeyName(secret: Uint8Array, rule: string, key: string): string {
  return digestName(rule, keyDigest(secret, rule, key));
}
