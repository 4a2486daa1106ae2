/**
 * The agent's grant keys: the Ed25519 public keys of the coordinators (and
 * relays) whose grants it accepts. Given any, the keeper refuses a grant
 * not signed for its request by one of them (core/lease-keeper.ts); several
 * let a signing key be rotated (give agents the new public key, then the
 * coordinators the new private one, then drop the old).
 *
 * Rules:
 * - Each key is a PEM string (or a KeyObject) of an Ed25519 public key. A
 *   private key is refused: agents need only the public half, and a
 *   private key given to every service is one leak away from a rogue that
 *   signs.
 * - A bad key is an AgentError('invalid-argument') naming its index in the
 *   list, never its text.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import type { GrantVerifier } from '../core/lease-keeper.js';
import { AgentError } from '../errors.js';

/** GRANT_KEYS_MAX — the most public keys an agent takes (a rotation needs two). */
const GRANT_KEYS_MAX = 16;

/** publicKeyOf — the Ed25519 public key `given` holds; throws AgentError naming `where`. */
function publicKeyOf(given: unknown, where: string): KeyObject {
  const bad = (why: string): AgentError => new AgentError('invalid-argument', `option ${where} ${why}`);
  if (typeof given === 'string' && given.includes('PRIVATE KEY')) throw bad('is a private key: give agents the public half only');
  let key: KeyObject;
  try {
    if (typeof given === 'string') key = createPublicKey(given);
    else if (typeof given === 'object' && given !== null && 'asymmetricKeyType' in given) key = given as KeyObject;
    else throw bad('must be a PEM string or a KeyObject');
  } catch (error) {
    if (error instanceof AgentError) throw error;
    throw bad('is not a public key in PEM');
  }
  if (key.type !== 'public') throw bad('is a private key: give agents the public half only');
  if (key.asymmetricKeyType !== 'ed25519') throw bad('is not an Ed25519 key');
  return key;
}

/**
 * grantVerifierOf — the verifier of grants signed by any of `keys` (the
 * option `grantPublicKeys`), or null when none are given (undefined).
 * Throws AgentError('invalid-argument') for a list or key that is not one.
 */
export function grantVerifierOf(keys: unknown): GrantVerifier | null {
  if (keys === undefined) return null;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > GRANT_KEYS_MAX) {
    throw new AgentError('invalid-argument', `option grantPublicKeys must be a list of 1 to ${GRANT_KEYS_MAX} public keys`);
  }
  const publicKeys = keys.map((key, i) => publicKeyOf(key, `grantPublicKeys[${i}]`));
  return (text, sig) => {
    const data = Buffer.from(text);
    const signature = Buffer.from(sig, 'base64url');
    return publicKeys.some((key) => verify(null, data, key, signature));
  };
}
