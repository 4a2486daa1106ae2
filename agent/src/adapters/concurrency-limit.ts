/**
 * ConcurrencyLimit: the concurrency middleware's engine, shared by the
 * node:http/Express and the Fastify adapters: at most N requests of a route
 * in flight across the fleet, N being a concurrency pool's limit
 * (docs/design.md, "Concurrency pools").
 *
 * Rules:
 * - A request takes a slot of the pool from the agent's lease as it
 *   arrives (`enter`), without I/O when one is free; else it waits up to
 *   `waitMs` behind the requests already waiting (a bounded queue: the
 *   limiter's), and a fresh agent's first request waits up to `graceMs`
 *   for the first grant. None within that: refused, 503 with `Retry-After`.
 * - The slot is released when the response ends: finished, or closed
 *   before it finished (the client went away, the handler failed and
 *   destroyed it). Exactly once: `watch` ends it on the first of the two.
 * - A request still running at the pool's hold bound no longer counts
 *   (the agent counts its slot released then): with `overrun: 'abort'` its
 *   connection is destroyed at that instant, and `onOverrun` is told in
 *   either mode. Without either, no timer is set per request.
 * - No coordinator able to grant: fail closed (503 `unavailable`) or, with
 *   `unavailable: 'allow'`, let the request through without a slot.
 * - A pool that leases tokens is a misconfiguration: 500, naming it.
 * It moves no bytes: the adapters write the refusal HttpPolicy words.
 */
import type { Agent } from './agent.js';
import type { Limiter } from './limiter.js';
import { SLOT_WAIT_MS_MAX } from './limiter.js';
import { AgentError } from '../errors.js';
import { customised, notConcurrency, slotDenial, statusCodeProblem, type DenialMessage, type Refusal } from '../core/http-policy.js';
import { GRACE_MS_DEFAULT } from '../core/http-options.js';
import type { EndingResponse, SkipFunction } from './http-limit.js';
import { US_PER_MS } from '../core/units.js';
import { POOL_NAME_LENGTH_MAX } from '@tokenlease/shared';

/** OverrunFunction — `(request) => void`: told of a request still running at its pool's hold bound. */
export type OverrunFunction<Req> = {
  /** onOverrun — `request` still runs at its pool's hold bound: its slot counts as released from now on. */
  onOverrun(request: Req): void;
}['onOverrun'];

/** ConcurrencyLimitOptions — the concurrency middleware's options. */
export interface ConcurrencyLimitOptions<Req = unknown> {
  readonly agent: Agent;
  /** The concurrency pool whose slots the requests hold (configured with `concurrency: { limit, maxHoldMs }`). */
  readonly pool: string;
  /** How long a request may wait for a slot, ms, behind those already waiting; default 0 (refused at once when all are busy). */
  readonly waitMs?: number;
  /** How long a fresh agent's request waits for the pool's first grant, ms; default 100. 0: never. */
  readonly graceMs?: number;
  /** The status when every slot is busy (default 503). Other refusals keep theirs. */
  readonly statusCode?: number;
  /** The body of that answer instead of the problem: a string (text/plain) or a JSON value. */
  readonly message?: DenialMessage;
  /** When no coordinator can grant: `fail-closed` (default, 503) or `allow` (let requests through without a slot). */
  readonly unavailable?: 'fail-closed' | 'allow';
  /** A request still running at the hold bound: `flag` (default: only `onOverrun` is told) or `abort` (its connection is destroyed). */
  readonly overrun?: 'flag' | 'abort';
  /** Told of a request still running at the hold bound, with the framework's request. */
  readonly onOverrun?: OverrunFunction<Req>;
  /** True for a request that holds no slot at all (a health check). Sync or async. */
  readonly skip?: SkipFunction<Req>;
}

/** Entry — a request admitted (holding slot `handle`; 0: none, skipped or let through) or refused. */
export type Entry = { readonly admitted: true; readonly handle: number } | { readonly admitted: false; readonly refusal: Refusal };

/** DestroyableResponse — a node response the middleware may destroy at the hold bound (`overrun: 'abort'`). */
export interface DestroyableResponse extends EndingResponse {
  /** destroy — closes the response's connection now, with `error` as the reason. */
  destroy(error?: Error): unknown;
}

