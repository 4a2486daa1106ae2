/**
 * PrefixRoute: where one pool's requests go, when the agent knows more than
 * one coordinator that serves it (relays, then the root): the first subject
 * prefix of its list, until the coordinator there stops answering.
 *
 * Rules:
 * - FAILOVER_AFTER requests in a row that found no responder or got no
 *   reply in time move the pool to the next prefix of the list (after the
 *   last, the first again). Any reply, an error reply included, means a
 *   coordinator is there: the count starts again.
 * - A move changes nothing of the lease held: the coordinator there does
 *   not know it, so its first grant opens a new lease and the keeper drops
 *   what was left of the old one, which its own coordinator counts until it
 *   expires. No token is counted in two places, none is spent twice.
 * - A pool stays where it moved, even when an earlier prefix comes back:
 *   the one it reached answers.
 */

/** FAILOVER_AFTER — unanswered requests in a row that move a pool to the next prefix. */
export const FAILOVER_AFTER = 2;

/** The failures that mean nobody answered on this prefix (not a refusal, not a bad reply). */
const UNANSWERED = new Set(['bus-no-responders', 'bus-timeout']);

export class PrefixRoute {
  private index = 0;
  private unanswered = 0;

  /** PrefixRoute — the prefixes in the order to try; the first is used until it stops answering. */
  constructor(readonly prefixes: readonly string[]) {}

  /** prefix — the prefix requests go to now. */
  get prefix(): string {
    return this.prefixes[this.index] as string;
  }

  /** failed — a request failed with `code`; true when that moved the pool to the next prefix. */
  failed(code: string): boolean {
    if (!UNANSWERED.has(code) || this.prefixes.length < 2) return false;
    this.unanswered += 1;
    if (this.unanswered < FAILOVER_AFTER) return false;
    this.unanswered = 0;
    this.index = (this.index + 1) % this.prefixes.length;
    return true;
  }

  /** answered — a reply came back: a coordinator is there. */
  answered(): void {
    this.unanswered = 0;
  }
}
