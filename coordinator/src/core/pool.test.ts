/**
 * Pool: quiet period and refill, returns and expiry, at fixed instants (µs),
 * and its LeaseTable.
 * Grants and reports are in pool-grant.test.ts; holding, retries and FIFO
 * order in pool-hold.test.ts; the random-sequence property in
 * pool-property.test.ts.
 *
 * The standard pool "p" and the helpers are in pool.fixtures.ts: capacity
 * 100, 1 token per ms, TTL 1 s, leases ≤ 20, minimum grant 5, holds ≤ 200 ms;
 * empty until QUIET_END (1.000 s), full from FULL_AT (1.100 s).
 */
import { describe, expect, it } from 'vitest';
import { TokenleaseError, type LeaseReturn, type ReturnReceipt } from '@tokenlease/shared';
import { LeaseTable } from './lease-table.js';
import type { Delivery, Pool } from './pool.js';
import { EPOCH, FULL_AT, MS, QUIET_END, S, acquire, credit, grantOf, makePool, poolWithLease, status, tick } from './pool.fixtures.js';
import { SECRET } from './pool.fixtures.js';

function giveBack(
  pool: Pool<string>,
  nowUs: number,
  fields: Omit<LeaseReturn, 'v' | 'op' | 'pool' | 'leaseSecret'> & { readonly leaseSecret?: string },
): ReturnReceipt {
  const out: Delivery<string>[] = [];
  pool.giveBack({ v: 2, op: 'return', leaseSecret: SECRET, pool: 'p', ...fields }, 'receipt', nowUs, out);
  expect(out).toHaveLength(1);
  const reply = out[0]?.reply;
  if (reply?.kind !== 'receipt') throw new Error(`expected a receipt, got ${JSON.stringify(reply)}`);
  return reply;
}

