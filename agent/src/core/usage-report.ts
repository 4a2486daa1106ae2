/**
 * UsageReports: between renewals, a chunk lease tells the coordinator what
 * is left of it (keeper option `reportMs`), so the coordinator can lower a
 * stale bound on what the agent may still spend.
 *
 * Rules:
 * - Off unless `reportMs` > 0; only for a chunk lease held (a rate lease
 *   renews often enough), and only while nothing is in flight: the balance
 *   reported then already counts every grant the coordinator made.
 * - At most one report per `reportMs` since the last report or grant, and
 *   only when the balance fell since what was last told (a grant tells it).
 * - A report is published with a fresh sequence number and no reply awaited
 *   (`timeoutMs` 0): a lost one only leaves a bound higher than it could be.
 * - A report tells the balance: it starts a new told generation of the
 *   slot (`source.told`), so no take before it is given back after it.
 */
import type { LeaseReport } from '@tokenlease/shared';
import type { KeeperStats, SendAction } from './keeper-types.js';
import { US_PER_MS } from './units.js';

const NONE: readonly SendAction[] = [];

/** ReportSource — who reports: the agent, its pool and its sequence numbers. */
export interface ReportSource {
  /** The id the keeper asks under now (it moves after a `forbidden` refusal). */
  readonly agentId: () => string;
  readonly pool: string;
  readonly secret: string;
  readonly nextSeq: () => number;
  /** told — a report is about to tell the coordinator the balance (LeaseSlot.told: no take before it is given back). */
  readonly told: () => void;
}

export class UsageReports {
  private lastReportUs = 0;
  private reportedTokens = 0;

  constructor(
    private readonly source: ReportSource,
    private readonly reportMs: number,
    private readonly stats: KeeperStats,
  ) {}

  /** granted — a grant at `nowUs` told the coordinator the balance, `balanceTokens`. */
  granted(balanceTokens: number, nowUs: number): void {
    this.lastReportUs = nowUs;
    this.reportedTokens = balanceTokens;
  }

  /** dueAtUs — when a report for chunk lease `leaseId` may go next; Infinity when off or `leaseId` is null. */
  dueAtUs(leaseId: string | null): number {
    return this.reportMs > 0 && leaseId !== null ? this.lastReportUs + this.reportMs * US_PER_MS : Infinity;
  }

  /**
   * report — at `nowUs`, with nothing in flight: the report of what is left
   * of chunk lease `leaseId` (null: none held), when one is due and the
   * balance fell since last told; else nothing.
   */
  report(leaseId: string | null, balanceTokens: number, nowUs: number): readonly SendAction[] {
    if (leaseId === null || nowUs < this.dueAtUs(leaseId)) return NONE;
    this.lastReportUs = nowUs;
    if (balanceTokens >= this.reportedTokens) return NONE;
    this.reportedTokens = balanceTokens;
    this.stats.reports += 1;
    this.source.told();
    const { pool, secret } = this.source;
    const agentId = this.source.agentId();
    const message: LeaseReport = {
      v: 2,
      op: 'report',
      agentId,
      pool,
      leaseSecret: secret,
      seq: this.source.nextSeq(),
      leaseId,
      tokensLeft: balanceTokens,
    };
    return [{ type: 'publish', seq: message.seq, message, timeoutMs: 0 }];
  }
}
