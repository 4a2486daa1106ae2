/**
 * CoordinatorCore: the coordinator as a pure state machine.
 *
 * Events in: `receive(subject, payload, replyTo, nowUs)` for each request
 * and `tick(nowUs)` at or after `nextDeadlineUs()`. Effects out: a list of
 * deliveries (reply + opaque target). It reads no clock and does no I/O, so
 * the same code runs under the NATS adapter and under the simulator.
 *
 * Rules:
 * - Every request gets exactly one reply, now or (when held) later.
 * - Bad input (unparseable, oversized, out of range, subject and payload
 *   disagreeing, unknown pool) gets a typed error reply with `fault: 'peer'`
 *   and changes nothing.
 * - `nowUs` is an integer count of microseconds of a monotonic clock.
 * - Durable mode: the core holds only the pools it was given (`adopt`),
 *   each with the epoch of its ownership, and forgets those it lost
 *   (`release`); which pools those are is the adapter's to learn.
 */
import {
  assertTimeUs,
  decodeRequest,
  parseSubject,
  type ErrorCode,
  type Reply,
  type Request,
} from '@tokenlease/shared';
import type { CoordinatorConfig } from './config.js';
import type { Delivery, Pool } from './pool.js';
import { PoolRegistry, type PoolKind } from './pool-registry.js';
import type { PersistedPool } from './pool-state.js';

export class CoordinatorCore<R> {
  private readonly pools: PoolRegistry<R>;
  /** The pool the last `receive` reached, so the adapter can reschedule without scanning every pool. */
  private touched: Pool<R> | null = null;
  private evicted: string[] = [];

  /**
   * CoordinatorCore — pools of `config`, all empty, refilling from the end
   * of the quiet period that starts at `startUs`. `epoch` names this
   * incarnation in lease ids and replies. `durable`: start with no pool
   * and serve only those adopted.
   */
  constructor(
    readonly config: CoordinatorConfig,
    readonly epoch: number,
    startUs: number,
    private readonly durable = false,
  ) {
    assertTimeUs(startUs, 'startUs');
    this.pools = new PoolRegistry<R>(config, epoch, startUs, durable);
  }

  /** kindOf — whether `pool` names a configured pool, a template's pool, or neither. */
  kindOf(pool: string): PoolKind {
    return this.pools.kindOf(pool);
  }

  /**
   * adopt — (durable mode) takes the pool `name` over at `nowUs` under
   * `epoch`, with the store's `state` (null: no record, so it starts full).
   */
  adopt(name: string, epoch: number, nowUs: number, state: PersistedPool | null): 'adopted' | 'too-many' | 'unknown' {
    assertTimeUs(nowUs);
    const pool = this.pools.adopt(name, epoch, nowUs, state);
    return pool === undefined ? 'unknown' : pool === 'too-many' ? 'too-many' : 'adopted';
  }

  /** release — forgets the pool `name` (another coordinator owns it now); its held requests are told `not-owner`. */
  release(name: string): Delivery<R>[] {
    const pool = this.pools.release(name);
    if (this.touched === pool) this.touched = null;
    const message = `pool ${JSON.stringify(name)} is changing owner; ask again`;
    return (pool?.releaseWaiters() ?? []).map(({ seq, to }) => notOwner(to, seq, message));
  }

  /** takeEvicted — (durable mode) names of template pools forgotten by ticks since the last call. */
  takeEvicted(): string[] {
    const names = this.evicted;
    this.evicted = [];
    return names;
  }

  /** receive — handles one request's bytes; returns the replies it causes (possibly none while held). */
  receive(subject: string, payload: Uint8Array, replyTo: R, nowUs: number): Delivery<R>[] {
    assertTimeUs(nowUs);
    const out: Delivery<R>[] = [];
    const parts = parseSubject(this.config.subjectPrefix, subject);
    if (parts === null) {
      out.push(refusal(replyTo, 'bad-request', null, `subject ${JSON.stringify(subject.slice(0, 200))} is not a v1 request subject`));
      return out;
    }
    const decoded = decodeRequest(payload);
    if (!decoded.ok) {
      out.push(refusal(replyTo, decoded.code, decoded.seq, decoded.message));
      return out;
    }
    const req = decoded.value;
    const seq = 'seq' in req ? req.seq : null;
    if (req.op !== parts.op || req.pool !== parts.pool) {
      out.push(refusal(replyTo, 'bad-request', seq, `payload (${req.op} on ${req.pool}) does not match subject (${parts.op} on ${parts.pool})`));
      return out;
    }
    // A status query never makes a pool from a template; it reports an absent one as unknown.
    const pool = req.op === 'status' ? this.pools.existing(req.pool) : this.pools.get(req.pool, nowUs);
    if (pool === undefined) {
      const why = req.op === 'status' ? 'is not configured, and no template pool of that name is in use' : 'is not configured and matches no template';
      out.push(refusal(replyTo, 'unknown-pool', seq, `pool ${JSON.stringify(req.pool)} ${why}`));
      return out;
    }
    if (pool === 'too-many') {
      out.push({ to: replyTo, reply: { v: 1, kind: 'error', seq, code: 'unavailable', fault: 'peer', message: `pool ${JSON.stringify(req.pool)}: its template has as many pools as it may hold`, retryAfterMs: 1000 } });
      return out;
    }
    this.touched = pool;
    this.dispatch(pool, req, replyTo, nowUs, out);
    return out;
  }

