/**
 * RelayCredit: the credit of a pool a relay serves from one chunk lease it
 * holds from the root coordinator (docs/design.md, "Relays").
 *
 * Rules:
 * - The level never refills by itself: it grows only by what the root's
 *   grants add to the relay's lease, and by unspent tokens of downstream
 *   leases given back while that lease lasts.
 * - `level + Σ downstream bounds ≤ counted`, where `counted` is the root's
 *   bound on the relay's lease after its last grant (checked after every
 *   step). A relay reports `level + Σ bounds` as its lease's `tokensLeft`,
 *   so the root never counts less than the subtree may still spend.
 * - `leaseEndUs` is when the relay itself stops using its lease, counted as
 *   an agent counts it: first send of the request that got the grant +
 *   TTL × (1 − drift margin). Every downstream lease ends by then
 *   (pool-parts.ts `grantTtlMs`); once it passes the level drops to 0.
 * - A grant that names another lease while the subtree still holds tokens
 *   of the current one (the root restarted or was reconfigured) is kept
 *   aside, unused, until the current lease has ended and every downstream
 *   lease of it is gone; only then does the relay serve from it. Tokens of
 *   two upstream leases are never mixed under one expiry.
 */
import { assertInvariant, type TokenScale } from '@tokenlease/shared';
import { Credit } from './credit.js';

/** UpstreamLease — a lease the relay holds from the root: its id, the root's bound on it, and when the relay stops using it (µs). */
export interface UpstreamLease {
  readonly leaseId: string;
  countedTokens: number;
  endUs: number;
}

/** UpstreamGrant — what a validated grant of the root tells the relay's credit. */
export interface UpstreamGrant {
  readonly leaseId: string;
  readonly tokensGranted: number;
  readonly tokensHeld: number;
  /** First send of the request it answers + TTL × (1 − drift margin), µs. */
  readonly endUs: number;
}

export class RelayCredit extends Credit {
  private current: UpstreamLease | null = null;
  /** A newer upstream lease, and its unused tokens, waiting for the current one to drain. */
  private pending: (UpstreamLease & { tokens: number }) | null = null;

  /** RelayCredit — an empty credit; `retryUs` is the wait a downstream agent is told when the level is short. */
  constructor(
    scale: TokenScale,
    private readonly poolName: string,
    private readonly retryUs: number,
  ) {
    super(scale, poolName, 0, 0);
  }

  override get leaseEndUs(): number {
    return this.current?.endUs ?? -Infinity;
  }

  /** countedTokens — the root's bound on the lease served from (0: none). */
  get countedTokens(): number {
    return this.current?.countedTokens ?? 0;
  }

  /** upstreamLease — the lease an upstream request names, and the `tokensLeft` it reports beside `leasedTokens` of downstream bounds. */
  upstreamReport(leasedTokens: number): { leaseId: string | null; tokensLeft: number } {
    if (this.pending !== null) return { leaseId: this.pending.leaseId, tokensLeft: this.pending.tokens };
    return { leaseId: this.current?.leaseId ?? null, tokensLeft: this.levelTokens + leasedTokens };
  }

  /**
   * grantProblem — why `g` cannot be what an honest root answered (its
   * bound below what the relay's report leaves plus what it adds), or null.
   * Checked before `applyGrant`; a refused grant changes nothing.
   */
  grantProblem(g: UpstreamGrant, leasedTokens: number): string | null {
    const current = this.current;
    if (current !== null && g.leaseId === current.leaseId && g.tokensHeld < this.levelTokens + leasedTokens + g.tokensGranted) {
      return `holds ${g.tokensHeld} tokens, less than the ${this.levelTokens + leasedTokens} left plus the ${g.tokensGranted} granted`;
    }
    return null;
  }

  /** applyGrant — a root's grant to the relay's lease at `nowUs`, beside `leasedTokens` of downstream bounds. */
  applyGrant(g: UpstreamGrant, leasedTokens: number, nowUs: number): void {
    const current = this.current;
    const pending = this.pending;
    if (current !== null && g.leaseId === current.leaseId) {
      current.countedTokens = g.tokensHeld;
      current.endUs = Math.max(current.endUs, g.endUs);
      if (nowUs < current.endUs) this.levelUnits += g.tokensGranted * this.scale.unitsPerToken;
    } else if (pending !== null && g.leaseId === pending.leaseId) {
      pending.countedTokens = g.tokensHeld;
      pending.endUs = Math.max(pending.endUs, g.endUs);
      pending.tokens = Math.min(g.tokensHeld, pending.tokens + g.tokensGranted);
    } else if (this.levelUnits === 0 && leasedTokens === 0) {
      this.current = { leaseId: g.leaseId, countedTokens: g.tokensHeld, endUs: g.endUs };
      this.pending = null;
      this.levelUnits = g.tokensGranted * this.scale.unitsPerToken;
    } else {
      this.pending = { leaseId: g.leaseId, countedTokens: g.tokensHeld, endUs: g.endUs, tokens: g.tokensGranted };
    }
    this.check(leasedTokens);
  }

  /** lapse — the relay's lease is lost (given up, or refused by the root): nothing more is served from it. */
  lapse(): void {
    this.levelUnits = 0;
    if (this.current !== null) this.current.endUs = Math.min(this.current.endUs, this.lastRefillUs);
    this.pending = null;
  }

  /** refill — no refill: the level drops to 0 once the lease has ended, and a kept-aside lease takes over once nothing of it is leased. */
  override refill(nowUs: number, leasedTokens: number): void {
    if (nowUs > this.lastRefillUs) this.lastRefillUs = nowUs;
    const current = this.current;
    if (current !== null && nowUs >= current.endUs) this.levelUnits = 0;
    const pending = this.pending;
    if (pending !== null && (current === null || nowUs >= current.endUs) && leasedTokens === 0) {
      this.current = { leaseId: pending.leaseId, countedTokens: pending.countedTokens, endUs: pending.endUs };
      this.pending = null;
      this.levelUnits = nowUs < pending.endUs ? pending.tokens * this.scale.unitsPerToken : 0;
    }
  }

  /** give — unspent tokens of a downstream lease go back to the level while the lease they came from lasts. */
  override give(tokens: number, leasedTokens: number): void {
    const current = this.current;
    if (current === null || this.lastRefillUs >= current.endUs) return;
    const roomUnits = (current.countedTokens - leasedTokens) * this.scale.unitsPerToken;
    this.levelUnits = Math.max(this.levelUnits, Math.min(this.levelUnits + tokens * this.scale.unitsPerToken, roomUnits));
  }

  override restore(): void {
    throw new Error(`pool ${this.poolName}: a relayed pool is never taken over from a store`);
  }

  /** fullAtUs — now: a relayed pool has nothing to refill, so once idle it may be forgotten (and its upstream lease returned). */
  override fullAtUs(): number {
    return this.lastRefillUs;
  }

  /** accruesAtUs — the level holds `tokens` now, or only after a grant of the root (Infinity). */
  override accruesAtUs(tokens: number): number {
    return this.has(tokens) ? this.lastRefillUs : Infinity;
  }

  override waitUs(tokens: number): number {
    return this.has(tokens) ? 0 : this.retryUs;
  }

  /** check — the bucket's rules, and level + `leasedTokens` within the root's bound on the relay's lease. */
  override check(leasedTokens: number): void {
    super.check(leasedTokens);
    const creditTokens = this.levelUnits / this.scale.unitsPerToken + leasedTokens;
    assertInvariant(
      creditTokens <= this.countedTokens,
      `pool ${this.poolName}: relay credit ${creditTokens} over the root's bound ${this.countedTokens}`,
    );
  }
}
