/**
 * Limiter: the handle a service calls to admit requests from one pool.
 *
 * `tryTake` is the fast path: synchronous, no allocation, no map lookup, one
 * clock read. It is pause-safe: an admission compares the clock with the
 * agent-side expiry every time, so a process resumed after a SIGSTOP past its
 * lease's expiry denies instead of spending. `take` waits (bounded) for tokens:
 * the pool's TakeQueue decides, this file keeps its promises and one timer
 * for the queue's next deadline.
 */
import type { DenialReason, LeaseSlot } from '../core/lease-slot.js';
import type { LeaseKeeper } from '../core/lease-keeper.js';
import { TAKE_TIMEOUT_MS_DEFAULT, TakeQueue } from '../core/take-queue.js';
import { US_PER_MS } from '../core/units.js';

/** Settles one waiting `take()` promise. */
type Settle = (admitted: boolean) => void;

function ignore(): void {}

/** LimiterHost — what a limiter needs from its agent. */
export interface LimiterHost {
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
  private readonly takes: TakeQueue<Settle>;
  /** The timer set for the take queue's next deadline, and that deadline (µs; Infinity: none set). */
  private alarm: NodeJS.Timeout | null = null;
  private alarmAtUs = Infinity;

  private readonly now: () => number;
  /** The fast-path state of this pool, shared with its lease keeper. */
  readonly slot: LeaseSlot;

  constructor(
    private readonly keeper: LeaseKeeper,
    private readonly host: LimiterHost,
  ) {
    this.now = host.clock;
    this.slot = keeper.slot;
    this.takes = new TakeQueue<Settle>(keeper);
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
    return Math.ceil((untilActionUs + this.keeper.rttUs) / US_PER_MS);
  }

  /**
   * take — admits `cost` tokens, waiting up to `timeoutMs` (default 1000)
   * for the lease keeper to bring them, behind any takes already waiting.
   * Resolves true when admitted, false on timeout or close. Rejects with
   * AgentError `never-fits` for a cost no lease can hold, `closed` after the
   * agent closed, `invalid-argument` for a bad timeout or cost (the rules
   * are TakeQueue's, core/take-queue.ts).
   */
  take(cost = 1, options: { readonly timeoutMs?: number } = {}): Promise<boolean> {
    let settle: Settle = ignore;
    const waiting = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const arrival = this.takes.arrive(cost, options.timeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT, settle, this.now());
    if (arrival.kind === 'refused') return Promise.reject(arrival.error);
    if (arrival.kind === 'admitted') return Promise.resolve(true);
    this.arm();
    this.host.wake(this.keeper);
    return waiting;
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

  /** serveWaiters — polls the take queue now: settles the `take` calls it admitted or timed out. */
  serveWaiters(): void {
    if (this.takes.length === 0) return;
    const { admitted, timedOut } = this.takes.poll(this.now());
    for (const settle of admitted) settle(true);
    for (const settle of timedOut) settle(false);
    this.arm();
  }

  /** cancelWaiters — resolves every waiting `take` with false and refuses later ones (on close). */
  cancelWaiters(): void {
    const settles = this.takes.close();
    this.arm();
    for (const settle of settles) settle(false);
  }

  /** arm — keeps one timer set for the take queue's next deadline. */
  private arm(): void {
    const deadlineUs = this.takes.nextDeadlineUs();
    if (deadlineUs === this.alarmAtUs) return;
    if (this.alarm !== null) clearTimeout(this.alarm);
    this.alarm = null;
    this.alarmAtUs = deadlineUs;
    if (deadlineUs === Infinity) return;
    // Not unref'd: a pending take() keeps the process alive until it settles, as an awaited timer would.
    this.alarm = setTimeout(this.onAlarm, Math.max(1, Math.ceil((deadlineUs - this.now()) / US_PER_MS)));
  }

  private readonly onAlarm = (): void => {
    this.alarm = null;
    this.alarmAtUs = Infinity;
    this.serveWaiters();
  };
}