/** concurrencyOptionsProblem — why `options` cannot make a concurrency limit, or null. */
export function concurrencyOptionsProblem(options: ConcurrencyLimitOptions<unknown>): string | null {
  if (typeof options !== 'object' || options === null) return 'options must be an object';
  if (typeof options.pool !== 'string' || options.pool.length === 0 || options.pool.length > POOL_NAME_LENGTH_MAX)
    return `option pool must be a pool name of 1 to ${POOL_NAME_LENGTH_MAX} characters`;
  for (const [name, value] of [
    ['waitMs', options.waitMs],
    ['graceMs', options.graceMs],
  ] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0 && value <= SLOT_WAIT_MS_MAX))
      return `option ${name} must be an integer in [0, ${SLOT_WAIT_MS_MAX}], got ${JSON.stringify(value)}`;
  }
  if (options.statusCode !== undefined) {
    const problem = statusCodeProblem(options.statusCode);
    if (problem !== null) return `option statusCode ${problem}, got ${JSON.stringify(options.statusCode)}`;
  }
  if (options.unavailable !== undefined && options.unavailable !== 'fail-closed' && options.unavailable !== 'allow')
    return `option unavailable must be "fail-closed" or "allow", got ${JSON.stringify(options.unavailable)}`;
  if (options.overrun !== undefined && options.overrun !== 'flag' && options.overrun !== 'abort')
    return `option overrun must be "flag" or "abort", got ${JSON.stringify(options.overrun)}`;
  for (const [name, value] of [
    ['onOverrun', options.onOverrun],
    ['skip', options.skip],
  ] as const) {
    if (value !== undefined && typeof value !== 'function') return `option ${name} must be a function`;
  }
  return null;
}

/**
 * ConcurrencyLimit — the engine under createConcurrencyLimit and
 * fastifyConcurrencyLimit: `enter` takes a slot (waiting when allowed) or
 * says why not; `watch` releases it as the response ends.
 */
export class ConcurrencyLimit<Req> {
  private readonly limiter: Limiter;
  private readonly waitMs: number;
  private readonly graceMs: number;
  private readonly failOpen: boolean;
  private readonly abort: boolean;

  /** ConcurrencyLimit — throws AgentError('invalid-argument') for bad options. */
  constructor(private readonly options: ConcurrencyLimitOptions<Req>) {
    const problem = concurrencyOptionsProblem(options);
    if (problem !== null) throw new AgentError('invalid-argument', problem);
    this.limiter = options.agent.limiter(options.pool);
    this.waitMs = options.waitMs ?? 0;
    this.graceMs = options.graceMs ?? GRACE_MS_DEFAULT;
    this.failOpen = options.unavailable === 'allow';
    this.abort = options.overrun === 'abort';
  }

  /** enter — takes a slot for `request`, waiting when allowed; never rejects (a limiter error becomes a refusal). */
  async enter(request: Req): Promise<Entry> {
    if (this.options.skip !== undefined && (await this.options.skip(request)) === true) return { admitted: true, handle: 0 };
    const limiter = this.limiter;
    let handle: number;
    try {
      handle = limiter.acquire();
      if (handle === 0) {
        const waitMs = limiter.heard ? this.waitMs : Math.max(this.waitMs, this.graceMs);
        if (waitMs > 0 && limiter.lastDenial !== 'unknown-pool') handle = await limiter.acquireWithin(waitMs);
      }
    } catch (error) {
      if (error instanceof AgentError && error.code === 'invalid-argument')
        return { admitted: false, refusal: notConcurrency(this.options.pool) };
      throw error;
    }
    if (handle !== 0) return { admitted: true, handle };
    const reason = limiter.lastDenial;
    const unavailable = limiter.unavailable && reason !== 'unknown-pool';
    if (unavailable && this.failOpen) return { admitted: true, handle: 0 };
    const refusal = slotDenial(this.options.pool, limiter.pool, reason, limiter.retryAfterMsFor(1), unavailable);
    return { admitted: false, refusal: customised(refusal, this.options.statusCode ?? null, this.options.message ?? null) };
  }

  /**
   * watch — releases `entry`'s slot once, as `response` ends (finished or
   * closed first); at the hold bound tells `onOverrun` and, with
   * `overrun: 'abort'`, destroys the response. Nothing for an entry
   * without a slot.
   */
  watch(entry: Entry, request: Req, response: DestroyableResponse): void {
    if (!entry.admitted || entry.handle === 0) return;
    const { handle } = entry;
    const onOverrun = this.options.onOverrun;
    let ended = false;
    let timer: NodeJS.Timeout | null = null;
    if (this.abort || onOverrun !== undefined) {
      const holdMs = Math.max(1, Math.floor(this.limiter.slot.holds.holdUs / US_PER_MS));
      timer = setTimeout(() => {
        if (ended) return;
        if (this.abort) response.destroy(new Error(`held its slot of pool ${this.options.pool} past the hold bound`));
        onOverrun?.(request);
      }, holdMs);
    }
    const end = (): void => {
      if (ended) return;
      ended = true;
      if (timer !== null) clearTimeout(timer);
      this.limiter.release(handle);
    };
    response.once('finish', end);
    response.once('close', end);
  }

  /** inFlight — this agent's requests of the pool holding a slot now, within their bound. */
  get inFlight(): number {
    return this.limiter.inFlight;
  }
}
