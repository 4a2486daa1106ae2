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
import { PoolRegistry } from './pool-registry.js';

export class CoordinatorCore<R> {
  private readonly pools: PoolRegistry<R>;
  /** The pool the last `receive` reached, so the adapter can reschedule without scanning every pool. */
  private touched: Pool<R> | null = null;

  /**
   * CoordinatorCore — pools of `config`, all empty, refilling from the end
   * of the quiet period that starts at `startUs`. `epoch` names this
   * incarnation in lease ids and replies.
   */
  constructor(
    readonly config: CoordinatorConfig,
    readonly epoch: number,
    startUs: number,
  ) {
    assertTimeUs(startUs, 'startUs');
    this.pools = new PoolRegistry<R>(config, epoch, startUs);
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
    for (const pool of this.pools.all()) pool.tick(nowUs, out);
    this.pools.evictIdle(nowUs);
    return out;
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
    for (const pool of this.pools.all()) pool.flush(nowUs, out);
    return out;
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
      case 'status':
        out.push({ to: replyTo, reply: pool.status(nowUs, out, req.agentId) });
        return;
    }
  }
}

function refusal<R>(to: R, code: ErrorCode, seq: number | null, message: string): Delivery<R> {
  const reply: Reply = { v: 1, kind: 'error', seq, code, fault: 'peer', message, retryAfterMs: 0 };
  return { to, reply };
}
