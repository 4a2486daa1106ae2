/**
 * The per-key report: each key through its own exact bucket at each limit,
 * worked by hand on a small trace (a never-fitting cost, arrivals without a
 * key, ties broken by key); a trace of one key reports what the what-if
 * bucket reports on it (property); hostile key text cannot reach a terminal.
 */
import fc from 'fast-check';
import { makeRate } from '@tokenlease/shared';
import type { Arrival } from '@tokenlease/sim';
import { describe, expect, it } from 'vitest';
import { byKey, renderByKey } from './by-key.js';
import { whatIf } from './what-if.js';

const at = (ms: number, cost = 1): Arrival => ({ tUs: ms * 1000, agent: 0, incarnation: 0, cost, waitMs: 0 });
const PER_SECOND = makeRate(1, 1000);

describe('byKey', () => {
  // a: three at once, one at 0.5 s, one at 1 s; no key at 5 s; b: cost 2 then 1 at 10 s; c: cost 3 at 20 s.
  const arrivals = [at(0), at(0), at(0), at(500), at(1000), at(5000), at(10_000, 2), at(10_000), at(20_000, 3)];
  const keys = { names: ['c', 'b', 'a'], ofArrival: [2, 2, 2, 2, 2, -1, 1, 1, 0] };
  const report = byKey(
    arrivals,
    keys,
    [
      { capacityTokens: 2, refill: PER_SECOND },
      { capacityTokens: 3, refill: PER_SECOND },
    ],
    2,
  );

  it('replays every key through its own bucket at each limit, and lists the top keys by denied calls, ties by key', () => {
    expect(report).toMatchObject({ top: 2, keys: 3, arrivalsWithoutKey: 1 });
    expect(report.limits[0]).toEqual({
      capacityTokens: 2,
      refill: '1/s',
      keysLimited: 3,
      offeredCount: 8,
      offeredTokens: 11,
      deniedCount: 4,
      deniedTokens: 6,
      top: [
        { key: 'a', arrivals: 5, offeredTokens: 5, admittedCount: 3, deniedCount: 2, deniedTokens: 2, deniedShare: 0.4 },
        { key: 'b', arrivals: 2, offeredTokens: 3, admittedCount: 1, deniedCount: 1, deniedTokens: 1, deniedShare: 0.5 },
      ],
    });
    expect(report.limits[1]).toMatchObject({ capacityTokens: 3, keysLimited: 1, deniedCount: 1, deniedTokens: 1 });
    expect(report.limits[1]?.top.map((row) => [row.key, row.deniedCount])).toEqual([
      ['a', 1],
      ['b', 0],
    ]);
  });

  it('prints each limit with its totals and top keys, control characters escaped', () => {
    const hostile = byKey([at(0, 5)], { names: ['\u001b[31mred\u0007'], ofArrival: [0] }, [{ capacityTokens: 2, refill: PER_SECOND }], 20);
    const text = renderByKey(hostile);
    expect(text).toContain('\\u001b[31mred\\u0007');
    expect([...text].filter((ch) => ch !== '\n' && ch.charCodeAt(0) < 0x20)).toEqual([]);
    expect(renderByKey(report)).toContain('B=2, r=1/s per key: 3 of 3 keys limited at least once, 4 of 8 calls denied (6 tokens)');
  });

  it('reports on a trace of one key what the what-if bucket reports on it (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 4 })), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 6 }),
        (raw, capacityTokens) => {
          const sorted = raw.map(([ms, cost]) => at(ms, cost)).sort((x, y) => x.tUs - y.tUs);
          const limit = { capacityTokens, refill: makeRate(3, 1000) };
          const one = byKey(sorted, { names: ['k'], ofArrival: sorted.map(() => 0) }, [limit], 1).limits[0];
          const reference = whatIf(sorted, [limit])[0];
          expect({ count: one?.deniedCount, tokens: one?.deniedTokens }).toEqual({
            count: reference?.deniedCount,
            tokens: reference?.deniedTokens,
          });
        },
      ),
    );
  });
});
