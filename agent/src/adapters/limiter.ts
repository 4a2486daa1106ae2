/**
 * Limiter: the handle a service calls to admit requests from one pool.
 *
 * `tryTake` is the fast path: synchronous, no allocation, no map lookup, one
 * clock read. It is pause-safe: an admission compares the clock with the
 * agent-side expiry every time, so a process resumed after a SIGSTOP past its
 * lease's expiry denies instead of spending. `take` waits (bounded) for tokens:
 * the pool's TakeQueue decides, this file keeps its promises and one timer
 * for the queue's next deadline.
 *
 * A limiter that has not heard from its pool yet (no grant, no refusal)
 * does not know the pool's limits: `take()` then waits for them before it
 * decides whether a cost can ever fit, and `ready()` waits for that word.
 *
 * Giving back: a take that should not count after all (a request that
 * failed, under express-rate-limit's `skipFailedRequests`) takes a receipt,
 * `tryTakeReceipt(cost)` or `await takeReceipt(cost)` (RECEIPT_DENIED, -1,
 * when denied), and hands it to `giveBack(cost, receipt)` when it knows.
 * The tokens go back to the lease they came from only if nothing has told
 * the coordinator the balance since (no renewal, report or return, the
 * same lease, still live); else the give-back is dropped and the take
 * stays counted, the safe side (LeaseSlot's refund rules; docs/design.md,
 * "Requests that are not counted"). What the fallback bucket or shadow
 * mode admitted is never given back. `stats().refundedTokens` counts what
 * was. The fleet's promise holds over counted takes: admitted less
 * refunded.
 */
import { RECEIPT_DENIED, type DenialReason, type LeaseSlot } from '../core/lease-slot.js';
import type { LeaseKeeper, PoolLimits } from '../core/lease-keeper.js';
import { TAKE_TIMEOUT_MS_DEFAULT, TakeQueue } from '../core/take-queue.js';
import { US_PER_MS } from '../core/units.js';
import { AgentError } from '../errors.js';

/** Settles one waiting `take()` promise: with the take's receipt (RECEIPT_DENIED: not admitted), or rejected with why. */
interface Settle {
  readonly done: (receipt: number) => void;
  readonly fail: (error: AgentError) => void;
}

/** admittedOf — a `take()`'s answer from its receipt. */
function admittedOf(receipt: number): boolean {
  return receipt !== RECEIPT_DENIED;
}

/** receiptOf — a `takeReceipt()`'s answer: the receipt itself. */
function receiptOf(receipt: number): number {
  return receipt;
}

function ignore(): void {}
const UNSET: Settle = { done: ignore, fail: ignore };

/** One `acquireWithin()` call waiting for a slot: settled with a handle, or 0 at its deadline (µs) or when waits are cancelled. */
interface SlotWaiter {
  readonly done: (handle: number) => void;
  readonly deadlineUs: number;
}

/** SLOT_WAITERS_MAX — the most `acquireWithin()` calls one limiter keeps waiting; one more is refused at once (0). */
export const SLOT_WAITERS_MAX = 10_000;
/** SLOT_WAIT_MS_MAX — the longest an `acquireWithin()` call may wait, ms. */
export const SLOT_WAIT_MS_MAX = 60_000;

/** One `ready()` call waiting for the pool's first word. */
interface ReadyWaiter {
  readonly done: (heard: boolean) => void;
  readonly timer: NodeJS.Timeout;
}

/** LimiterHost — what a limiter needs from its agent. */
export interface LimiterHost {
  /** The agent's monotonic clock, µs. */
  readonly clock: () => number;
  wake(keeper: LeaseKeeper): void;
  /** release — return `keeper`'s lease now and let the agent drop the limiter once it is quiet (see Limiter.close). */
  release?(keeper: LeaseKeeper): void;
}

/** LimiterStats — a limiter's counts and state (`limiter.stats()`): admissions, denials, its lease's traffic, fallback, shadow mode and give-backs. */
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
  /** Whether the coordinator's last word was that the pool does not exist. */
  readonly unknownPool: boolean;
  /** Whether a cost this limiter would deny is admitted now: shadow mode, forced by the service or from a live lease granted in shadow mode. */
  readonly shadow: boolean;
  /** Tokens and calls admitted only because of shadow mode: what enforcing would have denied (outside the global bound). */
  readonly shadowDeniedTokens: number;
  readonly shadowDeniedCount: number;
  /** Tokens given back (`giveBack`), and the give-backs that returned any: admittedTokens less refundedTokens counted. */
  readonly refundedTokens: number;
  readonly refundedCount: number;
}

