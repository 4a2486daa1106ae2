/**
 * @tokenlease/shared/key-hash — the keyed hash that turns a partition key
 * into a pool name (adapters/key-hash.ts). An entry of its own, as the
 * clock is: it needs node:crypto, which no core reaches through the
 * package's main entry.
 *
 * @module @tokenlease/shared/key-hash
 */
export { DIGEST_CHARS, KEY_SECRET_BYTES_MIN, digestName, hashedKeyName, keyDigest } from './adapters/key-hash.js';