  /** tick — refills, reclaims expired leases and answers held requests whose time has come. */
  tick(nowUs: number): Delivery<R>[] {
    assertTimeUs(nowUs);
    const out: Delivery<R>[] = [];
    this.tickEach(nowUs, (_pool, replies) => out.push(...replies));
    return out;
  }

  /** tickEach — `tick`, handing each pool's replies to `visit` with its name (for an adapter that writes per pool). */
  tickEach(nowUs: number, visit: (pool: string, out: Delivery<R>[]) => void): void {
    assertTimeUs(nowUs);
    for (const pool of this.pools.all()) {
      const out: Delivery<R>[] = [];
      pool.tick(nowUs, out);
      if (out.length > 0) visit(pool.config.name, out);
    }
    const evicted = this.pools.evictIdle(nowUs);
    // Only a durable adapter collects them (to delete their records); memory mode just forgets.
    if (this.durable) this.evicted.push(...evicted);
  }

  /**
   * nextDeadlineUs — the earliest instant `tick` has work, or Infinity. It
   * looks at every pool; after a `receive`, `touchedDeadlineUs` is the cheap
   * answer for the one pool that changed. Idle template pools are evicted
   * on ticks without a deadline of their own (late eviction costs nothing).
   */
  nextDeadlineUs(): number {
    let deadline = Infinity;
    for (const pool of this.pools.all()) deadline = Math.min(deadline, pool.nextDeadlineUs());
    return deadline;
  }

  /** touchedDeadlineUs — the next deadline of the pool the last `receive` reached (Infinity if none). */
  touchedDeadlineUs(): number {
    return this.touched?.nextDeadlineUs() ?? Infinity;
  }

  /** flush — answers every held request now (for shutdown). */
  flush(nowUs: number): Delivery<R>[] {
    assertTimeUs(nowUs);
    const out: Delivery<R>[] = [];
    this.flushEach(nowUs, (_pool, replies) => out.push(...replies));
    return out;
  }

  /** flushEach — `flush`, handing each pool's replies to `visit` with its name. */
  flushEach(nowUs: number, visit: (pool: string, out: Delivery<R>[]) => void): void {
    assertTimeUs(nowUs);
    for (const pool of this.pools.all()) {
      const out: Delivery<R>[] = [];
      pool.flush(nowUs, out);
      if (out.length > 0) visit(pool.config.name, out);
    }
  }

  /** pool — the named pool if it is held now, for inspection; never makes one. */
  pool(name: string): Pool<R> | undefined {
    return this.pools.existing(name);
  }

  /** poolCount — pools held now, configured and made from templates. */
  get poolCount(): number {
    return this.pools.size;
  }

  private dispatch(pool: Pool<R>, req: Request, replyTo: R, nowUs: number, out: Delivery<R>[]): void {
    switch (req.op) {
      case 'acquire':
        pool.acquire(req, replyTo, nowUs, out);
        return;
      case 'return':
        pool.giveBack(req, replyTo, nowUs, out);
        return;
      case 'report':
        pool.report(req, nowUs, out);
        return;
      case 'status':
        out.push({ to: replyTo, reply: pool.status(nowUs, out, req.agentId) });
        return;
    }
  }
}

/** notOwner — the reply to a request that reached a coordinator not (or no longer) owning its pool. */
export function notOwner<R>(to: R, seq: number | null, message: string, retryAfterMs = 50): Delivery<R> {
  return { to, reply: { v: 1, kind: 'error', seq, code: 'not-owner', fault: 'coordinator', message, retryAfterMs } };
}

function refusal<R>(to: R, code: ErrorCode, seq: number | null, message: string): Delivery<R> {
  const reply: Reply = { v: 1, kind: 'error', seq, code, fault: 'peer', message, retryAfterMs: 0 };
  return { to, reply };
}
