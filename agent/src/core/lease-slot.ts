/**
 * LeaseSlot: the state the fast path reads, one per (agent, pool).
 *
 * Rules:
 * - `takeAt(cost, nowUs)` admits only when the whole cost is in the balance
 *   and `nowUs` is before the agent-side expiry. It spends all of the cost or
 *   nothing, does no I/O, allocates nothing and looks nothing up.
 * - A denial records why (`lastDenial`) and the largest cost refused, so the
 *   keeper can ask for enough; the caller reads the reason afterwards
 *   instead of receiving an object.
 * - Crossing the low watermark, or any denial, calls `onLow` once; the keeper
 *   re-arms it when it acts. That call is the only way the fast path reaches
 *   the I/O side, and it happens once per refresh, not per call.
 * - Counters only grow; the keeper derives demand from their differences.
 */
import { AgentError } from '../errors.js';

export type DenialReason = 'no-lease' | 'exhausted' | 'never-fits' | 'expired';

function ignore(): void {}

export class LeaseSlot {
  /** Tokens the agent may still spend from its lease. */
  balanceTokens = 0;
  /** Agent-side expiry on the agent's monotonic clock, µs; nothing is spent at or after it. */
  expiresAtUs = 0;
  /** Largest cost that can ever fit one lease; Infinity until the pool's limits are known. */
  costMaxTokens = Infinity;
  hasLease = false;
  lowWatermarkTokens = 0;
  lowSignalled = false;
  onLow: () => void = ignore;

  admittedTokens = 0;
  admittedCount = 0;
  deniedTokens = 0;
  deniedCount = 0;
  lastAdmitUs = 0;
  lastDenial: DenialReason = 'no-lease';
  /** Largest cost denied since the keeper last asked; 0 when none. */
  wantedCostTokens = 0;

  constructor(readonly pool: string) {}

  /** takeAt — spends `cost` whole tokens at `nowUs` when the live lease holds them; else records a denial. */
  takeAt(cost: number, nowUs: number): boolean {
    if (cost <= this.balanceTokens && nowUs < this.expiresAtUs && cost >= 1 && Number.isSafeInteger(cost)) {
      this.balanceTokens -= cost;
      this.admittedTokens += cost;
      this.admittedCount += 1;
      this.lastAdmitUs = nowUs;
      if (this.balanceTokens < this.lowWatermarkTokens && !this.lowSignalled) this.signalLow();
      return true;
    }
    return this.deny(cost, nowUs);
  }

  private deny(cost: number, nowUs: number): false {
    if (!(cost >= 1 && Number.isSafeInteger(cost))) {
      throw new AgentError('invalid-argument', `cost must be a positive integer, got ${cost}`, { pool: this.pool });
    }
    this.deniedTokens += cost;
    this.deniedCount += 1;
    if (cost > this.costMaxTokens) {
      this.lastDenial = 'never-fits';
      return false;
    }
    this.lastDenial = !this.hasLease ? 'no-lease' : nowUs >= this.expiresAtUs ? 'expired' : 'exhausted';
    if (cost > this.wantedCostTokens) this.wantedCostTokens = cost;
    if (!this.lowSignalled) this.signalLow();
    return false;
  }

  private signalLow(): void {
    this.lowSignalled = true;
    this.onLow();
  }
}
