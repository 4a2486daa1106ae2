/**
 * Keyed hashes of the HTTP middleware's partition keys: a key (an API key,
 * a user id, a client address, a route) becomes part of a pool name only as
 * its HMAC-SHA-256 under the service's key secret, so no raw key reaches a
 * NATS subject, a log, a metric label, the status page or a pool listing,
 * and a key of any length names a pool of a bounded name.
 *
 * The construction (`<rule> NUL <key>`, the first 16 bytes, base64url, the
 * pool `<rule>:<digest>`) is @tokenlease/shared/key-hash's, which the sweep
 * uses too, so its reports name the pools the status page shows. Here: the
 * agent's check of the secret, in the agent's error type.
 *
 * Every instance of a service must use the same secret, or one key names a
 * different pool on each. Anyone who holds the secret and a key finds its
 * pool with `keyPoolName`; without the secret, a pool name tells nothing of
 * the key, even for keys from a small set (addresses, ids).
 */
import { hashedKeyName, KEY_SECRET_BYTES_MIN } from '@tokenlease/shared/key-hash';
import { AgentError } from '../errors.js';

export { DIGEST_CHARS, KEY_SECRET_BYTES_MIN, digestName, keyDigest } from '@tokenlease/shared/key-hash';

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

/**
 * keyPoolName — the pool a keyed rule `rule` charges for `key` under
 * `secret`: what an operator who knows a key looks up in `tokenlease
 * pools` or on the status page.
 */
export function keyPoolName(rule: string, key: string, secret: KeySecret): string {
  return hashedKeyName(checkKeySecret(secret), rule, key);
}
