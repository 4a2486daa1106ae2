/**
 * Who may run the operator ops (`pools`, `reload`): a rule of the
 * configuration and of the identity token a request was sent under.
 *
 * Rules:
 * - With `operatorIdentities` configured, an operator op is answered only
 *   under one of those identity tokens; any other is refused `forbidden`
 *   before its payload is read.
 * - Without it: anyone when identities are not bound (no `bindIdentity`:
 *   an identity token is whatever the sender wrote, so naming operators
 *   would keep no one out), and no one when they are: a coordinator told
 *   that the bus vouches for identities answers operator ops only to
 *   identities it was told are operators. A listing names every pool (and
 *   a per-key pool's name may be a user's key); a reload costs every agent
 *   the balance it holds.
 * - An identity is only as good as the bus makes it: NATS permissions must
 *   keep each user to its own identity token, and give the operator ops'
 *   subjects to operators alone (deploy/nats/secured.conf does both).
 */
import type { CoordinatorConfig } from './config.js';

/** operatorRefusal — why `identity` may not run an operator op under `config`, or null when it may. */
export function operatorRefusal(config: CoordinatorConfig, identity: string): string | null {
  if (config.operatorIdentities.has(identity)) return null;
  if (config.operatorIdentities.size === 0 && !config.bindIdentity) return null;
  const shown = JSON.stringify(identity.slice(0, 128));
  return config.operatorIdentities.size === 0
    ? `identity ${shown} may not run operator ops: with bindIdentity they are answered only for identities in operatorIdentities, and none is configured`
    : `identity ${shown} may not run operator ops: it is not in operatorIdentities`;
}
