/**
 * RequestCycle: the lease keeper's one request in flight, its retries, and
 * the back-off between requests that failed.
 *
 * Rules:
 * - One request in flight at a time. A retry after a lost reply repeats the
 *   same sequence number and bytes, so the coordinator answers it with the
 *   original reply instead of granting twice. A reply or failure for any
 *   other sequence is stale and changes nothing.
 * - A retry that would only win a stale grant is abandoned for a fresh
 *   request: the agent-side expiry counts from the first send, so once the
 *   sequence is `RETRY_LEASE_FRACTION_MAX` of a lease life old a grant to it
 *   would expire soon after it arrived. A return that late finds the lease
 *   expired anyway, and a closing keeper wants no more tokens, so those are
 *   abandoned too.
 * - Each failure in a row doubles the back-off ceiling from `backoffMsMin`
 *   up to `backoffMsMax`; the wait is drawn from [`BACKOFF_FRACTION_MIN`, 1]
 *   of it, so agents that failed together do not retry together. An error
 *   reply waits at least its `retryAfterMs`. A grant ends the run.
 * - No reply at all, or a reply saying the coordinator cannot grant now
 *   (unavailable, not-owner, internal), turns the slot's fallback on; a
 *   grant turns it off. A refusal of the request itself does not.
 * - Settling the request re-arms the slot's low signal: the next shortfall
 *   is news again.
 */
import type { LeaseRequest, LeaseReturn } from '@tokenlease/shared';
import type { KeeperOptions } from './keeper-options.js';
import type { InFlight, KeeperStats, SendAction } from './keeper-types.js';
import type { LeaseSlot } from './lease-slot.js';
import { US_PER_MS } from './units.js';

/** A retry is abandoned once its sequence is this fraction of an agent-side lease life old. */
const RETRY_LEASE_FRACTION_MAX = 3 / 4;
/** The back-off ceiling doubles at most this many times (`backoffMsMax` caps it sooner). */
const BACKOFF_DOUBLINGS_MAX = 20;
/** A back-off is drawn uniformly from this fraction of its ceiling up to the whole. */
const BACKOFF_FRACTION_MIN = 0.5;
/** Error codes that say the coordinator cannot grant now (rather than that the request was wrong). */
const CANNOT_GRANT_CODES: ReadonlySet<string> = new Set(['unavailable', 'not-owner', 'internal']);
const NONE: readonly SendAction[] = [];

export class RequestCycle {
  private flight: InFlight | null = null;
  private quietUntilUs = 0;
  private failuresInRow = 0;
  /** Whether the last attempt found no coordinator able to grant (with or without a fallback configured). */
  unavailable = false;

  constructor(
    private readonly slot: LeaseSlot,
    private readonly options: KeeperOptions,
    private readonly stats: KeeperStats,
    private readonly random: () => number,
  ) {}

  /** inFlight — the request awaiting its reply or its retry, or null. */
  get inFlight(): InFlight | null {
    return this.flight;
  }

  /** notBeforeUs — no new request before this instant, µs (0 at first). */
  get notBeforeUs(): number {
    return this.quietUntilUs;
  }

  /** launch — sends `message` at `nowUs` as the request in flight; there must be none. */
  launch(message: LeaseRequest | LeaseReturn, nowUs: number): readonly SendAction[] {
    this.flight = { seq: message.seq, message, firstSentAtUs: nowUs, attempts: 0, retryAtUs: null };
    return this.resend(this.flight);
  }

  /** retryDue — the next attempt of the request in flight when its retry is due at `nowUs`; else nothing. */
  retryDue(nowUs: number): readonly SendAction[] {
    const flight = this.flight;
    return flight !== null && flight.retryAtUs !== null && nowUs >= flight.retryAtUs ? this.resend(flight) : NONE;
  }

  /** settle — ends the request `seq` as answered and returns it; null when `seq` is not in flight (stale). */
  settle(seq: number): InFlight | null {
    const flight = this.flight;
    if (flight === null || flight.seq !== seq) return null;
    this.flight = null;
    this.slot.lowSignalled = false;
    return flight;
  }

  /**
   * failed — request `seq` got no reply at `nowUs`: it is retried after a
   * back-off, or abandoned (see the rules) with no new request before then.
   * `ttlUs` is the lease TTL the next grant is expected to carry; `closing`
   * whether the keeper is closing. False when `seq` is not in flight (stale).
   */
  failed(seq: number, code: string, message: string, nowUs: number, ttlUs: number, closing: boolean): boolean {
    const flight = this.flight;
    if (flight === null || flight.seq !== seq) return false;
    const delayUs = this.backoffUs();
    this.recordError(code, message);
    this.slot.fallbackActive = true;
    this.unavailable = true;
    const staleAfterUs = ttlUs * (1 - this.options.driftMargin) * RETRY_LEASE_FRACTION_MAX;
    const abandon = (closing && flight.message.op === 'acquire') || nowUs - flight.firstSentAtUs >= staleAfterUs;
    if (abandon) {
      this.flight = null;
      this.slot.lowSignalled = false;
      this.quietUntilUs = nowUs + delayUs;
    } else {
      flight.retryAtUs = nowUs + delayUs;
    }
    return true;
  }

  /** refused — a reply at `nowUs` granted nothing (`code`): no new request for a back-off, at least `atLeastUs`. */
  refused(nowUs: number, code: string, message: string, atLeastUs: number): void {
    this.quietUntilUs = nowUs + Math.max(this.backoffUs(), atLeastUs);
    this.recordError(code, message);
    if (CANNOT_GRANT_CODES.has(code)) {
      this.slot.fallbackActive = true;
      this.unavailable = true;
    } else this.unavailable = false;
  }

  /** granted — a grant arrived: the run of failures and the fallback end. */
  granted(): void {
    this.failuresInRow = 0;
    this.slot.fallbackActive = false;
    this.unavailable = false;
  }

  /** deferUntil — no new request before `atUs` (the coordinator expects tokens no sooner). */
  deferUntil(atUs: number): void {
    this.quietUntilUs = atUs;
  }

  private resend(flight: InFlight): readonly SendAction[] {
    flight.attempts += 1;
    flight.retryAtUs = null;
    this.stats.attempts += 1;
    const timeoutMs = this.options.holdMs + this.options.replyTimeoutMs;
    return [{ type: 'send', seq: flight.seq, message: flight.message, timeoutMs }];
  }

  private backoffUs(): number {
    this.failuresInRow += 1;
    const { backoffMsMin, backoffMsMax } = this.options;
    const ceilingMs = Math.min(backoffMsMax, backoffMsMin * 2 ** Math.min(BACKOFF_DOUBLINGS_MAX, this.failuresInRow - 1));
    return Math.round(ceilingMs * US_PER_MS * (BACKOFF_FRACTION_MIN + this.random() * (1 - BACKOFF_FRACTION_MIN)));
  }

  private recordError(code: string, message: string): void {
    this.stats.failures += 1;
    this.stats.lastErrorCode = code;
    this.stats.lastErrorMessage = message;
  }
}
