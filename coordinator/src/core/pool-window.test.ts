/**
 * Window pools (window-credit.ts) at fixed instants (µs): at most 100 per
 * window of 1 s, TTL 1 s, leases ≤ 20, started at 0 with a quiet period of
 * 1 s, so the 100 tokens cool until 2 s. A token goes back to the level at
 * once when returned unspent, and one window after the coordinator learns it
 * may have been spent: a report, a renewal, a return or an expiry.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseReturn } from '@tokenlease/shared';
import { parseCoordinatorConfig, type PoolConfig } from './config.js';
import { Pool, type Delivery } from './pool.js';
import { EPOCH, MS, S, SECRET, acquire, credit, grantOf, status, tick } from './pool.fixtures.js';
import type { PoolParts } from './pool-parts.js';
import { WindowCredit } from './window-credit.js';

const WINDOW_FIELDS = { window: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 20, minGrantTokens: 5, maxHoldMs: 200 };
/** When the first 100 tokens reach the level: the quiet second, then one window. */
const OPEN_AT = 2 * S;

function windowConfig(fields: Readonly<Record<string, unknown>> = {}): PoolConfig {
  const config = parseCoordinatorConfig('pool-window.test.yaml', { pools: { p: { ...WINDOW_FIELDS, ...fields } } });
  return config.pools[0] as PoolConfig;
}

const windowPool = (fields: Readonly<Record<string, unknown>> = {}): Pool<string> => new Pool<string>(windowConfig(fields), EPOCH, 0, 1000);

const coolingOf = (pool: Pool<string>): number => (pool.parts.credit as WindowCredit).coolingTokens;

function giveBack(pool: Pool<string>, nowUs: number, fields: Pick<LeaseReturn, 'agentId' | 'seq' | 'leaseId' | 'tokensLeft'>): void {
  const out: Delivery<string>[] = [];
  pool.giveBack({ v: 2, op: 'return', leaseSecret: SECRET, pool: 'p', ...fields }, 'receipt', nowUs, out);
  expect(out[0]?.reply.kind).toBe('receipt');
}

