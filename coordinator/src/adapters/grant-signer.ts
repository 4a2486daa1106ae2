/**
 * The grant signing key: an Ed25519 private key in PEM that a coordinator
 * (or a relay, which grants to agents too) signs each grant with, so that
 * agents given the public half refuse grants a rogue responder makes
 * (shared grant-signature.ts says what is signed).
 *
 * Rules:
 * - Named by `--grant-signing-key <file>` or TOKENLEASE_GRANT_SIGNING_KEY
 *   (the flag wins), as a file, never a value: a key on a command line
 *   shows in the process list.
 * - A file that cannot be read, or that holds anything but an Ed25519
 *   private key, fails the process with status 2 and a message that names
 *   the flag: never the path (it says where a secret lives) nor the text.
 */
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { givenSetting } from '@tokenlease/shared/command-line';
import { GRANT_SIGNING_KEY } from '../core/command-lines.js';
import type { Fail, Flags } from './cli-common.js';

/** GrantSigner — the signature (base64url) of a grant's signed text. */
export type GrantSigner = (text: string) => string;

/** GRANT_SIGNING_KEY_ENV — the environment twin of `--grant-signing-key` (the setting: core/command-lines.ts). */
export const GRANT_SIGNING_KEY_ENV = GRANT_SIGNING_KEY.env;

/** signerOf — signs with `key` (an Ed25519 private key). */
export function signerOf(key: KeyObject): GrantSigner {
  return (text) => sign(null, Buffer.from(text), key).toString('base64url');
}

/** grantSignerFrom — the signer the flags or environment name, or null for none; fails the process (status 2) for a bad key. */
export function grantSignerFrom(values: Flags, env: NodeJS.ProcessEnv, fail: Fail): GrantSigner | null {
  const given = givenSetting(GRANT_SIGNING_KEY, values, env);
  if (given === null || given.value === '') return null;
  const named = given.name;
  let pem: string;
  try {
    pem = readFileSync(given.value, 'utf8');
  } catch {
    // Node's error names the path: not kept.
    return fail(2, `${named}: the grant signing key file could not be read`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    return fail(2, `${named}: the file does not hold a private key in PEM`);
  }
  if (key.asymmetricKeyType !== 'ed25519') return fail(2, `${named}: the key is not an Ed25519 key`);
  return signerOf(key);
}
