/**
 * LeaseLaw: what the coordinator allows each agent's lease, as the
 * simulator's checks judge an admission by it (docs/design.md, "The credit
 * argument" and "Rate leases").
 *
 * Rules:
 * - A lease may be spent until the latest expiry any live coordinator gave
 *   it: the first grant of it to a request (grant time + TTL), or a
 *   takeover that kept it (takeover time + TTL).
 * - A rate lease may hold no more than the coordinator counts for it: from
 *   its latest first grant, `tokensHeld` at the grant instant plus ρ per
 *   period since, rounded up, up to its cap (the agent reported its
 *   balance when it asked). An agent that accrues from the send, or while
 *   a renewal is in flight, holds more once its top-up arrives, whether or
 *   not the fleet then spends enough to pass the envelope.
 * - Leases with no grant seen here (a relay's agents) have no count.
 */
import type { LeaseGrant } from '@tokenlease/shared';

interface Counted {
  readonly grantUs: number;
  readonly heldTokens: number;
  readonly tokensPerPeriod: number;
  readonly periodUs: number;
  readonly capTokens: number;
}

export class LeaseLaw {
  private readonly legalUntilUs = new Map<string, number>();
  private readonly counts = new Map<string, Counted>();

  /** extend — `agentId`'s lease `leaseId` may be spent until at least `untilUs`. */
  extend(agentId: string, leaseId: string, untilUs: number): void {
    const key = `${agentId}/${leaseId}`;
    this.legalUntilUs.set(key, Math.max(this.legalUntilUs.get(key) ?? 0, untilUs));
  }

  /**
   * granted — `grant` is the first answer to a request of `agentId`, made
   * at `producedUs` by a live coordinator (or relay) whose clock counts
   * `perUs` of its µs per true µs: the lease lasts its TTL on that clock.
   */
  granted(agentId: string, grant: LeaseGrant, producedUs: number, perUs = 1): void {
    this.extend(agentId, grant.leaseId, producedUs + (grant.ttlMs * 1000) / perUs);
    const key = `${agentId}/${grant.leaseId}`;
    if (grant.rate === undefined) this.counts.delete(key);
    else {
      const { tokensPerPeriod, periodMs, capTokens } = grant.rate;
      this.counts.set(key, { grantUs: producedUs, heldTokens: grant.tokensHeld, tokensPerPeriod, periodUs: periodMs * 1000, capTokens });
    }
  }

  /** problems — what is wrong with `agentId` spending `cost` of lease `leaseId` at `nowUs`, leaving `balanceTokens` (empty: nothing). */
  problems(agentId: string, leaseId: string | null, cost: number, balanceTokens: number, nowUs: number): string[] {
    const key = `${agentId}/${leaseId ?? ''}`;
    const found: string[] = [];
    const legalUs = this.legalUntilUs.get(key);
    if (legalUs === undefined || nowUs >= legalUs) {
      found.push(`${agentId} spent ${cost} from lease ${leaseId} at ${nowUs} µs, after the coordinator's expiry ${legalUs ?? 'unknown'}`);
    }
    const over = this.overCount(agentId, leaseId, balanceTokens, nowUs);
    if (over !== null) found.push(over);
    return found;
  }

  /** overCount — what is wrong with `agentId` holding `balanceTokens` of rate lease `leaseId` at `nowUs`, or null: no more than counted. */
  overCount(agentId: string, leaseId: string | null, balanceTokens: number, nowUs: number): string | null {
    const c = this.counts.get(`${agentId}/${leaseId ?? ''}`);
    if (c === undefined) return null;
    const accrued = Math.ceil((Math.max(0, nowUs - c.grantUs) * c.tokensPerPeriod) / c.periodUs);
    const over = balanceTokens - Math.max(c.heldTokens, Math.min(c.capTokens, c.heldTokens + accrued));
    return over > 0 ? `${agentId} holds ${over} tokens of rate lease ${leaseId} more than the coordinator counts at ${nowUs} µs` : null;
  }
}