describe('a window pool', () => {
  it('grants nothing until its quiet period and one window have passed, then its whole limit', () => {
    const pool = windowPool();
    expect(grantOf(acquire(pool, OPEN_AT - 1, { agentId: 'a', seq: 1 })).tokensGranted).toBe(0);
    expect(credit(status(pool, OPEN_AT))).toEqual({ level: 100, leased: 0, leases: 1 });
    expect(coolingOf(pool)).toBe(0);
  });

  it('takes unspent tokens back at once and spent ones one window after the return', () => {
    const pool = windowPool();
    const g = grantOf(acquire(pool, OPEN_AT, { agentId: 'a', seq: 1 }));
    expect(g.tokensGranted).toBe(20);
    giveBack(pool, OPEN_AT + 100 * MS, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 5 });
    expect(credit(status(pool, OPEN_AT + 100 * MS))).toEqual({ level: 85, leased: 0, leases: 0 });
    expect(coolingOf(pool)).toBe(15);
    expect(status(pool, OPEN_AT + 1100 * MS - 1).levelTokens).toBe(85);
    expect(status(pool, OPEN_AT + 1100 * MS).levelTokens).toBe(100);
  });

  it('cools what a renewal reports spent from the renewal on, and tops the lease up from the level', () => {
    const pool = windowPool();
    const g = grantOf(acquire(pool, OPEN_AT, { agentId: 'a', seq: 1 }));
    const renewal = grantOf(acquire(pool, OPEN_AT + 300 * MS, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 8 }));
    expect(renewal).toMatchObject({ tokensGranted: 12, tokensHeld: 20 });
    expect(coolingOf(pool)).toBe(12);
    expect(status(pool, OPEN_AT + 1300 * MS - 1).levelTokens).toBe(68);
    expect(status(pool, OPEN_AT + 1300 * MS).levelTokens).toBe(80);
  });

  it('cools what a usage report lowers', () => {
    const pool = windowPool();
    const g = grantOf(acquire(pool, OPEN_AT, { agentId: 'a', seq: 1 }));
    pool.report(
      { v: 2, op: 'report', pool: 'p', agentId: 'a', leaseSecret: SECRET, seq: 2, leaseId: g.leaseId, tokensLeft: 4 },
      OPEN_AT + 10 * MS,
      [],
    );
    expect(coolingOf(pool)).toBe(16);
    expect(credit(status(pool, OPEN_AT + 10 * MS))).toEqual({ level: 80, leased: 4, leases: 1 });
  });

  it('cools a lapsed lease whole, one window from when it is reclaimed', () => {
    const pool = windowPool();
    grantOf(acquire(pool, OPEN_AT, { agentId: 'a', seq: 1 }));
    expect(tick(pool, OPEN_AT + 1 * S)).toEqual([]);
    expect(credit(status(pool, OPEN_AT + 1 * S))).toEqual({ level: 80, leased: 0, leases: 0 });
    expect(coolingOf(pool)).toBe(20);
    expect(status(pool, OPEN_AT + 2 * S).levelTokens).toBe(100);
  });

  it('holds a request until cooled tokens go back, and answers it then', () => {
    const pool = windowPool({ window: '20/s' });
    const first = grantOf(acquire(pool, OPEN_AT, { agentId: 'a', seq: 1 }));
    grantOf(acquire(pool, OPEN_AT + 50 * MS, { agentId: 'a', seq: 2, leaseId: first.leaseId, tokensLeft: 0, tokensWanted: 0 }));
    expect(acquire(pool, OPEN_AT + 60 * MS, { agentId: 'b', seq: 1, holdMs: 200 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(OPEN_AT + 60 * MS + 200 * MS);
    const short = grantOf(acquire(pool, OPEN_AT + 70 * MS, { agentId: 'c', seq: 1 }));
    expect(short.tokensGranted).toBe(0);
    // The 20 spent go back at 1.050 s after the window opened: that is what the retry hint names.
    expect(short.retryAfterMs).toBe(980);
  });

  it('keeps its cooling queue short however many drops come in a window', () => {
    const pool = windowPool({ window: '100/s', maxLeaseTokens: 1, minGrantTokens: 1 });
    let leaseId: string | undefined;
    for (let i = 0; i < 5000; i += 1) {
      const g = grantOf(
        acquire(pool, OPEN_AT + i * 100, { agentId: 'a', seq: i + 1, tokensLeft: 0, tokensWanted: 1, ...(leaseId ? { leaseId } : {}) }),
      );
      leaseId = g.leaseId;
    }
    const queue = (pool.parts.credit as unknown as { cooling: { atUs: number[] } }).cooling.atUs;
    expect(queue.length).toBeLessThanOrEqual(1100);
    expect(coolingOf(pool)).toBeGreaterThan(0);
  });
});

describe('a window pool taken over or changed', () => {
  it('adopts the stored level and leases, and cools the rest for one window from the takeover', () => {
    const t0 = 50 * S;
    const pool = Pool.takeOver<string>(windowConfig(), 4, t0, { levelTokens: 60, leases: [] });
    expect(credit(status(pool, t0))).toEqual({ level: 60, leased: 0, leases: 0 });
    expect(coolingOf(pool)).toBe(40);
    expect(status(pool, t0 + 1 * S).levelTokens).toBe(100);
  });

  it('starts full when the store has no record of it', () => {
    const pool = Pool.takeOver<string>(windowConfig(), 4, 50 * S, null);
    expect(status(pool, 50 * S).levelTokens).toBe(100);
  });

  it('keeps cooling at its own instants across a change of limit, and never hands out more than the new limit', () => {
    const pool = windowPool();
    const g = grantOf(acquire(pool, OPEN_AT, { agentId: 'a', seq: 1 }));
    giveBack(pool, OPEN_AT, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 0 });
    pool.reconfigure(windowConfig({ window: '50/s' }), OPEN_AT + 10 * MS, []);
    expect(status(pool, OPEN_AT + 10 * MS).levelTokens).toBe(30);
    expect(coolingOf(pool)).toBe(20);
    expect(status(pool, OPEN_AT + 1 * S).levelTokens).toBe(50);
    expect(pool.parts.credit.levelTokens + coolingOf(pool)).toBe(50);
  });

  it('cools a drop after a change to a shorter window no earlier than what cooled before it', () => {
    const pool = windowPool({ window: '100/10s' });
    // Quiet 1 s, then 10 s rounded up to the grain of 10 s / 1024.
    const openAt = 11_100 * MS;
    const g = grantOf(acquire(pool, openAt, { agentId: 'a', seq: 1 }));
    giveBack(pool, openAt, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 0 });
    pool.reconfigure(windowConfig({ window: '100/1s' }), openAt + 10 * MS, []);
    const h = grantOf(acquire(pool, openAt + 20 * MS, { agentId: 'b', seq: 1 }));
    giveBack(pool, openAt + 30 * MS, { agentId: 'b', seq: 2, leaseId: h.leaseId, tokensLeft: 0 });
    expect(coolingOf(pool)).toBe(40);
    // The second 20 would go back at 1.03 s under the new window, but wait for the first 20 (10 s).
    expect(status(pool, openAt + 2 * S).levelTokens).toBe(60);
    expect(status(pool, openAt + 10 * S + 10 * MS).levelTokens).toBe(100);
  });

  it('counts a bucket pool lease on when it becomes a window pool, and cools what it spent', () => {
    const bucket = parseCoordinatorConfig('b.yaml', { pools: { p: { capacity: 100, refill: '100/s', leaseTtlMs: 1000 } } })
      .pools[0] as PoolConfig;
    const pool = new Pool<string>(bucket, EPOCH, 0, 1000);
    const g = grantOf(acquire(pool, OPEN_AT, { agentId: 'a', seq: 1 }));
    expect(g.tokensGranted).toBe(10);
    pool.reconfigure(windowConfig(), OPEN_AT, []);
    const p: PoolParts<string> = pool.parts;
    expect(p.credit).toBeInstanceOf(WindowCredit);
    expect(credit(status(pool, OPEN_AT))).toEqual({ level: 90, leased: 10, leases: 1 });
    giveBack(pool, OPEN_AT + 1, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 4 });
    expect(status(pool, OPEN_AT + 1).levelTokens).toBe(94);
    expect(coolingOf(pool)).toBe(6);
  });
});
