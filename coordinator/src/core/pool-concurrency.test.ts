/**
 * Concurrency pools (docs/design.md, "Concurrency pools"): the
 * configuration they take and refuse, grants that name the hold bound, and
 * slots that come back to the level only when no request started under
 * them can still run: idle ones returned at once, busy ones and those of a
 * lease that ended by expiry one hold bound later; after a start, all of
 * them one quiet period plus one hold bound later.
 */
import { describe, expect, it } from 'vitest';
import { CoordinatorError } from '../errors.js';
import { parseCoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { encodeMessage, subjectFor } from '@tokenlease/shared';
import { formatPools } from './operator-view.js';
import { summarize } from './pool-list.js';
import { acquireOf, grantOf, MS, SECRET, status, tick } from './pool.fixtures.js';
import { statusView } from './status-view.js';
import { Pool, type Delivery } from './pool.js';

const POOL = { concurrency: { limit: 10, maxHoldMs: 500 }, leaseTtlMs: 1000, maxLeaseTokens: 10 };

function configWith(fields: Record<string, unknown>) {
  return parseCoordinatorConfig('concurrency.yaml', { quietPeriodMs: 1000, pools: { p: fields } });
}

/** A concurrency pool of 10 slots held at most 500 ms, started at 0: quiet for 1 s, its slots back 500 ms after. */
function slotPool(): Pool<string> {
  const pool = configWith(POOL).pools[0];
  if (pool === undefined) throw new Error('no pool');
  return new Pool<string>(pool, 1, 0, 1000);
}

function acquire(pool: Pool<string>, nowUs: number, fields: Parameters<typeof acquireOf>[0]): Delivery<string>[] {
  const out: Delivery<string>[] = [];
  pool.acquire(acquireOf(fields), fields.agentId, nowUs, out, fields.agentId);
  return out;
}

describe('a concurrency pool', () => {
  it('is configured by limit and hold bound, and grants name the bound', () => {
    const pool = configWith(POOL).pools[0]!;
    expect(pool.concurrency).toEqual({ limit: 10, maxHoldMs: 500 });
    expect(pool.capacity).toBe(10);
    const p = slotPool();
    const g = grantOf(acquire(p, 1_500 * MS, { agentId: 'a', seq: 1, tokensWanted: 6 }));
    expect(g).toMatchObject({ tokensGranted: 6, tokensHeld: 6, capacityTokens: 10, holdMs: 500 });
    expect(g.window).toBeUndefined();
  });

  it.each([
    [{ ...POOL, capacity: 10 }, /field "capacity" does not apply to a concurrency pool/],
    [{ ...POOL, refill: '10/s' }, /field "refill" does not apply to a concurrency pool/],
    [{ ...POOL, window: '10/s' }, /field "window" does not apply to a concurrency pool/],
    [{ ...POOL, leaseMode: 'rate' }, /field "leaseMode" must be "chunk" for a concurrency pool/],
    [{ ...POOL, allowance: 2 }, /field "allowance" must be 0 for a concurrency pool/],
    [{ ...POOL, relayClasses: { edge: 4 } }, /field "relayClasses" are not for a concurrency pool/],
    [{ ...POOL, concurrency: { limit: 0, maxHoldMs: 500 } }, /field "concurrency.limit" must be an integer in \[1, 1000000\], got 0/],
    [{ ...POOL, concurrency: { limit: 10 } }, /field "concurrency.maxHoldMs" is required/],
    [{ ...POOL, concurrency: { limit: 10, maxHoldMs: 500, holdMs: 1 } }, /field "concurrency.holdMs" is not a known field/],
    [{ ...POOL, concurrency: 10 }, /field "concurrency" must be a mapping \{ limit, maxHoldMs \}/],
  ])('refuses %j with one line saying why', (fields, message) => {
    expect(() => configWith(fields)).toThrow(CoordinatorError);
    expect(() => configWith(fields)).toThrow(message);
  });

  it('holds every slot back after a start until the quiet period and one hold bound are over', () => {
    const p = slotPool();
    expect(status(p, 1_499 * MS).levelTokens).toBe(0);
    expect(status(p, 1_500 * MS).levelTokens).toBe(10);
  });

  it('hands the slots of an expired lease out again one hold bound after its expiry, not before', () => {
    const p = slotPool();
    const g = grantOf(acquire(p, 1_500 * MS, { agentId: 'a', seq: 1, tokensWanted: 6 }));
    // A renewal that keeps all 6 (busy and free) and asks for the rest.
    const renewed = grantOf(acquire(p, 1_600 * MS, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 6, tokensWanted: 4 }));
    expect(renewed.tokensHeld).toBe(10);
    expect(status(p, 2_599 * MS)).toMatchObject({ levelTokens: 0, leasedTokens: 10 });
    // Expired at 2.6 s: no longer leased, and not free either while a request started under it may run.
    expect(status(p, 2_600 * MS)).toMatchObject({ levelTokens: 0, leasedTokens: 0, leases: 0 });
    expect(status(p, 3_099 * MS).levelTokens).toBe(0);
    expect(status(p, 3_100 * MS).levelTokens).toBe(10);
  });

  it('takes idle slots back at once on a return, and its busy ones one hold bound later', () => {
    const p = slotPool();
    const g = grantOf(acquire(p, 1_500 * MS, { agentId: 'a', seq: 1, tokensWanted: 6 }));
    const out: Delivery<string>[] = [];
    p.giveBack(
      { v: 2, op: 'return', agentId: 'a', pool: 'p', leaseSecret: SECRET, seq: 2, leaseId: g.leaseId, tokensLeft: 2 },
      'a',
      1_700 * MS,
      out,
    );
    expect(out[0]?.reply).toMatchObject({ kind: 'receipt', tokensReturned: 2 });
    expect(status(p, 1_700 * MS).levelTokens).toBe(6);
    expect(status(p, 2_199 * MS).levelTokens).toBe(6);
    expect(status(p, 2_200 * MS).levelTokens).toBe(10);
  });

  it('tells a lease cut short by its share to ask again in a quarter TTL (or when contention ends), not in a millisecond', () => {
    const p = slotPool();
    const g = grantOf(acquire(p, 1_500 * MS, { agentId: 'a', seq: 1, tokensWanted: 10 }));
    expect(g.tokensHeld).toBe(10);
    // b waits for slots until 1.7 s and gets none: the pool counts as contended until 2.6 s.
    expect(acquire(p, 1_600 * MS, { agentId: 'b', seq: 1, tokensWanted: 5, holdMs: 100 })).toEqual([]);
    expect(grantOf(tick(p, 1_700 * MS)).tokensGranted).toBe(0);
    // a tells 5 of its slots free and asks for 5 more: the 5 free are in the level, but a is at its share (10 / 2).
    const renewed = grantOf(acquire(p, 1_750 * MS, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 5, tokensWanted: 5 }));
    expect(renewed).toMatchObject({ tokensGranted: 0, tokensHeld: 5, retryAfterMs: 250 });
    expect(status(p, 1_750 * MS).levelTokens).toBe(5);
    // b, below its share, gets them.
    expect(grantOf(acquire(p, 1_800 * MS, { agentId: 'b', seq: 2, tokensWanted: 5 })).tokensGranted).toBe(5);
  });

  it('never grants more slots than the limit, whoever asks', () => {
    const p = slotPool();
    let held = 0;
    for (let i = 0; i < 5; i += 1) held += grantOf(acquire(p, 1_500 * MS, { agentId: `a${i}`, seq: 1, tokensWanted: 4 })).tokensGranted;
    expect(held).toBe(10);
    expect(status(p, 1_500 * MS)).toMatchObject({ levelTokens: 0, leasedTokens: 10 });
  });

  it('refuses a reload that changes a pool to or from slots, or shortens its hold bound', () => {
    const core = new CoordinatorCore<string>(configWith(POOL), 1, 0);
    expect(core.reconfigureProblem(configWith({ ...POOL, concurrency: { limit: 20, maxHoldMs: 800 } }))).toBeNull();
    expect(core.reconfigureProblem(configWith({ ...POOL, concurrency: { limit: 10, maxHoldMs: 499 } }))).toMatch(
      /concurrency.maxHoldMs cannot shrink while it serves \(from 500 to 499 ms\)/,
    );
    expect(core.reconfigureProblem(configWith({ capacity: 10, refill: '10/s', leaseTtlMs: 1000 }))).toMatch(
      /cannot change to or from a concurrency pool/,
    );
  });

  it('is made on first use by a template, and operators see its slots: leased, free, held back', () => {
    const config = parseCoordinatorConfig('concurrency.yaml', {
      quietPeriodMs: 1000,
      pools: { p: POOL },
      templates: { 'db:*': { ...POOL, concurrency: { limit: 6, maxHoldMs: 300 }, maxLeaseTokens: 6 } },
    });
    const core = new CoordinatorCore<string>(config, 1, 0);
    const ask = (pool: string, agentId: string, nowUs: number): Delivery<string>[] =>
      core.receive(
        subjectFor('tokenlease', 'acquire', pool),
        encodeMessage({ ...acquireOf({ agentId, seq: 1, tokensWanted: 4 }), pool }),
        agentId,
        nowUs,
      );
    expect(grantOf(ask('db:tenant-1', 'a', 1_300 * MS))).toMatchObject({ tokensGranted: 4, capacityTokens: 6, holdMs: 300 });
    grantOf(ask('p', 'b', 1_500 * MS));
    const view = statusView(core.held(), 1_500 * MS);
    expect(view.pools.find((v) => v.name === 'db:tenant-1')).toMatchObject({
      holdMs: 300,
      windowMs: null,
      levelTokens: 2,
      leasedTokens: 4,
    });
    const held = [...core.held()];
    const rows = held.map((h) => ({ ...summarize(h, 1_500 * MS), coordinator: 'c1' }));
    expect(rows.find((r) => r.pool === 'p')).toMatchObject({ holdMs: 500, coolingTokens: 0, leasedTokens: 4, levelTokens: 6 });
    expect(rows.every((r) => r.windowMs === undefined)).toBe(true);
    expect(formatPools(rows)).toMatch(/slots, hold 300ms +0/);
  });

  it('takes back at once what a renewal of the named lease tells below its bound, and cools what a lapsed one held', () => {
    const p = slotPool();
    const g = grantOf(acquire(p, 1_500 * MS, { agentId: 'a', seq: 1, tokensWanted: 6 }));
    expect(status(p, 1_500 * MS).levelTokens).toBe(4);
    // Named, with 2 of its 6 slots still free or busy: the other 4 were free when it asked, and are at once.
    grantOf(acquire(p, 1_600 * MS, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 2, tokensWanted: 0 }));
    expect(status(p, 1_600 * MS)).toMatchObject({ levelTokens: 8, leasedTokens: 2 });
    // Not named (its agent let it lapse): its 2 may still be busy, so they wait out the hold bound.
    grantOf(acquire(p, 1_700 * MS, { agentId: 'a', seq: 3, leaseId: null, tokensLeft: 0, tokensWanted: 0 }));
    expect(status(p, 1_700 * MS)).toMatchObject({ levelTokens: 8, leasedTokens: 0 });
    expect(status(p, 2_199 * MS).levelTokens).toBe(8);
    expect(status(p, 2_200 * MS).levelTokens).toBe(10);
  });

  it('tells a lease above its share while others wait the most slots it may keep, renewed, and serves the waiting with what it gives back', () => {
    const p = slotPool();
    const g = grantOf(acquire(p, 1_500 * MS, { agentId: 'a', seq: 1, tokensWanted: 10 }));
    expect(g.tokensHeld).toBe(10);
    // b waits for slots (held up to 200 ms): the pool is contended, and a's share is 10 / 2.
    expect(acquire(p, 1_510 * MS, { agentId: 'b', seq: 1, tokensWanted: 4, holdMs: 200 })).toEqual([]);
    const shed = grantOf(acquire(p, 1_520 * MS, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 10, tokensWanted: 0 }));
    expect(shed).toMatchObject({ tokensGranted: 0, tokensHeld: 10, slotsMax: 5, ttlMs: 1000 });
    // a gives back down to its share: b is answered at once, from what a gave back.
    const out = acquire(p, 1_540 * MS, { agentId: 'a', seq: 3, leaseId: g.leaseId, tokensLeft: 5, tokensWanted: 0 });
    const replies = out.map((d) => [d.to, d.reply.kind === 'grant' ? d.reply.tokensGranted : d.reply.kind]);
    expect(replies).toEqual([
      ['a', 0],
      ['b', 4],
    ]);
    expect(status(p, 1_540 * MS)).toMatchObject({ levelTokens: 1, leasedTokens: 9 });
  });

  it('renews a lease that stays above its share no more once the hold bound and a TTL have passed since it was told', () => {
    const p = slotPool();
    const g = grantOf(acquire(p, 1_500 * MS, { agentId: 'a', seq: 1, tokensWanted: 10 }));
    const renew = (seq: number, atUs: number) => {
      // b keeps a request waiting: the pool stays contended.
      acquire(p, atUs - 1, { agentId: 'b', seq, tokensWanted: 4, holdMs: 200 });
      return grantOf(
        acquire(p, atUs, { agentId: 'a', seq, leaseId: g.leaseId, tokensLeft: 10, tokensWanted: 0 }).filter((d) => d.to === 'a'),
      );
    };
    expect(renew(2, 1_600 * MS).slotsMax).toBe(5);
    expect(renew(3, 2_400 * MS).slotsMax).toBe(5);
    expect(renew(4, 3_100 * MS).slotsMax).toBe(5);
    // Told at 1.6 s; 500 + 1000 ms later it still holds 10: no more slotsMax, no extension (it lapses as a bucket's would).
    const last = renew(5, 3_101 * MS + 1);
    expect(last.slotsMax).toBeUndefined();
    expect(last.ttlMs).toBeLessThan(1000);
  });
});
