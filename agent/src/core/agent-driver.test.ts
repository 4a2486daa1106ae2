/**
 * AgentDriver examples at fixed instants: what the loop sends and where,
 * when each pool ticks next, failover, news, idle drops and revival, and
 * a close that settles.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, type LeaseRequest, type Reply } from '@tokenlease/shared';
import { AgentDriver, KEEPER_TICK_MS_MAX, type AgentCommand, type AgentPool, type PoolWaiters } from './agent-driver.js';
import { keeperOptions } from './keeper-options.js';
import { BASE, grantFor, TEST_SECRET, testIdSuffix } from './lease-keeper.fixtures.js';

/** Waiters that count how often they were served and cancelled; `waiting` as set. */
class CountingWaiters implements PoolWaiters {
  served = 0;
  cancelled = 0;
  waiting = false;
  serveWaiters(): void {
    this.served += 1;
  }
  cancelWaiters(): void {
    this.cancelled += 1;
  }
}

type Command = AgentCommand<CountingWaiters>;
type Send = Extract<Command, { type: 'send' }>;

const T0 = 1_000_000_000;
const IDLE_MS = 5000;

function driverWith(prefixes: readonly string[] = ['tl']): AgentDriver<CountingWaiters> {
  return new AgentDriver<CountingWaiters>({
    agentId: 'agent-1',
    identity: 'svc',
    prefixes,
    keeper: keeperOptions(BASE),
    limiterIdleMs: IDLE_MS,
    secret: TEST_SECRET,
    random: () => 0.5,
    idSuffix: testIdSuffix(),
  });
}

function opened(driver: AgentDriver<CountingWaiters>, name = 'pool-a'): { pool: AgentPool<CountingWaiters>; out: readonly Command[] } {
  const pool = driver.open(name, {}, () => new CountingWaiters());
  return { pool, out: driver.start(pool, T0) };
}

function sends(out: readonly Command[]): Send[] {
  return out.filter((c): c is Send => c.type === 'send');
}

function onlySend(out: readonly Command[]): Send {
  const all = sends(out);
  expect(all).toHaveLength(1);
  return all[0] as Send;
}

function acquireOf(send: Send): LeaseRequest {
  if (send.message.op !== 'acquire') throw new Error(`expected an acquire, got ${send.message.op}`);
  return send.message;
}

function wakeOf(out: readonly Command[]): Extract<Command, { type: 'wake-at' }> {
  const wakes = out.filter((c) => c.type === 'wake-at');
  expect(wakes).toHaveLength(1);
  return wakes[0] as Extract<Command, { type: 'wake-at' }>;
}

function events(out: readonly Command[]): unknown[] {
  return out.flatMap((c) => (c.type === 'event' ? [c.event] : []));
}

/** granted — the driver with pool-a holding a grant of what its first acquire asked for, at T0 + 2 ms. */
function granted(driver = driverWith()): {
  driver: AgentDriver<CountingWaiters>;
  pool: AgentPool<CountingWaiters>;
  out: readonly Command[];
} {
  const { pool, out } = opened(driver);
  const send = onlySend(out);
  return { driver, pool, out: driver.answered(pool, send.seq, grantFor(acquireOf(send)), T0 + 2000) };
}

