/**
 * Pool: idempotent retries, held requests (no crumbs), FIFO order, the next
 * deadline and flush, at fixed instants (µs).
 *
 * The standard pool "p" and the helpers are in pool.fixtures.ts: capacity
 * 100, 1 token per ms, TTL 1 s, leases ≤ 20, minimum grant 5, holds ≤ 200 ms;
 * empty until QUIET_END (1.000 s), full from FULL_AT (1.100 s). Requests
 * here may be held up to 200 ms unless they say otherwise.
 */
import { describe, expect, it } from 'vitest';
import type { Delivery, Pool } from './pool.js';
import {
  FULL_AT,
  MS,
  QUIET_END,
  acquire as acquireNow,
  grantOf,
  internals,
  makePool,
  status,
  tick,
  type AcquireFields,
} from './pool.fixtures.js';

/** acquire of pool.fixtures.ts, but a request may be held up to 200 ms unless `fields` set holdMs. */
function acquire(pool: Pool<string>, nowUs: number, fields: AcquireFields, to?: string): Delivery<string>[] {
  return acquireNow(pool, nowUs, { holdMs: 200, ...fields }, to);
}

/** [to, tokensGranted] of each delivery, in order. */
const served = (deliveries: readonly Delivery<string>[]): Array<[string, number]> =>
  deliveries.map((d) => [d.to, d.reply.kind === 'grant' ? d.reply.tokensGranted : -1]);

describe('idempotent retries', () => {
  it('answers a retry of the same (agentId, seq) with the identical cached reply and grants nothing more', () => {
    const pool = makePool();
    const first = acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 15, holdMs: 0 }, 'first');
    const g = grantOf(first);
    const before = status(pool, FULL_AT);
    // Same seq, even with another body: the original reply, to the retry's target.
    for (const body of [{}, { tokensWanted: 5, tokensLeft: 3, leaseId: 'zz-other' }]) {
      const retry = acquire(pool, 1_150 * MS, { agentId: 'a', seq: 1, tokensWanted: 15, holdMs: 0, ...body }, 'retry');
      expect(retry).toHaveLength(1);
      expect(retry[0]?.to).toBe('retry');
      expect(retry[0]?.reply).toStrictEqual(g);
      expect(status(pool, 1_150 * MS)).toEqual(before);
    }
  });

  it('answers a retry of a renewal with the renewal’s reply', () => {
    const pool = makePool();
    const leaseId = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 10, holdMs: 0 })).leaseId;
    const renewal = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 4, tokensWanted: 10, holdMs: 0 }));
    expect(renewal).toMatchObject({ seq: 2, tokensGranted: 10, tokensHeld: 14 });
    const snapshot = internals(pool);
    expect(grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 4, tokensWanted: 10, holdMs: 0 }))).toStrictEqual(
      renewal,
    );
    expect(internals(pool)).toBe(snapshot);
  });

  it('does not extend the lease on a retry: it still ends at the original grant + TTL', () => {
    // So an agent must count the TTL of a retried request from its first send.
    const pool = makePool();
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, holdMs: 0 }));
    expect(grantOf(acquire(pool, 1_900 * MS, { agentId: 'a', seq: 1, holdMs: 0 }))).toStrictEqual(g);
    expect(pool.nextDeadlineUs()).toBe(2_100 * MS);
    expect(status(pool, 2_100 * MS)).toMatchObject({ leases: 0, leasedTokens: 0 });
  });

  it.each<[number]>([[1], [0]])('refuses an older seq (%i) with stale-sequence and changes nothing', (oldSeq) => {
    const pool = makePool();
    const leaseId = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 10, holdMs: 0 })).leaseId;
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 2, leaseId, tokensLeft: 10, tokensWanted: 5, holdMs: 0 }));
    tick(pool, 1_200 * MS);
    const snapshot = internals(pool);
    const out = acquire(pool, 1_200 * MS, { agentId: 'a', seq: oldSeq, leaseId, tokensLeft: 0, tokensWanted: 20, holdMs: 0 }, 'late');
    expect(out).toEqual([
      {
        to: 'late',
        reply: {
          v: 2,
          kind: 'error',
          seq: oldSeq,
          code: 'stale-sequence',
          fault: 'peer',
          message: expect.any(String),
          retryAfterMs: 0,
          seqFloor: 2,
        },
      },
    ]);
    expect(internals(pool)).toBe(snapshot);
  });

  it('moves the eventual reply of a held request to the retry’s target; the first target gets nothing', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1 }, 'first')).toEqual([]);
    expect(acquire(pool, 1_002 * MS, { agentId: 'a', seq: 1 }, 'second')).toEqual([]);
    expect(status(pool, 1_002 * MS).waiting).toBe(1);
    const out = tick(pool, 1_005 * MS);
    expect(served(out)).toEqual([['second', 5]]);
    // A later retry gets the same reply from the cache.
    const third = acquire(pool, 1_006 * MS, { agentId: 'a', seq: 1 }, 'third');
    expect(third).toEqual([{ to: 'third', reply: out[0]?.reply, repeat: true, grantFor: { agentId: 'a', pool: 'p' } }]);
  });
});

