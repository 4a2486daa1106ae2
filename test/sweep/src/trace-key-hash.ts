/**
 * The names an access log's keys go by in a sweep report: the pool names
 * the HTTP middleware gives them (`<rule>:<digest>`, @tokenlease/shared's
 * key hash), under the service's key secret.
 *
 * Guarantees: the secret lives in a private field, so it never reaches the
 * JSON parameters, the replay line, the HTML report or an error (a
 * TraceKeyHash prints as its rule and where its secret came from); a raw
 * key goes in and only its name comes out. With the service's own secret
 * the names are the status page's; with a random one (no secret given)
 * they mean something only within the run that drew it.
 */
import { randomBytes } from 'node:crypto';
import { DIGEST_CHARS, hashedKeyName } from '@tokenlease/shared/key-hash';

/** KEY_SECRET_ENV — the environment variable that holds the key secret when `--key-secret` is not given. */
export const KEY_SECRET_ENV = 'TOKENLEASE_KEY_SECRET';
/** RANDOM_SECRET_BYTES — the size of a secret drawn for one run, bytes. */
const RANDOM_SECRET_BYTES = 32;
/** DIGEST — a key's digest in its pool name: base64url without padding. */
const DIGEST = new RegExp(`^[A-Za-z0-9_-]{${DIGEST_CHARS}}$`);

/** KeySecretSource — where the secret came from: `--key-secret`, the environment (KEY_SECRET_ENV), or drawn for this run. */
export type KeySecretSource = 'flag' | 'environment' | 'random';

/** randomKeySecret — a fresh secret for one run (the default when none is given). */
export const randomKeySecret = (): Uint8Array => new Uint8Array(randomBytes(RANDOM_SECRET_BYTES));

/** TraceKeyHash — the keyed hash of one rule's keys; `rule` and `secretFrom` are public, the secret is not. */
export class TraceKeyHash {
  readonly rule: string;
  readonly secretFrom: KeySecretSource;
  readonly #secret: Uint8Array;

  constructor(rule: string, secret: Uint8Array, secretFrom: KeySecretSource) {
    this.rule = rule;
    this.secretFrom = secretFrom;
    this.#secret = Uint8Array.from(secret);
  }

  /** name — the name of the raw key `rawKey` in reports: the pool `<rule>:<digest>` the middleware charges for it. */
  name(rawKey: string): string {
    return hashedKeyName(this.#secret, this.rule, rawKey);
  }

  /** isName — whether `text` is a key's name under this rule: `<rule>:` and the digest's 22 base64url characters. */
  isName(text: string): boolean {
    return text.startsWith(`${this.rule}:`) && DIGEST.test(text.slice(this.rule.length + 1));
  }
}
