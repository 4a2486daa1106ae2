/**
 * Takeover of damaged state: stored state beyond the pool's limits is not
 * adopted; the pool starts empty and quiet for one TTL and deletes the
 * damaged records with its first write.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseGrant } from '@tokenlease/shared';
import { propertySeed } from '@tokenlease/shared/testing';
import { parseCoordinatorConfig, type PoolConfig } from './config.js';
import { Pool, type Delivery } from './pool.js';
import type { PersistedLease, PersistedPool } from './pool-state.js';
import { acquireOf, MS, SECRET } from './pool.fixtures.js';
import { stateProblem } from './pool-takeover.js';

const config = parseCoordinatorConfig('damage.yaml', {
  pools: { p: { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 20, allowance: 10 } },
}).pools[0]!;

const reply = (fields: Partial<LeaseGrant> = {}): LeaseGrant => ({
  v: 2,
  kind: 'grant',
  seq: 4,
  leaseId: 'e-1',
  tokensGranted: 5,
  tokensHeld: 10,
  ttlMs: 1000,
  epoch: 1,
  maxLeaseTokens: 20,
  capacityTokens: 100,
  refillTokens: 1000,
  refillPeriodMs: 1000,
  retryAfterMs: 0,
  ...fields,
});
const lease = (fields: Partial<PersistedLease> = {}): PersistedLease => ({
  agentId: 'a',
  secret: SECRET,
  leaseId: 'e-1',
  boundTokens: 10,
  lastSeq: 4,
  lastReply: reply(),
  ...fields,
});
const state = (leases: PersistedLease[], levelTokens = 50): PersistedPool => ({ levelTokens, leases });
/** twenty — twenty agents' leases of `tokens` each, each answered with a grant of all of it. */
const twenty = (tokens: number): PersistedLease[] =>
  Array.from({ length: 20 }, (_, i) =>
    lease({
      agentId: `a${i}`,
      leaseId: `e-${i}`,
      boundTokens: tokens,
      lastReply: reply({ leaseId: `e-${i}`, tokensGranted: tokens, tokensHeld: tokens }),
    }),
  );

describe('stateProblem', () => {
  it.each<[string, PersistedPool, string | null]>([
    ['a valid state', state([lease()]), null],
    ['a level above capacity (a smaller configuration: clipped, not damage)', state([], 101), null],
    ['a lease above capacity + allowance', state([lease({ boundTokens: 2 ** 53 - 1, lastReply: null })]), 'above capacity + allowance'],
    ['a rate above the refill', state([lease({ ratePerPeriod: 101 })]), 'rate above the refill'],
    ['a reply to another sequence', state([lease({ lastReply: reply({ seq: 3 }) })]), 'another request or lease'],
    [
      'a reply granting 2^52 tokens',
      state([lease({ lastReply: reply({ tokensGranted: 2 ** 52, tokensHeld: 2 ** 52 }) })]),
      'more than the pool holds',
    ],
    ['a reply above a bound a report lowered since', state([lease({ boundTokens: 3 })]), null],
    ['a reply for 24 h', state([lease({ lastReply: reply({ ttlMs: 86_400_000 }) })]), 'TTL of 86400000 ms'],
    ['twenty leases of 20 (each fits, together 400 of B + A = 110)', state(twenty(20)), 'more than capacity + allowance 110 together'],
    [
      'leases of exactly B + A together, and a level (clipped)',
      state([lease({ boundTokens: 60 }), lease({ agentId: 'b', boundTokens: 50 })], 100),
      null,
    ],
    [
      'leases one token over B + A together, no level',
      state([lease({ boundTokens: 60 }), lease({ agentId: 'b', boundTokens: 51 })], 0),
      'together',
    ],
  ])('%s', (_name, s, fragment) => {
    const problem = stateProblem(config, s);
    if (fragment === null) expect(problem).toBeNull();
    else expect(problem).toContain(fragment);
  });
});