describe('AgentDriver', () => {
  it('starts a pool: the sweep, an acquire on its subject under the identity, with the keeper timeout, and a tick', () => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    expect(out[0]).toEqual({ type: 'sweep-every', periodMs: IDLE_MS / 2 });
    const send = onlySend(out);
    expect(send.subject).toBe('tl.v2.acquire.pool-a.svc');
    expect(send.timeoutMs).toBe(200 + 1000);
    expect(acquireOf(send).tokensWanted).toBe(5);
    expect(pool.waiters.served).toBe(1);
    expect(driver.size).toBe(1);
    // A second pool finds the sweep running.
    expect(opened(driver, 'pool-b').out.filter((c) => c.type === 'sweep-every')).toEqual([]);
  });

  it.each([
    ['waiting for a reply (retry not due): no deadline, but the 100 ms tick samples demand', 0, KEEPER_TICK_MS_MAX],
    ['holding a lease: at most 100 ms to the next tick', 2000, KEEPER_TICK_MS_MAX],
  ])('sets the next tick %s', (_, atDeltaUs, delayMs) => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    const at = atDeltaUs === 0 ? out : driver.answered(pool, onlySend(out).seq, grantFor(acquireOf(onlySend(out))), T0 + atDeltaUs);
    const wake = wakeOf(at);
    expect(wake.delayMs).toBe(delayMs);
    expect(wake.atUs).toBe(T0 + atDeltaUs + delayMs * 1000);
  });

  it('ticks a backed-off keeper at its retry, rounded up to whole ms', () => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    // Back-off ceiling 10 ms, drawn at 0.5 → 0.75 of it: 7.5 ms, rounded up to 8.
    const wake = wakeOf(driver.failed(pool, onlySend(out).seq, 'bus-timeout', 'late', T0 + 1_200_000));
    expect(wake.delayMs).toBe(8);
  });

  it('moves a pool to the next prefix after two requests nobody answered, says so once, and sends there', () => {
    const driver = driverWith(['relay', 'root']);
    const { pool, out } = opened(driver);
    const first = onlySend(out);
    const once = driver.failed(pool, first.seq, 'bus-no-responders', 'nobody', T0 + 100);
    expect(events(once)).toEqual([{ type: 'request-failed', pool: 'pool-a', code: 'bus-no-responders', message: 'nobody' }]);
    const retry = onlySend(driver.tick(pool, wakeOf(once).atUs));
    expect(retry.subject).toBe('relay.v2.acquire.pool-a.svc');
    const twice = driver.failed(pool, retry.seq, 'bus-no-responders', 'nobody', wakeOf(once).atUs + 100);
    expect(events(twice)).toContainEqual({ type: 'coordinator-moved', pool: 'pool-a', prefix: 'root' });
    expect(onlySend(driver.tick(pool, wakeOf(twice).atUs)).subject).toBe('root.v2.acquire.pool-a.svc');
  });

  it('does not move on a timeout answered by a reply in between, nor with one prefix', () => {
    const driver = driverWith(['relay', 'root']);
    const { pool, out } = opened(driver);
    const first = onlySend(out);
    const after = driver.failed(pool, first.seq, 'bus-timeout', 'late', T0 + 100);
    const retry = onlySend(driver.tick(pool, wakeOf(after).atUs));
    const refusal: Reply = {
      v: 2,
      kind: 'error',
      seq: retry.seq,
      code: 'unavailable',
      message: 'no owner',
      retryAfterMs: 0,
      fault: 'coordinator',
    };
    const refused = driver.answered(pool, retry.seq, refusal, wakeOf(after).atUs + 100);
    expect(events(refused)).toEqual([{ type: 'error-reply', pool: 'pool-a', code: 'unavailable', message: 'no owner' }]);
    expect(pool.route.prefix).toBe('relay');
    const lone = driverWith();
    const alone = opened(lone);
    const moved = lone.failed(alone.pool, onlySend(alone.out).seq, 'bus-no-responders', 'x', T0 + 1);
    expect(events(moved).filter((e) => (e as { type: string }).type === 'coordinator-moved')).toEqual([]);
  });

  it('counts bytes that are no reply as a failed request', () => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    const failed = driver.replied(pool, onlySend(out).seq, new TextEncoder().encode('{"v":2,"kind":"nonsense"}'), T0 + 100);
    expect(events(failed)).toEqual([expect.objectContaining({ type: 'request-failed', pool: 'pool-a' })]);
    expect(pool.keeper.stats.failures).toBe(1);
  });

  it('takes a reply in bytes as it takes the decoded one', () => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    const send = onlySend(out);
    driver.replied(pool, send.seq, encodeMessage(grantFor(acquireOf(send))), T0 + 2000);
    expect(pool.keeper.slot.balanceTokens).toBe(5);
  });

  it('tells of an unknown pool once, then holds no timer for the idle keeper and re-arms its low signal', () => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    const send = onlySend(out);
    const unknown: Reply = {
      v: 2,
      kind: 'error',
      seq: send.seq,
      code: 'unknown-pool',
      message: 'no such pool',
      retryAfterMs: 0,
      fault: 'peer',
    };
    const after = driver.answered(pool, send.seq, unknown, T0 + 100);
    expect(events(after).map((e) => (e as { type: string }).type)).toEqual(['error-reply', 'unknown-pool']);
    // A tick once the refusal's back-off is over finds nothing to do and nothing due.
    pool.keeper.slot.lowSignalled = true;
    const idle = driver.tick(pool, wakeOf(after).atUs);
    expect(idle).toEqual([{ type: 'wake-at', pool, atUs: Infinity, delayMs: Infinity }]);
    expect(pool.keeper.slot.lowSignalled).toBe(false);
  });

  it('wakes a pool soon on its low signal, and not at all once stopped', () => {
    const { driver, pool } = granted();
    expect(driver.wake(pool)).toEqual([{ type: 'wake-soon', pool }]);
    driver.stop();
    expect(driver.wake(pool)).toEqual([]);
    expect(driver.tick(pool, T0 + 10_000_000)).toEqual([]);
  });

  it('on release returns the lease now and drops the pool once the return is answered and nothing waits', () => {
    const { driver, pool } = granted();
    const out = driver.release(pool, T0 + 3000);
    const ret = onlySend(out);
    expect(ret.message.op).toBe('return');
    expect(ret.subject).toBe('tl.v2.return.pool-a.svc');
    expect(out.some((c) => c.type === 'drop')).toBe(false);
    const receipt: Reply = { v: 2, kind: 'receipt', seq: ret.seq, tokensReturned: 5 };
    pool.waiters.waiting = true;
    expect(driver.answered(pool, ret.seq, receipt, T0 + 4000).some((c) => c.type === 'drop')).toBe(false);
    pool.waiters.waiting = false;
    expect(driver.tick(pool, T0 + 5000)).toContainEqual({ type: 'drop', pool });
    expect(driver.size).toBe(0);
    // Revived on use; the sweep still runs (it stops once a sweep finds no pool).
    expect(driver.revive(pool)).toEqual([]);
    expect(driver.get('pool-a')).toBe(pool);
  });

  it('sweeps out a pool idle for limiterIdleMs, then stops sweeping', () => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    const send = onlySend(out);
    const unknown: Reply = { v: 2, kind: 'error', seq: send.seq, code: 'unknown-pool', message: 'none', retryAfterMs: 0, fault: 'peer' };
    driver.answered(pool, send.seq, unknown, T0 + 100);
    const lastActiveUs = pool.keeper.lastActiveUs;
    expect(driver.sweep(lastActiveUs + IDLE_MS * 1000 - 1)).toEqual([]);
    expect(driver.sweep(lastActiveUs + IDLE_MS * 1000)).toEqual([
      { type: 'drop', pool },
      { type: 'sweep-every', periodMs: null },
    ]);
  });

  it('keeps a pool denied since it last acted out of the sweep, and takes back a dropped pool its own wake ticks', () => {
    const driver = driverWith();
    const { pool, out } = opened(driver);
    const send = onlySend(out);
    const unknown: Reply = { v: 2, kind: 'error', seq: send.seq, code: 'unknown-pool', message: 'none', retryAfterMs: 0, fault: 'peer' };
    driver.answered(pool, send.seq, unknown, T0 + 100);
    const lateUs = pool.keeper.lastActiveUs + IDLE_MS * 1000;
    // A denial signals low; its wake is still to come: not idle.
    expect(pool.keeper.slot.takeAt(1, lateUs)).toBe(false);
    expect(driver.sweep(lateUs)).toEqual([]);
    pool.keeper.slot.lowSignalled = false;
    expect(driver.sweep(lateUs)).toContainEqual({ type: 'drop', pool });
    // A wake asked before the drop rings after it: the pool runs again, and ticks.
    driver.tick(pool, lateUs + 1000);
    expect(driver.get('pool-a')).toBe(pool);
  });

  it('on close ends the waiting calls, returns the lease, refuses revival, and settles once the return is answered', () => {
    const { driver, pool } = granted();
    const out = driver.close(T0 + 3000);
    expect(pool.waiters.cancelled).toBe(1);
    const ret = onlySend(out);
    expect(ret.message.op).toBe('return');
    expect(out.some((c) => c.type === 'settled')).toBe(false);
    expect(driver.revive(pool)).toBeNull();
    const settled = driver.answered(pool, ret.seq, { v: 2, kind: 'receipt', seq: ret.seq, tokensReturned: 5 }, T0 + 4000);
    expect(settled.filter((c) => c.type === 'settled' || c.type === 'wake-at')).toEqual([
      { type: 'wake-at', pool, atUs: Infinity, delayMs: Infinity },
      { type: 'settled' },
    ]);
    expect(driver.close(T0 + 5000)).toEqual([]);
  });

  it('settles a close at once when nothing is held, and stops every timer on stop', () => {
    const driver = driverWith();
    expect(driver.close(T0)).toEqual([{ type: 'settled' }]);
    const { driver: holding, pool } = granted();
    holding.close(T0 + 3000);
    expect(holding.stop()).toEqual([
      { type: 'sweep-every', periodMs: null },
      { type: 'wake-at', pool, atUs: Infinity, delayMs: Infinity },
    ]);
  });
});
