/**
 * The ideal bucket admits at least what any limiter could, on small cases
 * worked by hand (capacity 1, refill 1 token/s).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { makeRate } from '@tokenlease/shared';
import { seedFromEnv } from '@tokenlease/shared/testing';
import { SharedBucket } from './shared-bucket.js';
import type { Arrival } from '@tokenlease/sim';
import { idealAdmitted } from './ideal.js';

const S = 1_000_000;
const req = (tUs: number, waitMs = 0, cost = 1): Arrival => ({ tUs, agent: 0, incarnation: 0, cost, waitMs });
const rate = makeRate(1, 1000);

describe('idealAdmitted', () => {
  const cases: Array<[string, Arrival[], number]> = [
    ['a try with the token there', [req(0)], 1],
    ['two tries, one token', [req(0), req(0)], 1],
    ['the second try after a refill', [req(0), req(1 * S)], 2],
    ['a try 1 µs too early', [req(0), req(1 * S - 1)], 1],
    ['a waiting request defers to a try, then takes the refill', [req(0, 2000), req(S / 2)], 2],
    ['a waiting request whose wait ends before the refill', [req(0, 900), req(S / 10)], 1],
    ['a waiting request goes first when waiting would waste refill', [req(0, 10_000), req(5 * S)], 2],
    ['a cost above capacity never fits', [req(0, 5000, 2)], 0],
  ];
  it.each(cases)('%s', (_name, arrivals, tokens) => {
    expect(idealAdmitted(arrivals, 1, rate)).toBe(tokens);
  });

  it('is never below what a greedy shared bucket admits (property)', () => {
    const seed = seedFromEnv();
    console.log(`ideal.test.ts: SEED=${seed}`);
    const arrival = fc.record({
      tUs: fc.integer({ min: 0, max: 5 * S }),
      waitMs: fc.constantFrom(0, 0, 100, 1500),
      cost: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(arrival, { maxLength: 60 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 5 }),
        (raw, capacity, perSecond) => {
          const arrivals = raw.map((a) => req(a.tUs, a.waitMs, a.cost)).sort((x, y) => x.tUs - y.tUs);
          const r = makeRate(perSecond, 1000);
          let greedy = 0;
          const bucket = new SharedBucket(capacity, r, 0);
          for (const a of arrivals) bucket.offer(a.cost, a.tUs, a.waitMs * 1000, () => (greedy += a.cost));
          bucket.finish();
          expect(idealAdmitted(arrivals, capacity, r)).toBeGreaterThanOrEqual(greedy);
        },
      ),
      { seed, numRuns: 500 },
    );
  });
});
