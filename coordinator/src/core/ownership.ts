/**
 * Ownership: which coordinator of a durable deployment owns which unit.
 *
 * Units are the configured pools, each on its own, and the catch-all unit
 * `CATCH_ALL_UNIT`, whose owner serves every name that is no configured pool:
 * it makes template pools on first use and refuses unknown names.
 *
 * Rules:
 * - Every unit has one preferred owner among the live members: the one whose
 *   rendezvous hash with the unit is highest. Every member computes the same
 *   answer from the same member list, and a member joining or leaving moves
 *   only the units it wins or held (about 1/n of them), not a reshuffle.
 * - A member claims the units it is preferred for and releases, for the
 *   preferred one to claim, those it holds but is no longer preferred for.
 *   Claims are fenced by the store, so two members that briefly disagree
 *   about the member list cannot both own a unit; at worst a unit waits one
 *   heartbeat for its owner.
 * - A member that does not see itself in the list (its heartbeat failed)
 *   changes nothing: it cannot tell who is alive.
 */
import { nameHash32 } from '@tokenlease/shared';

/** CATCH_ALL_UNIT — the unit of every name that is no configured pool (never a valid pool name). */
export const CATCH_ALL_UNIT = '*';

export interface OwnershipPlan {
  /** Units to claim, in a fixed order. */
  readonly claim: readonly string[];
  /** Units held now to hand over to their preferred owner. */
  readonly release: readonly string[];
}

/** rendezvousScore — the 32-bit name hash (nameHash32: FNV-1a, mixed so close names spread) of `member` and `unit`. */
export function rendezvousScore(member: string, unit: string): number {
  return nameHash32(`${member}\n${unit}`);
}

/** preferredOwner — the member preferred for `unit` (ties: the smaller id), or null without members. */
export function preferredOwner(unit: string, members: readonly string[]): string | null {
  let best: string | null = null;
  let bestScore = -1;
  for (const member of members) {
    const score = rendezvousScore(member, unit);
    if (score > bestScore || (score === bestScore && best !== null && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

/** planOwnership — what `me` should claim and release, given the live `members` and the units it `owned`. */
export function planOwnership(me: string, members: readonly string[], units: readonly string[], owned: ReadonlySet<string>): OwnershipPlan {
  if (!members.includes(me)) return { claim: [], release: [] };
  const claim: string[] = [];
  const release: string[] = [];
  for (const unit of units) {
    const mine = preferredOwner(unit, members) === me;
    if (mine && !owned.has(unit)) claim.push(unit);
    if (!mine && owned.has(unit)) release.push(unit);
  }
  return { claim, release };
}

/** ownershipUnits — the units of a configuration: each configured pool, then the catch-all. */
export function ownershipUnits(poolNames: readonly string[]): string[] {
  return [...poolNames, CATCH_ALL_UNIT];
}

/**
 * CatchAllRoute — what the owner of the catch-all unit does with a request:
 * leave it to a configured pool's owner (`ignore`), let the core refuse it
 * (`refuse`: a bad subject or an unknown name), serve it from a pool it
 * holds or a status query (`serve`), or claim the template pool first.
 */
export type CatchAllRoute = 'ignore' | 'refuse' | 'serve' | 'claim';

/** routeCatchAll — the route of a request for `pool` (null: a bad subject) of `kind`, `held` or not, a status query or not. */
export function routeCatchAll(pool: string | null, kind: 'fixed' | 'template' | null, held: boolean, status: boolean): CatchAllRoute {
  if (pool === null || kind === null) return 'refuse';
  if (kind === 'fixed') return 'ignore';
  return held || status ? 'serve' : 'claim';
}