describe('quiet period and refill', () => {
  // t (µs), whole tokens in the level, quietMs
  const levels: ReadonlyArray<readonly [number, number, number]> = [
    [0, 0, 1000],
    [500 * MS, 0, 500],
    [999_999, 0, 1],
    [QUIET_END, 0, 0],
    [QUIET_END + 999, 0, 0],
    [QUIET_END + 1 * MS, 1, 0],
    [1_050 * MS, 50, 0],
    [1_099_999, 99, 0],
    [FULL_AT, 100, 0],
    [60 * S, 100, 0],
  ];

  it.each(levels)('a fresh pool at t=%ius holds %i tokens (quietMs %i)', (nowUs, levelTokens, quietMs) => {
    expect(status(makePool(), nowUs)).toEqual({
      v: 2,
      kind: 'status',
      pool: 'p',
      epoch: EPOCH,
      capacityTokens: 100,
      levelTokens,
      leasedTokens: 0,
      leases: 0,
      waiting: 0,
      quietMs,
      calls: { admitted: 0, denied: 0, shadowDenied: 0 },
    });
  });

  it('gives the same levels when read one after another on one pool', () => {
    const pool = makePool();
    for (const [nowUs, levelTokens] of levels) expect(status(pool, nowUs).levelTokens).toBe(levelTokens);
  });

  it('counts the quiet period from the start time, not from 0', () => {
    const pool = makePool({ startUs: 7 * S, quietPeriodMs: 2000 });
    expect(status(pool, 8_999_999).levelTokens).toBe(0);
    expect(status(pool, 8_999_999).quietMs).toBe(1);
    expect(status(pool, 9_050 * MS).levelTokens).toBe(50);
  });

  it.each<[number, number]>([
    // µs after the quiet period, tokens: refill 3 per 7 ms is 3/7000 of a token per µs
    [2333, 0],
    [2334, 1],
    [4666, 1],
    [4667, 2],
    [7000, 3],
    [1 * S, 428],
    [2_333_333, 999],
    [2_333_334, 1000],
    [60 * S, 1000],
  ])('refills exactly 3 tokens per 7 ms: %ius after the quiet period the level is %i', (afterUs, levelTokens) => {
    const pool = makePool({ fields: { capacity: 1000, refill: '3/7ms', maxLeaseTokens: 100 } });
    expect(status(pool, QUIET_END + afterUs).levelTokens).toBe(levelTokens);
  });

  it.each<[number, number, number]>([
    // t, tokensWanted, retryAfterMs: the rest of the quiet period plus the time to accrue min(wanted, 5)
    [0, 20, 1005],
    [0, 2, 1002],
    [500 * MS, 20, 505],
    [999_999, 20, 6],
    [QUIET_END, 20, 5],
  ])('grants nothing before the quiet period ends: acquire at t=%ius for %i tokens waits %i ms', (nowUs, tokensWanted, retryAfterMs) => {
    const pool = makePool();
    const g = grantOf(acquire(pool, nowUs, { agentId: 'a', seq: 1, tokensWanted }));
    expect(g).toMatchObject({ kind: 'grant', seq: 1, tokensGranted: 0, tokensHeld: 0, retryAfterMs });
    expect(credit(status(pool, nowUs))).toEqual({ level: 0, leased: 0, leases: 1 });
  });

  it('answers a request held during the quiet period at its hold deadline with 0 tokens', () => {
    const pool = makePool();
    expect(acquire(pool, 500 * MS, { agentId: 'a', seq: 1, holdMs: 200 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(700 * MS);
    expect(tick(pool, 699_999)).toEqual([]);
    const g = grantOf(tick(pool, 700 * MS));
    expect(g).toMatchObject({ tokensGranted: 0, tokensHeld: 0, retryAfterMs: 305 });
  });
});

describe('returns', () => {
  it.each<
    [
      string,
      Partial<Omit<LeaseReturn, 'v' | 'op' | 'pool' | 'leaseSecret'>> & { readonly leaseSecret?: string },
      number,
      { level: number; leased: number; leases: number },
    ]
  >([
    ['part of it', { tokensLeft: 10 }, 10, { level: 95, leased: 0, leases: 0 }],
    ['all of it', { tokensLeft: 15 }, 15, { level: 100, leased: 0, leases: 0 }],
    ['more than the bound', { tokensLeft: 40 }, 15, { level: 100, leased: 0, leases: 0 }],
    ['nothing', { tokensLeft: 0 }, 0, { level: 85, leased: 0, leases: 0 }],
    ['a wrong lease id', { tokensLeft: 10, leaseId: 'zz-wrong' }, 0, { level: 85, leased: 15, leases: 1 }],
    ['a sequence number already used', { tokensLeft: 10, seq: 1 }, 0, { level: 85, leased: 15, leases: 1 }],
  ])('returning %s moves min(tokensLeft, bound) back', (_name, fields, tokensReturned, after) => {
    const { pool, leaseId } = poolWithLease(15);
    const receipt = giveBack(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 0, ...fields });
    expect(receipt).toEqual({ v: 2, kind: 'receipt', seq: fields.seq ?? 2, tokensReturned });
    expect(credit(status(pool, FULL_AT))).toEqual(after);
  });

  it('is idempotent: a second identical return moves nothing', () => {
    const { pool, leaseId } = poolWithLease(15);
    const req = { agentId: 'a', seq: 2, leaseId, tokensLeft: 10 };
    expect(giveBack(pool, FULL_AT, req).tokensReturned).toBe(10);
    const before = status(pool, FULL_AT);
    expect(giveBack(pool, FULL_AT, req).tokensReturned).toBe(0);
    expect(status(pool, FULL_AT)).toEqual(before);
  });

  it('ends the lease: the next acquire gets a new id and starts from a zero bound', () => {
    const { pool, leaseId } = poolWithLease(15);
    giveBack(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 15 });
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 3, leaseId, tokensLeft: 15, tokensWanted: 5 }));
    expect(g.leaseId).not.toBe(leaseId);
    expect(g).toMatchObject({ tokensGranted: 5, tokensHeld: 5 });
    expect(credit(status(pool, FULL_AT))).toEqual({ level: 95, leased: 5, leases: 1 });
  });

  it('refills what was spent of a returned lease at rate r', () => {
    const { pool, leaseId } = poolWithLease(15);
    giveBack(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 10 });
    expect(status(pool, FULL_AT + 2 * MS).levelTokens).toBe(97);
    expect(status(pool, FULL_AT + 5 * MS).levelTokens).toBe(100);
  });
});