describe('Pool.takeOver of damaged state', () => {
  it('starts empty and quiet for one TTL, and deletes the damaged records with its first write', () => {
    const pool = Pool.takeOver<string>(config, 9, 0, state([lease({ boundTokens: 2 ** 53 - 1, lastReply: null })]));
    expect(pool.damage).toContain('above capacity + allowance');
    expect(pool.status(0, [])).toMatchObject({ levelTokens: 0, leases: 0, quietMs: 1000 });
    expect(pool.takeChanges()).toEqual({ levelTokens: 0, upserts: [], removes: ['a'] });
    expect(pool.status(1000 * MS + 500 * MS, []).levelTokens).toBe(50);
  });

  it('twenty leases of 20 on a pool of 100: retries of the kept grants replay nothing', () => {
    const pool = Pool.takeOver<string>(config, 9, 0, state(twenty(20)));
    expect(pool.damage).toContain('together');
    const out: Delivery<string>[] = [];
    for (const kept of twenty(20))
      pool.acquire(acquireOf({ agentId: kept.agentId, seq: kept.lastSeq, leaseId: kept.leaseId }), kept.agentId, 0, out, 'anon');
    const replayedTokens = out.reduce((sum, d) => sum + (d.reply.kind === 'grant' ? d.reply.tokensGranted : 0), 0);
    expect(replayedTokens).toBe(0);
    expect(pool.status(0, []).leasedTokens).toBe(0);
  });

  it('adopts valid state as before', () => {
    const pool = Pool.takeOver<string>(config, 9, 0, state([lease()]));
    expect(pool.damage).toBeNull();
    expect(pool.status(0, [])).toMatchObject({ levelTokens: 50, leases: 1, leasedTokens: 10, quietMs: 0 });
  });
});

describe('stored state checked as a whole (property)', () => {
  const RUNS = Number(process.env['RUNS'] ?? '300');
  const scenario = fc
    .record({
      capacity: fc.integer({ min: 1, max: 200 }),
      allowance: fc.integer({ min: 0, max: 50 }),
      leaseMode: fc.constantFrom('chunk', 'rate'),
    })
    .chain(({ capacity, allowance, leaseMode }) =>
      fc.record({
        config: fc.constant(
          parseCoordinatorConfig('whole.yaml', {
            pools: { p: { capacity, allowance, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: capacity, leaseMode } },
          }).pools[0] as PoolConfig,
        ),
        // Each bound fits B + A alone; a reply that granted it all was kept with it (a retry replays it).
        bounds: fc.array(fc.integer({ min: 0, max: capacity + allowance }), { maxLength: 30 }),
        levelTokens: fc.integer({ min: 0, max: 2 * (capacity + allowance) }),
      }),
    );

  it('adopts a state exactly when its leases fit B + A together; then credit and every replayed grant fit B + A', () => {
    const seed = propertySeed('src/core/pool-takeover-damage.test.ts');
    let adopted = 0;
    let refused = 0;
    fc.assert(
      fc.property(scenario, ({ config, bounds, levelTokens }) => {
        const creditTokensMax = config.capacity + config.allowance;
        const leases = bounds.map((b, i) =>
          lease({
            agentId: `a${i}`,
            leaseId: `e-${i}`,
            boundTokens: b,
            lastReply: reply({ leaseId: `e-${i}`, tokensGranted: b, tokensHeld: b }),
          }),
        );
        const pool = Pool.takeOver<string>(config, 9, 0, state(leases, levelTokens));
        const sum = bounds.reduce((x, y) => x + y, 0);
        expect(pool.damage === null).toBe(sum <= creditTokensMax);
        const s = pool.status(0, []);
        expect(s.levelTokens + s.leasedTokens).toBeLessThanOrEqual(creditTokensMax);
        const out: Delivery<string>[] = [];
        for (const kept of leases)
          pool.acquire(acquireOf({ agentId: kept.agentId, seq: kept.lastSeq, leaseId: kept.leaseId }), kept.agentId, 0, out, 'anon');
        const replayedTokens = out.reduce((x, d) => x + (d.reply.kind === 'grant' ? d.reply.tokensGranted : 0), 0);
        expect(replayedTokens).toBeLessThanOrEqual(pool.damage === null ? creditTokensMax : 0);
        if (pool.damage === null) adopted += 1;
        else refused += 1;
      }),
      { seed, numRuns: RUNS },
    );
    // Both sides of the line were drawn.
    expect(adopted).toBeGreaterThan(RUNS / 10);
    expect(refused).toBeGreaterThan(RUNS / 10);
  });
});