/**
 * Limiter — the handle a service admits requests of one pool with
 * (`agent.limiter(pool)`): `tryTake` decides at once from the local lease,
 * `take` waits (bounded) for tokens, and a take that should not count after
 * all can be given back (`takeReceipt`, `giveBack`).
 */
export class Limiter {
  private readonly takes: TakeQueue<Settle>;
  /** The timer set for the take queue's next deadline, and that deadline (µs; Infinity: none set). */
  private alarm: NodeJS.Timeout | null = null;
  private alarmAtUs = Infinity;
  private readyWaiters: ReadyWaiter[] = [];
  /** `acquireWithin()` calls waiting for a slot, in arrival order, and the one timer for the first of their deadlines and of the holds' bounds. */
  private slotWaiters: SlotWaiter[] = [];
  private slotAlarm: NodeJS.Timeout | null = null;
  private slotAlarmAtUs = Infinity;

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
   * In shadow mode (`shadow`) a cost it would deny is admitted and counted
   * apart (`stats().shadowDeniedTokens`).
   */
  tryTake(cost = 1): boolean {
    const nowUs = this.now();
    const admitted = this.slot.takeAt(cost, nowUs);
    const arrivals = this.slot.arrivals;
    if (arrivals !== null) arrivals.note(cost, nowUs);
    return admitted;
  }

  /**
   * tryTakeAt — `tryTake` at a clock reading the caller already made with
   * the agent's clock (µs), e.g. to log admissions at their exact instant.
   */
  tryTakeAt(cost: number, nowUs: number): boolean {
    const admitted = this.slot.takeAt(cost, nowUs);
    const arrivals = this.slot.arrivals;
    if (arrivals !== null) arrivals.note(cost, nowUs);
    return admitted;
  }

  /**
   * acquire — takes a slot of a concurrency pool for one request, from the
   * local lease, without waiting or I/O: a handle (a positive integer) to
   * `release` when the request ends, or 0 when every slot the lease holds
   * is busy (read `lastDenial`, `retryAfterMs`). The slot counts as
   * released at the pool's hold bound whatever the request does. In shadow
   * mode a refusal is admitted with a handle that frees nothing. Throws
   * AgentError('invalid-argument') when the pool leases tokens.
   */
  acquire(): number {
    const nowUs = this.now();
    const handle = this.slot.acquireAt(nowUs);
    const arrivals = this.slot.arrivals;
    if (arrivals !== null) arrivals.note(1, nowUs);
    return handle;
  }

  /** acquireAt — `acquire` at a clock reading the caller already made with the agent's clock (µs). */
  acquireAt(nowUs: number): number {
    const handle = this.slot.acquireAt(nowUs);
    const arrivals = this.slot.arrivals;
    if (arrivals !== null) arrivals.note(1, nowUs);
    return handle;
  }

  /**
   * release — the request of `handle` ended: its slot is free again for
   * this agent (if its lease is still the one in hand). False, changing
   * nothing, when that hold had ended already: released before, past the
   * hold bound, or not a handle of this limiter.
   */
  release(handle: number): boolean {
    const released = this.slot.releaseAt(handle, this.now());
    if (this.slotWaiters.length > 0) this.serveSlotWaiters();
    return released;
  }