describe('expiry', () => {
  function leasedAt1200(): { pool: Pool<string>; leaseId: string } {
    const pool = makePool();
    const g = grantOf(acquire(pool, 1_200 * MS, { agentId: 'a', seq: 1, tokensWanted: 20 }));
    expect(credit(status(pool, 1_200 * MS))).toEqual({ level: 80, leased: 20, leases: 1 });
    return { pool, leaseId: g.leaseId };
  }

  it('reclaims a lease at grant time + TTL; its tokens are lost; refill then fills the room at r', () => {
    const { pool } = leasedAt1200();
    expect(pool.nextDeadlineUs()).toBe(2_200 * MS);
    expect(credit(status(pool, 2_199_999))).toEqual({ level: 80, leased: 20, leases: 1 });
    expect(tick(pool, 2_200 * MS)).toEqual([]);
    expect(credit(status(pool, 2_200 * MS))).toEqual({ level: 80, leased: 0, leases: 0 });
    expect(pool.nextDeadlineUs()).toBe(Infinity);
    expect(status(pool, 2_210 * MS).levelTokens).toBe(90);
    expect(status(pool, 2_220 * MS).levelTokens).toBe(100);
    expect(status(pool, 2_300 * MS).levelTokens).toBe(100);
  });

  it('still clips the refill of the gap when the expiry is noticed late (errs on admitting less)', () => {
    const { pool } = leasedAt1200();
    expect(credit(status(pool, 2_250 * MS))).toEqual({ level: 80, leased: 0, leases: 0 });
    expect(status(pool, 2_260 * MS).levelTokens).toBe(90);
  });

  it('counts the TTL from the grant of a held request, not from its receipt', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1, holdMs: 200 })).toEqual([]);
    expect(grantOf(tick(pool, 1_005 * MS)).tokensGranted).toBe(5);
    expect(pool.nextDeadlineUs()).toBe(2_005 * MS);
    expect(credit(status(pool, 2_004_999))).toMatchObject({ leased: 5, leases: 1 });
    tick(pool, 2_005 * MS);
    expect(credit(status(pool, 2_005 * MS))).toMatchObject({ leased: 0, leases: 0 });
  });

  it('extends the lease by a renewal to renewal time + TTL', () => {
    const { pool, leaseId } = leasedAt1200();
    acquire(pool, 2_100 * MS, { agentId: 'a', seq: 2, leaseId, tokensLeft: 20, tokensWanted: 0 });
    expect(pool.nextDeadlineUs()).toBe(3_100 * MS);
    expect(credit(status(pool, 3_099_999))).toMatchObject({ leased: 20, leases: 1 });
    expect(credit(status(pool, 3_100 * MS))).toMatchObject({ leased: 0, leases: 0 });
  });

  it('answers a renewal of a lease it already reclaimed with a new lease from a zero bound', () => {
    const { pool, leaseId } = leasedAt1200();
    const g = grantOf(acquire(pool, 2_200 * MS, { agentId: 'a', seq: 2, leaseId, tokensLeft: 20, tokensWanted: 20 }));
    expect(g.leaseId).not.toBe(leaseId);
    expect(g).toMatchObject({ tokensGranted: 20, tokensHeld: 20 });
    expect(credit(status(pool, 2_200 * MS))).toEqual({ level: 60, leased: 20, leases: 1 });
  });
});

describe('LeaseTable (the pool’s lease records)', () => {
  it('opens one lease per agent with a fresh id and a zero bound', () => {
    const table = new LeaseTable('3-');
    const a = table.open('a', SECRET, 5, 2 * S, 'anon');
    const b = table.open('b', SECRET, 1, 3 * S, 'anon');
    expect(a).toEqual({
      leaseId: '3-0.00000001',
      agentId: 'a',
      secret: SECRET,
      identity: 'anon',
      boundTokens: 0,
      expiresAtUs: 2 * S,
      grantedUntilUs: 2 * S,
      lastSeq: 5,
      grantTerms: null,
      grantTokens: 0,
      grantHeldTokens: 0,
      grantTtlMs: 0,
      grantRetryMs: 0,
      grantSlotsMax: -1,
      grantRatePerPeriod: -1,
      grantCapTokens: 0,
      heldTokens: 0,
      ratePerPeriod: 0,
      accrualFromUs: 2 * S,
      demandPerSecond: 0,
      weight: 1,
      agentClass: null,
      isRate: false,
      generation: 0,
      shedSinceUs: 0,
      clock: null,
      slot: 0,
      row: 0,
      serial: 1,
    });
    // <prefix><row>.<serial>, base 36: the row where the table keeps it, the serial counting the table's leases.
    expect(b.leaseId).toBe('3-1.00000002');
    expect(table.get('a')).toBe(a);
    expect(table.size).toBe(2);
    expect(() => table.open('a', SECRET, 6, 4 * S, 'anon')).toThrow(TokenleaseError);
    // Ids are not reused after a lease ends; its row is.
    table.remove(a);
    expect(table.open('a', SECRET, 7, 4 * S, 'anon').leaseId).toBe('3-0.00000003');
  });

  it('keeps the sum of bounds through setBound, remove and reclaimExpired', () => {
    const table = new LeaseTable('x-');
    const a = table.open('a', SECRET, 1, 2 * S, 'anon');
    const b = table.open('b', SECRET, 1, 3 * S, 'anon');
    table.setBound(a, 7);
    table.setBound(b, 5);
    table.setBound(a, 2);
    expect(table.boundTokensSum).toBe(7);
    expect(table.earliestExpiryUs()).toBe(2 * S);
    expect(table.reclaimExpired(2 * S - 1)).toEqual([]);
    expect(table.reclaimExpired(2 * S)).toEqual(['a']);
    expect(table.boundTokensSum).toBe(5);
    expect(table.remove(b)).toBe(5);
    expect(table.boundTokensSum).toBe(0);
    expect(table.size).toBe(0);
    expect(table.earliestExpiryUs()).toBe(Infinity);
  });

  it.each<[number]>([[-1], [1.5], [Number.NaN], [2 ** 53]])('refuses a bound of %d and changes nothing', (bound) => {
    const table = new LeaseTable('x-');
    const a = table.open('a', SECRET, 1, S, 'anon');
    table.setBound(a, 4);
    expect(() => table.setBound(a, bound)).toThrow(TokenleaseError);
    expect(a.boundTokens).toBe(4);
    expect(table.boundTokensSum).toBe(4);
  });
});