describe('no crumbs: holding requests', () => {
  it('holds a request until min(wanted, minGrantTokens) has accrued, then answers it from tick', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1 })).toEqual([]);
    expect(status(pool, QUIET_END)).toMatchObject({ waiting: 1, leases: 1, leasedTokens: 0 });
    expect(pool.nextDeadlineUs()).toBe(1_005 * MS);
    expect(tick(pool, 1_004_999)).toEqual([]);
    const g = grantOf(tick(pool, 1_005 * MS));
    // 5 of 20: the missing 15 are worth asking for again once 5 more accrue.
    expect(g).toMatchObject({ seq: 1, tokensGranted: 5, tokensHeld: 5, retryAfterMs: 5 });
    expect(status(pool, 1_005 * MS)).toMatchObject({ waiting: 0, levelTokens: 0, leasedTokens: 5 });
  });

  it('grants a small want in full as soon as it has accrued', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1, tokensWanted: 3 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(1_003 * MS);
    expect(grantOf(tick(pool, 1_003 * MS))).toMatchObject({ tokensGranted: 3, tokensHeld: 3, retryAfterMs: 0 });
  });

  it('answers at the hold deadline with whatever there is when that comes first', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1, holdMs: 3 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(1_003 * MS);
    expect(tick(pool, 1_002_999)).toEqual([]);
    expect(grantOf(tick(pool, 1_003 * MS))).toMatchObject({ tokensGranted: 3, tokensHeld: 3, retryAfterMs: 5 });
  });

  it('answers with 0 tokens and a retry time when nothing can accrue (all capacity leased); holdMs is capped at maxHoldMs', () => {
    const pool = makePool();
    for (const agentId of ['b', 'c', 'd', 'e', 'f']) {
      expect(grantOf(acquire(pool, FULL_AT, { agentId, seq: 1, holdMs: 0 })).tokensGranted).toBe(20);
    }
    expect(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 5, holdMs: 60_000 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(1_300 * MS); // the hold (200 ms), not the accrual, nor the expiries at 2.1 s
    expect(tick(pool, 1_299_999)).toEqual([]);
    const g = grantOf(tick(pool, 1_300 * MS));
    expect(g.tokensGranted).toBe(0);
    expect(g.tokensHeld).toBe(0);
    expect(g.retryAfterMs).toBeGreaterThan(0);
  });

  it.each<[string, Partial<AcquireFields>, number, number]>([
    // an empty pool answers at once when the request may not be held, or wants nothing
    ['holdMs 0', { holdMs: 0 }, 0, 5],
    ['tokensWanted 0', { tokensWanted: 0 }, 0, 0],
  ])('answers at once with %s', (_name, fields, tokensGranted, retryAfterMs) => {
    const pool = makePool();
    const g = grantOf(acquire(pool, QUIET_END, { agentId: 'a', seq: 1, ...fields }));
    expect(g).toMatchObject({ tokensGranted, retryAfterMs });
  });

  it('serves waiting agents in FIFO order; a later small request does not overtake', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1 })).toEqual([]);
    expect(acquire(pool, 1_001 * MS, { agentId: 'b', seq: 1 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(1_005 * MS);
    expect(served(tick(pool, 1_005 * MS))).toEqual([['a#1', 5]]);
    expect(pool.nextDeadlineUs()).toBe(1_010 * MS);
    expect(tick(pool, 1_008 * MS)).toEqual([]);
    // c wants 1 and 3 are there, but b came first.
    expect(acquire(pool, 1_008 * MS, { agentId: 'c', seq: 1, tokensWanted: 1 })).toEqual([]);
    expect(status(pool, 1_008 * MS)).toMatchObject({ waiting: 2, levelTokens: 3 });
    expect(served(tick(pool, 1_010 * MS))).toEqual([['b#1', 5]]);
    expect(pool.nextDeadlineUs()).toBe(1_011 * MS);
    expect(served(tick(pool, 1_011 * MS))).toEqual([['c#1', 1]]);
    expect(status(pool, 1_011 * MS)).toMatchObject({ waiting: 0, levelTokens: 0, leasedTokens: 11, leases: 3 });
  });

  it('serves several waiters in one tick, in arrival order, sharing a backlog in proportion to their turns', () => {
    const pool = makePool();
    for (const agentId of ['a', 'b', 'c']) expect(acquire(pool, QUIET_END, { agentId, seq: 1 })).toEqual([]);
    // 50 tokens for three who want 20 each: 50·5/15, then 34·5/10, then the last takes its fill of the 17 left.
    expect(served(tick(pool, 1_050 * MS))).toEqual([
      ['a#1', 16],
      ['b#1', 17],
      ['c#1', 17],
    ]);
  });

  it('gives a class of weight w turns w times as large', () => {
    const pool = makePool({ fields: { classWeights: { premium: 3 } } });
    expect(acquire(pool, QUIET_END, { agentId: 'p', seq: 1, agentClass: 'premium' })).toEqual([]);
    expect(acquire(pool, QUIET_END, { agentId: 'b', seq: 1 })).toEqual([]);
    // The premium turn is min(20, 5·3) = 15 and waits for 15 tokens; then the basic turn of 5.
    expect(served(tick(pool, QUIET_END + 14 * MS))).toEqual([]);
    expect(served(tick(pool, QUIET_END + 15 * MS))).toEqual([['p#1', 15]]);
    expect(served(tick(pool, QUIET_END + 20 * MS))).toEqual([['b#1', 5]]);
  });

  it('weighs a relay class by the fleet weight it states, at most its limit, and any other request by its class', () => {
    const pool = makePool({ fields: { relayClasses: { relay: 4 } } });
    expect(acquire(pool, QUIET_END, { agentId: 'r', seq: 1, agentClass: 'relay', fleetWeight: 3 })).toEqual([]);
    expect(acquire(pool, QUIET_END, { agentId: 'x', seq: 1, agentClass: 'other', fleetWeight: 50 })).toEqual([]);
    expect(acquire(pool, QUIET_END, { agentId: 'y', seq: 1, agentClass: 'relay', fleetWeight: 50 })).toEqual([]);
    expect(acquire(pool, QUIET_END, { agentId: 'z', seq: 1, agentClass: 'relay' })).toEqual([]);
    // Turns of min(20, 5·w): the relay speaking for 3 waits for 15, the other class's claim counts for nothing,
    // a claim of 50 counts for the limit of 4 (20), and a relay that states none weighs 1.
    expect(served(tick(pool, QUIET_END + 14 * MS))).toEqual([]);
    expect(served(tick(pool, QUIET_END + 15 * MS))).toEqual([['r#1', 15]]);
    expect(served(tick(pool, QUIET_END + 20 * MS))).toEqual([['x#1', 5]]);
    expect(served(tick(pool, QUIET_END + 40 * MS))).toEqual([['y#1', 20]]);
    expect(served(tick(pool, QUIET_END + 45 * MS))).toEqual([['z#1', 5]]);
  });

  it('reports the earliest of a hold end, the head’s accrual and a lease expiry as the next deadline', () => {
    const pool = makePool();
    expect(pool.nextDeadlineUs()).toBe(Infinity);
    // During the quiet period the head's grant accrues only from its end.
    expect(acquire(pool, 900 * MS, { agentId: 'a', seq: 1, holdMs: 200 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(1_005 * MS);
    expect(acquire(pool, 950 * MS, { agentId: 'b', seq: 1, holdMs: 20 })).toEqual([]);
    expect(pool.nextDeadlineUs()).toBe(970 * MS); // b's hold ends first
    expect(served(tick(pool, 970 * MS))).toEqual([['b#1', 0]]);
    expect(pool.nextDeadlineUs()).toBe(1_005 * MS);
    expect(served(tick(pool, 1_005 * MS))).toEqual([['a#1', 5]]);
    // Then the leases: b's granted at 0.970 s, a's at 1.005 s.
    expect(pool.nextDeadlineUs()).toBe(1_970 * MS);
  });

  it('answers a held request as superseded when the same agent sends a newer one', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1 }, 'old')).toEqual([]);
    const superseded = acquire(pool, 1_001 * MS, { agentId: 'a', seq: 2, tokensWanted: 3 }, 'new');
    expect(superseded).toHaveLength(1);
    expect(superseded[0]?.to).toBe('old');
    expect(superseded[0]?.reply).toMatchObject({ kind: 'error', code: 'stale-sequence', seq: 1, fault: 'peer' });
    expect(status(pool, 1_001 * MS).waiting).toBe(1);
    expect(served(tick(pool, 1_003 * MS))).toEqual([['new', 3]]);
  });
});

