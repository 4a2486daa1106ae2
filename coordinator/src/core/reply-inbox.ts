/**
 * Where a reply may go: with identity binding, only to the requester's own
 * inbox.
 *
 * A request names its reply subject, and the coordinator's NATS user may
 * publish to the reply subject of any request it receives
 * (`allow_responses`). So a client that may read only its own inbox can
 * still name another identity's inbox as its reply subject and have the
 * coordinator write there: replies to requests that victim never sent,
 * on the subjects its own requests wait on.
 *
 * Rules:
 * - Without `bindIdentity`, any reply subject: nothing vouches for
 *   identities, so there is no owner to hold an inbox to.
 * - With it, a request that wants a reply must name one under
 *   `_INBOX_<identity>.`, `<identity>` being its subject's identity token
 *   (the inbox prefix the shipped permission model lets that identity
 *   read, and the agent's, the relay's and the operator CLI's default
 *   under an identity). A request without a reply subject (a report) is
 *   fine. A subject without an identity token (not `<prefix>.v<n>.<op>.
 *   <pool>.<identity>`) has no inbox of its own: its reply may go nowhere.
 * - A request whose reply may not go where it asks is not handled at all:
 *   answering it, a refusal included, would write to that inbox. The
 *   adapter drops it, counts it and logs it at a bounded rate, without its
 *   payload (which may hold a lease secret).
 */
import { poolNameProblem } from '@tokenlease/shared';
import type { CoordinatorConfig } from './config.js';

/** inboxPrefixOf — the inbox prefix of `identity`'s replies: `_INBOX_<identity>`. */
export function inboxPrefixOf(identity: string): string {
  return `_INBOX_${identity}`;
}

/** identityToken — the identity token of `subject` under `prefix` (its fifth token after the prefix's: `<prefix>.v<n>.<op>.<pool>.<identity>`), or null. */
export function identityToken(prefix: string, subject: string): string | null {
  if (!subject.startsWith(`${prefix}.v`)) return null;
  const tokens = subject.slice(prefix.length + 1).split('.');
  if (tokens.length !== 4) return null;
  const identity = tokens[3] as string;
  return poolNameProblem(identity) === null ? identity : null;
}

/**
 * replyInboxProblem — why a request on `subject` may not be answered at
 * `replySubject` (null: it wants no reply) under `config`, or null when it
 * may. The reason quotes the reply subject and identity, cut short; never
 * the payload.
 */
export function replyInboxProblem(config: CoordinatorConfig, subject: string, replySubject: string | null): string | null {
  if (!config.bindIdentity || replySubject === null || replySubject === '') return null;
  const identity = identityToken(config.subjectPrefix, subject);
  const shown = JSON.stringify(replySubject.slice(0, 200));
  if (identity === null) return `reply subject ${shown} of a request that names no identity token`;
  const prefix = `${inboxPrefixOf(identity)}.`;
  if (replySubject.startsWith(prefix) && replySubject.length > prefix.length) return null;
  return `reply subject ${shown} is not under identity ${JSON.stringify(identity)}'s inbox prefix ${inboxPrefixOf(identity)}`;
}
