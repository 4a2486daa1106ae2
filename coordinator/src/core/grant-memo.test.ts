/**
 * A retry gets the reply to its request, field for field and in the same
 * order, though the lease keeps only numbers of it (grant-memo.ts): for
 * every kind of pool, after the pool was reconfigured, and after a new
 * owner took the lease over from the store.
 */
import { describe, expect, it } from 'vitest';
import { parseCoordinatorConfig, type PoolConfig } from './config.js';
import { grantTermsOf, lastGrantOf, rememberGrant } from './grant-memo.js';
import { LeaseTable } from './lease-table.js';
import { Pool } from './pool.js';
import { acquire, EPOCH, FULL_AT, grantOf, MS, S, SECRET, STANDARD_POOL_FIELDS } from './pool.fixtures.js';

const configOf = (fields: Record<string, unknown>): PoolConfig => {
  const pool = parseCoordinatorConfig('grant-memo.yaml', { quietPeriodMs: 1000, pools: { p: fields } }).pools[0];
  if (pool === undefined) throw new Error('no pool');
  return pool;
};

const KINDS: readonly [string, Record<string, unknown>][] = [
  ['a chunk pool', STANDARD_POOL_FIELDS],
  ['a pool with an allowance', { ...STANDARD_POOL_FIELDS, allowance: 30 }],
  ['a rate pool', { ...STANDARD_POOL_FIELDS, leaseMode: 'rate' }],
  ['a pool in shadow mode', { ...STANDARD_POOL_FIELDS, shadow: true }],
  ['a window pool', { window: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 20, minGrantTokens: 5, maxHoldMs: 200 }],
  ['a concurrency pool', { concurrency: { limit: 10, maxHoldMs: 500 }, leaseTtlMs: 1000, maxLeaseTokens: 10 }],
];

describe('a retry of the last request', () => {
  it.each(KINDS)('gets the same reply on %s, first and renewed grants alike', (_kind, fields) => {
    const pool = new Pool<string>(configOf(fields), EPOCH, 0, 1000);
    const at = FULL_AT + S;
    const first = grantOf(acquire(pool, at, { agentId: 'a', seq: 1, tokensWanted: 5, demandPerSecond: 40 }));
    const retried = acquire(pool, at + MS, { agentId: 'a', seq: 1, tokensWanted: 5, demandPerSecond: 40 });
    expect(retried[0]?.repeat).toBe(true);
    expect(JSON.stringify(grantOf(retried))).toBe(JSON.stringify(first));
    const renewal = { agentId: 'a', seq: 2, leaseId: first.leaseId, tokensLeft: 2, tokensWanted: 10, demandPerSecond: 40 };
    const second = grantOf(acquire(pool, at + 100 * MS, renewal));
    expect(JSON.stringify(grantOf(acquire(pool, at + 101 * MS, renewal)))).toBe(JSON.stringify(second));
  });

  it('gets the reply under the terms it was granted under, after the pool was reconfigured', () => {
    const pool = new Pool<string>(configOf({ ...STANDARD_POOL_FIELDS, allowance: 30 }), EPOCH, 0, 1000);
    const first = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1 }));
    pool.reconfigure(configOf({ ...STANDARD_POOL_FIELDS, maxLeaseTokens: 10 }), FULL_AT + MS, []);
    const retried = grantOf(acquire(pool, FULL_AT + 2 * MS, { agentId: 'a', seq: 1 }));
    expect(JSON.stringify(retried)).toBe(JSON.stringify(first));
    expect(retried).toMatchObject({ maxLeaseTokens: 20, allowanceTokens: 30 });
  });

  it('gets the reply a previous owner kept in the store, rate and all', () => {
    const config = configOf({ ...STANDARD_POOL_FIELDS, leaseMode: 'rate' });
    // An owner that writes its changes: one that took the pool over from an empty store.
    const owner = Pool.takeOver<string>(config, EPOCH, 0, null);
    const first = grantOf(acquire(owner, FULL_AT, { agentId: 'a', seq: 1, demandPerSecond: 40 }));
    expect(first.rate).toBeDefined();
    const kept = owner.takeChanges();
    expect(kept?.upserts).toHaveLength(1);
    const next = Pool.takeOver<string>(
      config,
      EPOCH + 1,
      FULL_AT + 10 * MS,
      kept === null ? null : { levelTokens: kept.levelTokens, leases: kept.upserts },
    );
    expect(next.damage).toBeNull();
    const retried = grantOf(acquire(next, FULL_AT + 11 * MS, { agentId: 'a', seq: 1, demandPerSecond: 40 }));
    expect(JSON.stringify(retried)).toBe(JSON.stringify(first));
  });

  it('keeps a concurrency grant’s slotsMax, and nothing while the request is held', () => {
    const table = new LeaseTable('m-');
    const record = table.open('a', SECRET, 4, 1_000, 'anon');
    expect(lastGrantOf(record)).toBeNull();
    const config = configOf({ concurrency: { limit: 10, maxHoldMs: 500 }, leaseTtlMs: 1000, maxLeaseTokens: 10 });
    const sent = rememberGrant(record, grantTermsOf(config, 7), 0, 6, 1000, 250, 3, -1, 0);
    expect(sent).toMatchObject({ seq: 4, leaseId: record.leaseId, tokensHeld: 6, holdMs: 500, slotsMax: 3, retryAfterMs: 250, epoch: 7 });
    expect(sent.rate).toBeUndefined();
    expect(lastGrantOf(record)).toStrictEqual(sent);
  });
});