  /**
   * acquireWithin — `acquire`, waiting up to `timeoutMs` (an integer in
   * [0, SLOT_WAIT_MS_MAX]) for a slot when none is free: behind the calls
   * already waiting, served as slots are released here, holds reach their
   * bound, or grants arrive. Resolves the handle, or 0 at the timeout, when
   * SLOT_WAITERS_MAX calls wait already, for a pool the coordinator does
   * not know, or when the limiter closes. Throws AgentError
   * ('invalid-argument') for a bad timeout, or when the pool leases tokens.
   */
  acquireWithin(timeoutMs: number): Promise<number> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > SLOT_WAIT_MS_MAX)
      throw new AgentError('invalid-argument', `timeoutMs must be an integer in [0, ${SLOT_WAIT_MS_MAX}], got ${timeoutMs}`, {
        pool: this.pool,
      });
    const handle = this.acquire();
    const hopeless = this.slot.lastDenial === 'unknown-pool';
    if (handle !== 0 || timeoutMs === 0 || hopeless || this.slotWaiters.length >= SLOT_WAITERS_MAX) return Promise.resolve(handle);
    return new Promise<number>((resolve) => {
      this.slotWaiters.push({ done: resolve, deadlineUs: this.now() + timeoutMs * US_PER_MS });
      this.armSlots();
      this.host.wake(this.keeper);
    });
  }

  /** serveSlotWaiters — hands free slots to the waiting `acquireWithin()` calls in order, and ends those past their deadline. */
  private serveSlotWaiters(): void {
    const nowUs = this.now();
    while (this.slotWaiters.length > 0 && this.slot.canAcquireAt(nowUs)) {
      const handle = this.slot.acquireAt(nowUs);
      if (handle === 0) break;
      (this.slotWaiters.shift() as SlotWaiter).done(handle);
    }
    if (this.slotWaiters.some((w) => w.deadlineUs <= nowUs)) {
      const due = this.slotWaiters.filter((w) => w.deadlineUs <= nowUs);
      this.slotWaiters = this.slotWaiters.filter((w) => w.deadlineUs > nowUs);
      for (const w of due) w.done(0);
    }
    this.armSlots();
  }

  /** armSlots — keeps one timer set for the first waiter's deadline or hold bound, while calls wait. */
  private armSlots(): void {
    let atUs = Infinity;
    if (this.slotWaiters.length > 0) {
      atUs = this.slot.holds.nextBoundUs();
      for (const w of this.slotWaiters) atUs = Math.min(atUs, w.deadlineUs);
    }
    if (atUs === this.slotAlarmAtUs) return;
    if (this.slotAlarm !== null) clearTimeout(this.slotAlarm);
    this.slotAlarm = null;
    this.slotAlarmAtUs = atUs;
    if (atUs === Infinity) return;
    this.slotAlarm = setTimeout(this.onSlotAlarm, Math.max(1, Math.ceil((atUs - this.now()) / US_PER_MS)));
  }

  private readonly onSlotAlarm = (): void => {
    this.slotAlarm = null;
    this.slotAlarmAtUs = Infinity;
    this.serveSlotWaiters();
  };

  /** releaseAt — `release` at a clock reading of the agent's clock (µs). */
  releaseAt(handle: number, nowUs: number): boolean {
    return this.slot.releaseAt(handle, nowUs);
  }

  /** inFlight — this agent's requests of this pool holding a slot now, within their hold bound (0 for a pool of tokens). */
  get inFlight(): number {
    return this.slot.holdsInFlight;
  }

  /**
   * tryTakeReceipt — `tryTake`, returning a receipt for `giveBack`:
   * RECEIPT_DENIED (-1) when denied; RECEIPT_NONE (0) when admitted with
   * nothing to give back (the fallback bucket or shadow mode admitted it);
   * else a positive number. Synchronous, allocates nothing.
   */
  tryTakeReceipt(cost = 1): number {
    const nowUs = this.now();
    const receipt = this.slot.takeReceiptAt(cost, nowUs);
    const arrivals = this.slot.arrivals;
    if (arrivals !== null) arrivals.note(cost, nowUs);
    return receipt;
  }

  /**
   * giveBack — gives back `cost` tokens of the take that got `receipt`
   * (see the class comment): returns the tokens given back, 0 when the
   * give-back was dropped (the take stays counted) or the receipt says
   * there is nothing to give. Throws AgentError('invalid-argument') for a
   * bad cost. Give each receipt back once, with the cost it was taken with.
   */
  giveBack(cost: number, receipt: number): number {
    return this.slot.giveBackAt(cost, receipt, this.now());
  }

  /** shadow — whether a cost this limiter would deny is admitted now (`forceShadow`, or a live lease granted in shadow mode). */
  get shadow(): boolean {
    return this.keeper.slot.shadowAt(this.now());
  }

  /**
   * forceShadow — true: this pool is in shadow mode in this service whatever
   * the coordinator says; false (the default): the latest grant decides.
   */
  get forceShadow(): boolean {
    return this.keeper.slot.shadowForced;
  }
  set forceShadow(shadow: boolean) {
    this.keeper.slot.shadowForced = shadow;
  }

  /** leaseId — the lease this limiter holds or last held, or null before the first grant. */
  get leaseId(): string | null {
    return this.keeper.leaseId;
  }

  /**
   * lastDenial — why the last denial happened: no-lease, exhausted,
   * never-fits, expired or unknown-pool (in shadow mode: why the last
   * would-be denial would have happened).
   */
  get lastDenial(): DenialReason {
    return this.keeper.slot.lastDenial;
  }

  /**
   * retryAfterMs — the expected wait, ms (rounded up, at least 1), until
   * the last denied cost can be admitted: about one round-trip while the
   * pool has tokens to give, else the coordinator's hint and the pool's
   * refill for what is missing (LeaseKeeper.retryAfterUs). Null for
   * `never-fits` and `unknown-pool`, where no wait helps.
   */
  get retryAfterMs(): number | null {
    const denial = this.keeper.slot.lastDenial;
    if (denial === 'never-fits' || denial === 'unknown-pool') return null;
    return this.retryAfterMsFor(Math.max(1, this.keeper.slot.wantedCostTokens));
  }

  /** retryAfterMsFor — the expected wait, ms (at least 1), until `cost` tokens can be admitted. */
  retryAfterMsFor(cost: number): number {
    return Math.max(1, Math.ceil(this.keeper.retryAfterUs(cost, this.now()) / US_PER_MS));
  }

  /**
   * limits — the pool's capacity, largest lease and refill (its quota and
   * window), as its last grant told them; null until the first grant.
   */
  get limits(): PoolLimits | null {
    return this.keeper.limits;
  }

  /** availableTokens — what this limiter may admit now from its lease (0 without a live one). */
  get availableTokens(): number {
    const s = this.keeper.slot;
    return s.hasLease && this.now() < s.expiresAtUs ? s.balanceTokens : 0;
  }

  /** heard — whether the pool has answered this limiter yet (a grant, or `unknown-pool`). */
  get heard(): boolean {
    return this.keeper.heard;
  }

  /** unavailable — whether the last attempt found no coordinator able to grant (unreachable, no owner, store down). */
  get unavailable(): boolean {
    return this.keeper.unavailable;
  }

  /**
   * ready — resolves true once the pool has answered (a grant or
   * `unknown-pool`), false after `timeoutMs` (default 1000) without a word.
   * Never rejects.
   */
  ready(timeoutMs = TAKE_TIMEOUT_MS_DEFAULT): Promise<boolean> {
    if (this.keeper.heard) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter: ReadyWaiter = {
        done: resolve,
        timer: setTimeout(() => {
          this.readyWaiters = this.readyWaiters.filter((w) => w !== waiter);
          resolve(false);
        }, timeoutMs),
      };
      this.readyWaiters.push(waiter);
      this.host.wake(this.keeper);
    });
  }

  /**
   * close — returns this limiter's lease now, ends its waiting `take()`
   * calls with false, and lets the agent drop it once nothing is in
   * flight. The handle stays usable: a later call asks for a lease again,
   * as it does for a limiter the agent dropped for idleness.
   */
  close(): void {
    this.cancelWaiters(false);
    this.host.release?.(this.keeper);
  }

  /**
   * take — admits `cost` tokens, waiting up to `timeoutMs` (default 1000)
   * for the lease keeper to bring them, behind any takes already waiting.
   * Resolves true when admitted, false on timeout or close. Always a
   * promise, never a throw: rejects with AgentError `invalid-argument` for
   * a bad cost or timeout, `never-fits` for a cost no lease of the pool
   * can hold (decided once the pool's limits are known: a take on a
   * limiter that has not heard from its pool waits for them),
   * `unknown-pool` when the coordinator knows no such pool, `closed` after
   * the agent closed (the rules are TakeQueue's, core/take-queue.ts).
   * In shadow mode it never waits: it resolves true at once, counting a
   * would-be denial when the lease cannot cover the cost.
   */
  take(cost = 1, options: { readonly timeoutMs?: number } = {}): Promise<boolean> {
    return this.enqueue(cost, options.timeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT, 'take', admittedOf);
  }

  /**
   * takeReceipt — `take`, resolving with a receipt for `giveBack` instead
   * of true (RECEIPT_NONE, 0, when there is nothing to give back) and
   * RECEIPT_DENIED (-1) instead of false; rejects as `take` does.
   */
  takeReceipt(cost = 1, options: { readonly timeoutMs?: number } = {}): Promise<number> {
    return this.enqueue(cost, options.timeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT, 'take', receiptOf);
  }

  /**
   * retakeReceipt — `takeReceipt` for a call whose arrival a recording
   * already noted (the HTTP middleware waiting after its first try): the
   * same wait, not recorded again.
   */
  retakeReceipt(cost: number, options: { readonly timeoutMs: number }): Promise<number> {
    return this.enqueue(cost, options.timeoutMs, 'retake', receiptOf);
  }

  /**
   * fits — like `take`, but spends nothing: resolves true once `cost`
   * could be admitted now, in turn behind the takes already waiting
   * (Agent.takeAll waits so on the part it was denied, then spends every
   * part at once). The tokens may be gone by the next call.
   */
  fits(cost = 1, options: { readonly timeoutMs?: number } = {}): Promise<boolean> {
    return this.enqueue(cost, options.timeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT, 'probe', admittedOf);
  }

  /**
   * enqueue — a take, a take already recorded (`retake`) or a probe at the
   * take queue, answered by `answer` of its receipt. A take's arrival is
   * recorded (when its pool is) whatever the answer, unless the call was
   * refused for its arguments or because the agent closed.
   */
  private enqueue<T>(cost: number, timeoutMs: number, kind: 'take' | 'retake' | 'probe', answer: (receipt: number) => T): Promise<T> {
    let settle: Settle = UNSET;
    const waiting = new Promise<T>((resolve, reject) => {
      settle = { done: (receipt) => resolve(answer(receipt)), fail: reject };
    });
    const nowUs = this.now();
    const arrival = this.takes.arrive(cost, timeoutMs, settle, nowUs, kind !== 'probe');
    // A request that came is recorded, admitted or not; a call refused for its arguments or after close is not one.
    const came = arrival.kind !== 'refused' || (arrival.error.code !== 'invalid-argument' && arrival.error.code !== 'closed');
    if (kind === 'take' && came) this.slot.arrivals?.note(cost, nowUs);
    if (arrival.kind === 'refused') return Promise.reject(arrival.error);
    if (arrival.kind === 'admitted') return Promise.resolve(answer(arrival.receipt));
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
      unknownPool: s.unknownPool,
      shadow: s.shadowAt(this.now()),
      shadowDeniedTokens: s.shadowDeniedTokens,
      shadowDeniedCount: s.shadowDeniedCount,
      refundedTokens: s.refundedTokens,
      refundedCount: s.refundedCount,
    };
  }

  /** serveWaiters — polls the take queue now: settles the `take` calls it admitted, timed out or refused; answers `ready()` calls once heard. */
  serveWaiters(): void {
    if (this.readyWaiters.length > 0 && this.keeper.heard) {
      const waiters = this.readyWaiters;
      this.readyWaiters = [];
      for (const waiter of waiters) {
        clearTimeout(waiter.timer);
        waiter.done(true);
      }
    }
    if (this.slotWaiters.length > 0) this.serveSlotWaiters();
    if (this.takes.length === 0) return;
    const { admitted, receipts, timedOut, refused } = this.takes.poll(this.now());
    admitted.forEach((settle, i) => settle.done(receipts[i] as number));
    for (const settle of timedOut) settle.done(RECEIPT_DENIED);
    for (const { ticket, error } of refused) ticket.fail(error);
    this.arm();
  }

  /** waiting — whether a `take`, `fits`, `ready` or `acquireWithin` call waits on this limiter. */
  get waiting(): boolean {
    return this.takes.length > 0 || this.readyWaiters.length > 0 || this.slotWaiters.length > 0;
  }

  /**
   * cancelWaiters — resolves every waiting `take` with false; with `final`
   * (the agent closes; the default) later ones are refused too.
   */
  cancelWaiters(final = true): void {
    const settles = final ? this.takes.close() : this.takes.drain();
    this.arm();
    for (const settle of settles) settle.done(RECEIPT_DENIED);
    const slotWaiters = this.slotWaiters;
    this.slotWaiters = [];
    this.armSlots();
    for (const w of slotWaiters) w.done(0);
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