describe('a request that may not wait', () => {
  it('does not jump the queue: it is renewed with nothing while others wait, and told when to ask again', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1 })).toEqual([]);
    // 3 tokens have accrued; a waits for 5. b may not wait: it gets none of the 3.
    const b = grantOf(acquire(pool, QUIET_END + 3 * MS, { agentId: 'b', seq: 1, tokensWanted: 2, holdMs: 0 }));
    expect(b.tokensGranted).toBe(0);
    expect(b.retryAfterMs).toBeGreaterThan(0);
    expect(served(tick(pool, QUIET_END + 5 * MS))).toEqual([['a#1', 5]]);
  });

  it('takes what there is when nobody waits', () => {
    const pool = makePool();
    expect(grantOf(acquire(pool, QUIET_END + 3 * MS, { agentId: 'b', seq: 1, tokensWanted: 20, holdMs: 0 })).tokensGranted).toBe(3);
  });
});

describe('flush', () => {
  it('answers every held request now with what there is, in order', () => {
    const pool = makePool();
    expect(acquire(pool, QUIET_END, { agentId: 'a', seq: 1 })).toEqual([]);
    expect(acquire(pool, QUIET_END, { agentId: 'b', seq: 1 })).toEqual([]);
    const out: Delivery<string>[] = [];
    pool.flush(1_002 * MS, out);
    expect(served(out)).toEqual([
      ['a#1', 2],
      ['b#1', 0],
    ]);
    for (const d of out) expect(d.reply.kind === 'grant' && d.reply.retryAfterMs > 0).toBe(true);
    expect(status(pool, 1_002 * MS)).toMatchObject({ waiting: 0, leasedTokens: 2, leases: 2 });
  });
});
