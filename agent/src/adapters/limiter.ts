/**
 * Limiter: the handle a service calls to admit requests from one pool.
 *
 * `tryTake` is the fast path: synchronous, no allocation, no map lookup, one
 * clock read. It is pause-safe: an admission compares the clock with the
 * agent-side expiry every time, so a process resumed after a SIGSTOP past its
 * lease's expiry denies instead of spending. `take` waits (bounded) for tokens.
 */
import type { DenialReason, LeaseSlot } from '../core/lease-slot.js';
import type { LeaseKeeper } from '../core/lease-keeper.js';
import { AgentError } from '../errors.js';

interface Waiter {
  readonly cost: number;
  readonly resolve: (admitted: boolean) => void;
  timer: NodeJS.Timeout | null;
}

/** LimiterHost — what a limiter needs from its agent. */
export interface LimiterHost {
  readonly closed: boolean;
  /** The agent's monotonic clock, µs. */
  readonly clock: () => number;
  wake(keeper: LeaseKeeper): void;
}

export interface LimiterStats {
  readonly pool: string;
  readonly admittedTokens: number;
  readonly admittedCount: number;
  readonly deniedTokens: number;
  readonly deniedCount: number;
  readonly balanceTokens: number;
  readonly demandPerSecond: number;
  readonly requests: number;
  readonly attempts: number;
  readonly failures: number;
  readonly leasesStarted: number;
  readonly tokensGranted: number;
  readonly tokensReturned: number;
  /** Usage reports published (keeper option reportMs). */
  readonly reports: number;
  readonly lastErrorCode: string | null;
  /** Tokens and admissions from the local fallback bucket (outside the global bound); 0 when none is configured. */
  readonly fallbackTokens: number;
  readonly fallbackCount: number;
  /** Whether the fallback bucket serves costs the lease cannot cover right now. */
  readonly fallbackActive: boolean;
}

export class Limiter {
  private readonly waiters: Waiter[] = [];

  private readonly now: () => number;
  /** The fast-path state of this pool, shared with its lease keeper. */
  readonly slot: LeaseSlot;

  constructor(
    private readonly keeper: LeaseKeeper,
    private readonly host: LimiterHost,
  ) {
    this.now = host.clock;
    this.slot = keeper.slot;
  }

  get pool(): string {
    return this.keeper.pool;
  }

  /**
   * tryTake — admits `cost` tokens (a positive integer, default 1) from the
   * local lease, or denies. Never waits. Throws AgentError('invalid-argument')
   * for a bad cost. After a denial read `lastDenial` and `retryAfterMs`.
   */
  tryTake(cost = 1): boolean {
    return this.slot.takeAt(cost, this.now());
  }

  /**
   * tryTakeAt — `tryTake` at a clock reading the caller already made with
   * the agent's clock (µs), e.g. to log admissions at their exact instant.
   */
  tryTakeAt(cost: number, nowUs: number): boolean {
    return this.keeper.slot.takeAt(cost, nowUs);
  }

  /** leaseId — the lease this limiter holds or last held, or null before the first grant. */
  get leaseId(): string | null {
    return this.keeper.leaseId;
  }

  /** lastDenial — why the last denial happened: no-lease, exhausted, never-fits or expired. */
  get lastDenial(): DenialReason {
    return this.keeper.slot.lastDenial;
  }

  /**
   * retryAfterMs — estimated wait before a retry of the last denied cost can
   * succeed; null for `never-fits`, where no wait helps.
   */
  get retryAfterMs(): number | null {
    if (this.keeper.slot.lastDenial === 'never-fits') return null;
    const nowUs = this.now();
    const deadlineUs = this.keeper.nextDeadlineUs();
    const untilActionUs = Number.isFinite(deadlineUs) ? Math.max(0, deadlineUs - nowUs) : 0;
    return Math.ceil((untilActionUs + this.keeper.rttUs) / 1000);
  }

  /**
   * take — admits `cost` tokens, waiting up to `timeoutMs` (default 1000) for
   * the lease keeper to bring them. Resolves true when admitted, false on
   * timeout. Rejects with AgentError `never-fits` for a cost no lease can
   * hold, `closed` after the agent closed.
   */
  take(cost = 1, options: { readonly timeoutMs?: number } = {}): Promise<boolean> {
    if (this.host.closed) return Promise.reject(new AgentError('closed', 'the agent is closed', { pool: this.pool }));
    const timeoutMs = options.timeoutMs ?? 1000;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
      return Promise.reject(new AgentError('invalid-argument', `timeoutMs must be a non-negative integer, got ${timeoutMs}`));
    }
    if (this.waiters.length === 0 && this.tryTake(cost)) return Promise.resolve(true);
    if (cost > this.keeper.slot.costMaxTokens) {
      return Promise.reject(new AgentError('never-fits', `cost ${cost} exceeds the largest lease of pool ${this.pool} (${this.keeper.slot.costMaxTokens})`, { pool: this.pool }));
    }
    if (!(cost >= 1 && Number.isSafeInteger(cost))) {
      return Promise.reject(new AgentError('invalid-argument', `cost must be a positive integer, got ${cost}`, { pool: this.pool }));
    }
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { cost, resolve, timer: null };
      waiter.timer = setTimeout(() => this.settle(waiter, false), timeoutMs);
      this.waiters.push(waiter);
      this.keeper.waitingTokens += cost;
      this.host.wake(this.keeper);
    });
  }

  /** stats — counters of this limiter and its lease keeper. */
  stats(): LimiterStats {
    const s = this.keeper.slot;
    const k = this.keeper.stats;
    return {
      pool: this.pool,
      admittedTokens: s.admittedTokens,
      admittedCount: s.admittedCount,
      deniedTokens: s.deniedTokens,
      deniedCount: s.deniedCount,
      balanceTokens: s.hasLease ? s.balanceTokens : 0,
      demandPerSecond: this.keeper.demandPerSecond,
      requests: k.requests,
      attempts: k.attempts,
      failures: k.failures,
      leasesStarted: k.leasesStarted,
      tokensGranted: k.tokensGranted,
      tokensReturned: k.tokensReturned,
      reports: k.reports,
      lastErrorCode: k.lastErrorCode,
      fallbackTokens: s.fallbackTokens,
      fallbackCount: s.fallbackCount,
      fallbackActive: s.fallbackActive,
    };
  }

  /** serveWaiters — admits waiting `take` calls in arrival order while the balance allows. */
  serveWaiters(): void {
    const slot = this.keeper.slot;
    while (this.waiters.length > 0) {
      const head = this.waiters[0] as Waiter;
      const nowUs = this.now();
      if (!slot.canTakeAt(head.cost, nowUs) || !slot.takeAt(head.cost, nowUs)) return;
      this.settle(head, true);
    }
  }

  /** cancelWaiters — resolves every waiting `take` with false (on close). */
  cancelWaiters(): void {
    for (const waiter of [...this.waiters]) this.settle(waiter, false);
  }

  private settle(waiter: Waiter, admitted: boolean): void {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return;
    this.waiters.splice(index, 1);
    this.keeper.waitingTokens -= waiter.cost;
    if (waiter.timer !== null) clearTimeout(waiter.timer);
    waiter.resolve(admitted);
  }
}
