/**
 * Moved agent ids: the id a keeper asks under after a `forbidden` refusal
 * (a lease under another secret holds its id).
 *
 * Rules:
 * - The moved id is `<agentId>.~<suffix>`, the suffix fresh randomness the
 *   keeper is given for each move (the agent's cryptographic draw, the
 *   simulator's seeded one), never a count: knowing an agent's id tells a
 *   squatter nothing of where it will move, so holding the ids it could
 *   guess buys nothing. (A count, `<agentId>~<n>`, let a client that knew
 *   an id hold the next twenty and keep the agent out for 24 s.)
 * - It stays the same identity's: `<identity>` and `<identity>.<rest>` both
 *   become `<identity>.…`, which a coordinator that binds identities
 *   accepts (coordinator-core.ts, agentOfIdentity).
 * - It is a protocol id (ids.ts): at most ID_LENGTH_MAX characters, the
 *   agent id cut from its end to make room for the suffix, so its head (the
 *   identity) stays while the identity and the suffix fit together.
 */
import { assertInvariant, ID_LENGTH_MAX } from '@tokenlease/shared';

/** ID_SUFFIX_PATTERN — a move's suffix: 16 to 32 characters of base64url (16 carry 96 bits). */
export const ID_SUFFIX_PATTERN = /^[A-Za-z0-9_-]{16,32}$/;

/** The separator between an agent id and its move's suffix: a dot keeps the identity's prefix, a tilde tells a move apart. */
const MOVE_SEPARATOR = '.~';

/**
 * movedAgentId — where `agentId` moves with the fresh `suffix`
 * (ID_SUFFIX_PATTERN). A suffix that is not one fails an assertion: the
 * randomness the keeper was given is broken, and a guessable id is what
 * this exists to prevent.
 */
export function movedAgentId(agentId: string, suffix: string): string {
  assertInvariant(ID_SUFFIX_PATTERN.test(suffix), 'a moved agent id needs a suffix of 16 to 32 base64url characters');
  const room = ID_LENGTH_MAX - MOVE_SEPARATOR.length - suffix.length;
  return `${agentId.slice(0, room)}${MOVE_SEPARATOR}${suffix}`;
}
