import { describe, expect, it } from 'vitest';
import type { LeaseGrant, Reply } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { Pool, type Delivery } from './pool.js';
import { acquireOf, MS, S, SECRET, STANDARD_POOL_FIELDS } from './pool.fixtures.js';
import { RelayCredit } from './relay-credit.js';

/** A relayed pool "p" (the standard fields: capacity 100, TTL 1 s, leases of at most 20) and its credit. */
function relayPool(): { pool: Pool<string>; credit: RelayCredit } {
  const config = parseCoordinatorConfig('relay.yaml', { pools: { p: STANDARD_POOL_FIELDS } });
  const poolConfig = config.pools[0];
  if (poolConfig === undefined) throw new Error('no pool');
  let made: RelayCredit | undefined;
  const pool = new Pool<string>(poolConfig, 1, 0, 0, 0, (c, scale) => (made = new RelayCredit(scale, c.name, 100 * MS)));
  if (made === undefined) throw new Error('no credit');
  return { pool, credit: made };
}

function grantOf(out: Delivery<string>[]): LeaseGrant {
  const reply: Reply | undefined = out[out.length - 1]?.reply;
  if (reply?.kind !== 'grant') throw new Error(`not a grant: ${JSON.stringify(reply)}`);
  return reply;
}

describe('RelayCredit', () => {
  it('grants nothing before the root has granted: acquires are refused unavailable and change nothing', () => {
    const { pool } = relayPool();
    const out: Delivery<string>[] = [];
    pool.acquire(acquireOf({ agentId: 'a', seq: 1 }), 'a', 10 * MS, out, 'anon');
    expect(out[0]?.reply).toMatchObject({ kind: 'error', code: 'unavailable', retryAfterMs: 100 });
    expect(pool.leases.size).toBe(0);
  });

  it('serves only what the root granted, and never refills by itself', () => {
    const { pool, credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 30, tokensHeld: 30, endUs: 5 * S }, 0, 0);
    const out: Delivery<string>[] = [];
    pool.acquire(acquireOf({ agentId: 'a', seq: 1, tokensWanted: 20 }), 'a', 10 * MS, out, 'anon');
    pool.acquire(acquireOf({ agentId: 'b', seq: 1, tokensWanted: 20 }), 'b', 20 * MS, out, 'anon');
    expect(out.map((d) => (d.reply.kind === 'grant' ? d.reply.tokensGranted : -1))).toEqual([20, 10]);
    pool.tick(900 * MS, out);
    expect(credit.levelTokens).toBe(0);
    expect(credit.upstreamReport(pool.leases.boundTokensSum)).toEqual({ leaseId: 'L', tokensLeft: 30 });
  });

  it('cuts downstream TTLs to the upstream lease end, counted from receipt', () => {
    const { pool, credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 40, tokensHeld: 40, endUs: 600 * MS }, 0, 0);
    const out: Delivery<string>[] = [];
    pool.acquire(acquireOf({ agentId: 'a', seq: 1 }), 'a', 100 * MS, out, 'anon');
    expect(grantOf(out).ttlMs).toBe(500);
    expect(pool.leases.get('a')?.expiresAtUs).toBe(600 * MS);
    pool.acquire(acquireOf({ agentId: 'b', seq: 1 }), 'b', 599_500, out, 'anon');
    expect(out[out.length - 1]?.reply).toMatchObject({ kind: 'error', code: 'unavailable' });
  });

  it('drops the level when the upstream lease ends, and a return after that gives nothing back', () => {
    const { pool, credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 40, tokensHeld: 40, endUs: 500 * MS }, 0, 0);
    const out: Delivery<string>[] = [];
    pool.acquire(acquireOf({ agentId: 'a', seq: 1 }), 'a', 0, out, 'anon');
    pool.tick(500 * MS, out);
    expect(credit.levelTokens).toBe(0);
    expect(pool.leases.size).toBe(0);
  });

  it('takes unspent tokens back while the upstream lease lasts', () => {
    const { pool, credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 20, tokensHeld: 20, endUs: 5 * S }, 0, 0);
    const out: Delivery<string>[] = [];
    pool.acquire(acquireOf({ agentId: 'a', seq: 1 }), 'a', 0, out, 'anon');
    const leaseId = grantOf(out).leaseId;
    pool.giveBack({ v: 2, op: 'return', agentId: 'a', pool: 'p', leaseSecret: SECRET, seq: 2, leaseId, tokensLeft: 15 }, 'a', MS, out);
    expect(credit.levelTokens).toBe(15);
    expect(credit.upstreamReport(0).tokensLeft).toBe(15);
  });

  it('adds a renewal of the same lease to the level and keeps the later end', () => {
    const { credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 10, tokensHeld: 10, endUs: 5 * S }, 0, 0);
    credit.applyGrant({ leaseId: 'L', tokensGranted: 5, tokensHeld: 15, endUs: 4 * S }, 0, MS);
    expect(credit.levelTokens).toBe(15);
    expect(credit.leaseEndUs).toBe(5 * S);
  });

  it('refuses a same-lease grant whose bound is below what is left plus what it adds', () => {
    const { credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 10, tokensHeld: 10, endUs: 5 * S }, 0, 0);
    expect(credit.grantProblem({ leaseId: 'L', tokensGranted: 5, tokensHeld: 12, endUs: 5 * S }, 0)).toMatch(/less than/);
    expect(credit.grantProblem({ leaseId: 'L', tokensGranted: 5, tokensHeld: 15, endUs: 5 * S }, 0)).toBeNull();
  });

  it('keeps a new upstream lease aside until every downstream lease of the old one is gone', () => {
    const { pool, credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 20, tokensHeld: 20, endUs: 1 * S }, 0, 0);
    const out: Delivery<string>[] = [];
    pool.acquire(acquireOf({ agentId: 'a', seq: 1, tokensWanted: 10 }), 'a', 0, out, 'anon');
    credit.applyGrant({ leaseId: 'M', tokensGranted: 30, tokensHeld: 30, endUs: 3 * S }, pool.leases.boundTokensSum, 100 * MS);
    expect(credit.levelTokens).toBe(10);
    expect(credit.leaseEndUs).toBe(1 * S);
    expect(credit.upstreamReport(pool.leases.boundTokensSum)).toEqual({ leaseId: 'M', tokensLeft: 30 });
    pool.tick(1 * S, out);
    pool.tick(1 * S + 1, out);
    expect(credit.levelTokens).toBe(30);
    expect(credit.leaseEndUs).toBe(3 * S);
  });

  it('asserts level + Σ bounds within the root’s bound after every step', () => {
    const { credit } = relayPool();
    credit.applyGrant({ leaseId: 'L', tokensGranted: 10, tokensHeld: 10, endUs: 5 * S }, 0, 0);
    expect(() => credit.check(1)).toThrow(/over the root's bound/);
  });
});
