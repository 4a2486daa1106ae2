/**
 * Takeover of damaged state: stored state beyond the pool's limits is not
 * adopted; the pool starts empty and quiet for one TTL and deletes the
 * damaged records with its first write.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseGrant } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { Pool } from './pool.js';
import type { PersistedLease, PersistedPool } from './pool-state.js';
import { MS } from './pool.fixtures.js';
import { stateProblem } from './pool-takeover.js';
import { SECRET } from './pool.fixtures.js';

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

  it('adopts valid state as before', () => {
    const pool = Pool.takeOver<string>(config, 9, 0, state([lease()]));
    expect(pool.damage).toBeNull();
    expect(pool.status(0, [])).toMatchObject({ levelTokens: 50, leases: 1, leasedTokens: 10, quietMs: 0 });
  });
});
