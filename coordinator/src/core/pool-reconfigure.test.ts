/**
 * Reconfiguration of a live pool (pool-reconfigure.ts), instant by instant
 * on the standard pool of pool.fixtures.ts (B 100, r 1 token/ms, TTL 1 s,
 * leases ≤ 20), and the registry's added, removed and changed pools.
 */
import { describe, expect, it } from 'vitest';
import { decodeReply, encodeMessage, subjectFor, type LeaseReturn } from '@tokenlease/shared';
import { acquireRequest } from '@tokenlease/shared/testing';
import { parseCoordinatorConfig, type PoolConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { configDiff, convertRate, samePoolConfig } from './pool-reconfigure.js';
import type { Delivery, Pool } from './pool.js';
import {
  acquire,
  credit,
  FULL_AT,
  grantOf,
  makePool,
  MS,
  poolWithLease,
  S,
  SECRET,
  STANDARD_POOL_FIELDS,
  status,
  tick,
} from './pool.fixtures.js';

function configOf(fields: Readonly<Record<string, unknown>>): PoolConfig {
  const config = parseCoordinatorConfig('test.yaml', { pools: { p: { ...STANDARD_POOL_FIELDS, ...fields } } }).pools[0];
  if (config === undefined) throw new Error('no pool');
  return config;
}

function reconfigure(pool: Pool<string>, nowUs: number, fields: Readonly<Record<string, unknown>>): Delivery<string>[] {
  const out: Delivery<string>[] = [];
  pool.reconfigure(configOf(fields), nowUs, out);
  return out;
}

function giveBack(pool: Pool<string>, nowUs: number, fields: Partial<LeaseReturn> & { leaseId: string; seq: number }): Delivery<string>[] {
  const out: Delivery<string>[] = [];
  pool.giveBack({ v: 2, op: 'return', agentId: 'a', pool: 'p', leaseSecret: SECRET, tokensLeft: 0, ...fields }, 'ret', nowUs, out);
  return out;
}

describe('a pool reconfigured while it serves', () => {
  it('renews no lease of the old configuration under its id: the next acquire opens a new lease with the new limits', () => {
    const { pool, leaseId } = poolWithLease(20);
    expect(reconfigure(pool, FULL_AT + 10 * MS, { capacity: 200, maxLeaseTokens: 40 })).toEqual([]);
    const g = grantOf(acquire(pool, FULL_AT + 20 * MS, { agentId: 'a', seq: 2, leaseId, tokensLeft: 15, tokensWanted: 40 }));
    expect(g.leaseId).not.toBe(leaseId);
    expect(g).toMatchObject({ capacityTokens: 200, maxLeaseTokens: 40, tokensGranted: 40, tokensHeld: 40 });
    // What the agent may still spend of the old lease (15) stays counted beside the new one until the old expiry.
    expect(credit(status(pool, FULL_AT + 20 * MS)).leased).toBe(55);
    // The old lease was granted at FULL_AT with a TTL of 1 s.
    expect(credit(status(pool, FULL_AT + 1 * S - 1)).leased).toBe(55);
    expect(credit(status(pool, FULL_AT + 1 * S)).leased).toBe(40);
    // Renewals naming the new lease keep it.
    const renewal = grantOf(acquire(pool, FULL_AT + 1 * S, { agentId: 'a', seq: 3, leaseId: g.leaseId, tokensLeft: 30, tokensWanted: 5 }));
    expect(renewal).toMatchObject({ leaseId: g.leaseId, tokensHeld: 35 });
  });

  it('forgets the retired part as soon as the agent names its new lease (it dropped the old balance before)', () => {
    const { pool, leaseId } = poolWithLease(20);
    reconfigure(pool, FULL_AT, { refill: '2000/s' });
    const g = grantOf(acquire(pool, FULL_AT + 1 * MS, { agentId: 'a', seq: 2, leaseId, tokensLeft: 20, tokensWanted: 10 }));
    expect(credit(status(pool, FULL_AT + 1 * MS)).leased).toBe(30);
    grantOf(acquire(pool, FULL_AT + 2 * MS, { agentId: 'a', seq: 3, leaseId: g.leaseId, tokensLeft: 4, tokensWanted: 0 }));
    expect(credit(status(pool, FULL_AT + 2 * MS)).leased).toBe(4);
  });

  it('answers a retry of the last request before the change with its original reply, under the old lease id', () => {
    const pool = makePool();
    const first = acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 10 });
    reconfigure(pool, FULL_AT + 1 * MS, { capacity: 50 });
    const retry = acquire(pool, FULL_AT + 2 * MS, { agentId: 'a', seq: 1, tokensWanted: 10 }, 'retry');
    expect(retry).toEqual([{ to: 'retry', reply: first[0]?.reply, repeat: true, grantFor: { agentId: 'a', pool: 'p' } }]);
  });

  it('answers held requests under the old configuration before the change', () => {
    const pool = makePool();
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 20 }));
    for (const [i, id] of ['b', 'c', 'd', 'e'].entries()) acquire(pool, FULL_AT + 1 * MS, { agentId: id, seq: 1 + i, tokensWanted: 20 });
    acquire(pool, FULL_AT + 1 * MS, { agentId: 'f', seq: 1, tokensWanted: 20, holdMs: 200 });
    expect(pool.heldRequests()).toHaveLength(1);
    const out = reconfigure(pool, FULL_AT + 5 * MS, { capacity: 300, maxLeaseTokens: 60 });
    expect(out).toHaveLength(1);
    expect(out[0]?.reply).toMatchObject({ kind: 'grant', capacityTokens: 100 });
    expect(pool.heldRequests()).toHaveLength(0);
  });

  it('a smaller capacity: the level is clipped beside the old leases and nothing refills until credit is under the new B', () => {
    const { pool, leaseId } = poolWithLease(20);
    expect(credit(status(pool, FULL_AT))).toEqual({ level: 80, leased: 20, leases: 1 });
    reconfigure(pool, FULL_AT, { capacity: 30, maxLeaseTokens: 10, minGrantTokens: 2 });
    expect(credit(status(pool, FULL_AT))).toEqual({ level: 10, leased: 20, leases: 1 });
    expect(credit(status(pool, FULL_AT + 100 * MS))).toEqual({ level: 10, leased: 20, leases: 1 });
    // A return drops what would pass B + A beside the leases left: credit stays at 30.
    expect(giveBack(pool, FULL_AT + 100 * MS, { seq: 2, leaseId, tokensLeft: 20 })).toMatchObject([{ reply: { tokensReturned: 20 } }]);
    expect(credit(status(pool, FULL_AT + 100 * MS))).toEqual({ level: 30, leased: 0, leases: 0 });
    const g = grantOf(acquire(pool, FULL_AT + 101 * MS, { agentId: 'b', seq: 1, tokensWanted: 20 }));
    expect(g).toMatchObject({ tokensGranted: 10, capacityTokens: 30, maxLeaseTokens: 10 });
  });

  it('a larger capacity and refill: the level refills at the new rate up to the new B', () => {
    const pool = makePool();
    status(pool, FULL_AT);
    reconfigure(pool, FULL_AT, { capacity: 400, refill: '2000/s', maxLeaseTokens: 40 });
    expect(status(pool, FULL_AT + 50 * MS).levelTokens).toBe(200);
    expect(status(pool, FULL_AT + 1 * S).levelTokens).toBe(400);
  });

  it('keeps the quiet period of a start: a pool reconfigured while quiet grants nothing until its end', () => {
    const pool = makePool();
    reconfigure(pool, 500 * MS, { capacity: 50 });
    expect(grantOf(acquire(pool, 900 * MS, { agentId: 'a', seq: 1 })).tokensGranted).toBe(0);
    expect(status(pool, 1 * S + 10 * MS).levelTokens).toBe(10);
  });

  it('a rate lease kept into a chunk pool keeps its rate out of the refill until it renews', () => {
    const pool = makePool({ fields: { leaseMode: 'rate' } });
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 20, demandPerSecond: 900 }));
    expect(g.rate?.tokensPerPeriod).toBeGreaterThan(0);
    const before = pool.parts.leases.ratePerPeriodSum;
    reconfigure(pool, FULL_AT + 1 * MS, { leaseMode: 'chunk' });
    expect(pool.parts.leases.ratePerPeriodSum).toBe(before);
    const next = grantOf(acquire(pool, FULL_AT + 2 * MS, { agentId: 'a', seq: 2, leaseId: g.leaseId, tokensLeft: 1, tokensWanted: 5 }));
    expect(next.leaseId).not.toBe(g.leaseId);
    expect(next.rate).toBeUndefined();
    expect(pool.parts.leases.ratePerPeriodSum).toBe(0);
    tick(pool, FULL_AT + 2 * S);
    pool.parts.credit.check(pool.parts.leases.boundTokensSum);
  });
});

describe('rates converted to a new refill period', () => {
  it.each<[number, number, number, number]>([
    [10, 1000, 1000, 10],
    [10, 1000, 2000, 20],
    [10, 3000, 1000, 4],
    [1, 1_000_000, 1, 1],
  ])('%i per %i µs is %i per… %i', (rate, from, to, want) => expect(convertRate(rate, from, to)).toBe(want));

  it('tells equal configurations apart from changed ones, weights included', () => {
    expect(samePoolConfig(configOf({}), configOf({}))).toBe(true);
    expect(samePoolConfig(configOf({ classWeights: { a: 2 } }), configOf({ classWeights: { a: 3 } }))).toBe(false);
    expect(samePoolConfig(configOf({}), configOf({ refill: '1000/1000ms' }))).toBe(true);
    expect(samePoolConfig(configOf({ relayClasses: { r: 20 } }), configOf({ relayClasses: { r: 20 } }))).toBe(true);
    expect(samePoolConfig(configOf({ relayClasses: { r: 20 } }), configOf({ relayClasses: { r: 30 } }))).toBe(false);
    expect(samePoolConfig(configOf({ relayClasses: { r: 20 } }), configOf({}))).toBe(false);
  });
});

describe('a coordinator given a new configuration', () => {
  const PREFIX = 'tokenlease';
  const doc = (pools: Record<string, unknown>, templates: Record<string, unknown> = {}): ReturnType<typeof parseCoordinatorConfig> =>
    parseCoordinatorConfig('test.yaml', { quietPeriodMs: 1000, pools, templates });
  const bytes = (value: object): Uint8Array => encodeMessage(value as never);
  const ask = (core: CoordinatorCore<string>, op: 'acquire' | 'status', pool: string, nowUs: number, seq = 1): Delivery<string>[] => {
    const req = op === 'status' ? { v: 2, op, pool } : { ...acquireRequest({ pool, leaseSecret: SECRET, seq, demandPerSecond: 0 }), op };
    return core.receive(subjectFor(PREFIX, op, pool), bytes(req), `${op}-${seq}`, nowUs);
  };

  it('adds, changes and removes pools; a removed pool grants nothing and is forgotten once its leases lapsed', () => {
    const core = new CoordinatorCore<string>(doc({ a: STANDARD_POOL_FIELDS, b: STANDARD_POOL_FIELDS }), 1, 0);
    expect(ask(core, 'acquire', 'b', 2 * S)[0]?.reply).toMatchObject({ kind: 'grant', tokensGranted: 5 });
    const summary = core.reconfigure(doc({ a: { ...STANDARD_POOL_FIELDS, capacity: 50 }, c: STANDARD_POOL_FIELDS }), 2 * S, () => {
      throw new Error('nothing was held');
    });
    expect(summary).toEqual({ added: ['c'], removed: ['b'], changed: ['a'], rekinded: [] });
    expect(ask(core, 'acquire', 'b', 2 * S, 2)[0]?.reply).toMatchObject({ kind: 'error', code: 'unknown-pool' });
    expect(ask(core, 'status', 'b', 2 * S)[0]?.reply).toMatchObject({ kind: 'status', leases: 1 });
    // A pool added is made as at the coordinator's start: long after the quiet period, it is full.
    expect(ask(core, 'acquire', 'c', 2 * S)[0]?.reply).toMatchObject({ kind: 'grant', tokensGranted: 5 });
    expect([...core.held()].map((h) => [h.name, h.kind])).toEqual([
      ['a', 'configured'],
      ['c', 'configured'],
      ['b', 'removed'],
    ]);
    core.tick(3 * S + 1);
    expect(core.pool('b')).toBeDefined();
    // Forgotten once its level is full again (5 ms at 1 token/ms): a pool made later starts full, as it was.
    core.tick(3 * S + 10 * MS);
    expect(core.pool('b')).toBeUndefined();
  });

  it('tells what a file changes, whichever pools a coordinator holds (durable mode: made when adopted, not by a reload)', () => {
    const before = doc({ a: STANDARD_POOL_FIELDS, b: STANDARD_POOL_FIELDS }, { 't:*': STANDARD_POOL_FIELDS });
    const after = doc({ a: { ...STANDARD_POOL_FIELDS, capacity: 50 }, c: STANDARD_POOL_FIELDS }, { 't:*': STANDARD_POOL_FIELDS });
    expect(configDiff(before, after)).toEqual({ added: ['c'], removed: ['b'], changed: ['a'], otherChanged: false });
    expect(configDiff(before, before)).toEqual({ added: [], removed: [], changed: [], otherChanged: false });
    expect(
      configDiff(before, doc({ a: STANDARD_POOL_FIELDS, b: STANDARD_POOL_FIELDS }, { 't:*': { ...STANDARD_POOL_FIELDS, capacity: 99 } }))
        .otherChanged,
    ).toBe(true);
    const durable = new CoordinatorCore<string>(before, 0, 0, true);
    expect(durable.reconfigure(after, 1, () => undefined)).toEqual({ added: [], removed: [], changed: [], rekinded: [] });
  });

  it('refuses a new subject prefix whole', () => {
    const core = new CoordinatorCore<string>(doc({ a: STANDARD_POOL_FIELDS }), 1, 0);
    const other = parseCoordinatorConfig('test.yaml', { subjectPrefix: 'other', pools: { a: STANDARD_POOL_FIELDS } });
    expect(core.reconfigureProblem(other)).toMatch(/subjectPrefix/);
    expect(core.reconfigureProblem(doc({ z: STANDARD_POOL_FIELDS }))).toBeNull();
  });

  it('template pools follow their template; a name configured by name is taken over as a configured pool', () => {
    const tpl = { 'tenant:*': STANDARD_POOL_FIELDS };
    const core = new CoordinatorCore<string>(doc({ a: STANDARD_POOL_FIELDS }, tpl), 1, 0);
    ask(core, 'acquire', 'tenant:x', 2 * S);
    ask(core, 'acquire', 'tenant:y', 2 * S);
    const summary = core.reconfigure(
      doc(
        { a: STANDARD_POOL_FIELDS, 'tenant:y': { ...STANDARD_POOL_FIELDS, capacity: 7, maxLeaseTokens: 7, minGrantTokens: 1 } },
        {
          'tenant:*': { ...STANDARD_POOL_FIELDS, capacity: 300 },
        },
      ),
      2 * S,
      () => undefined,
    );
    expect(summary).toEqual({ added: [], removed: [], changed: ['tenant:y', 'tenant:x'], rekinded: ['tenant:y'] });
    expect(core.pool('tenant:x')?.config.capacity).toBe(300);
    expect(core.pool('tenant:y')?.config.capacity).toBe(7);
    expect(core.kindOf('tenant:y')).toBe('fixed');
  });

  it('lists its pools a page at a time, in name order, read without ticking', () => {
    const core = new CoordinatorCore<string>(
      doc({ b: STANDARD_POOL_FIELDS, a: STANDARD_POOL_FIELDS, c: STANDARD_POOL_FIELDS }),
      1,
      0,
      false,
      'c1',
    );
    const list = (after?: string): unknown => {
      const query = { v: 2, op: 'pools', pool: '_', limit: 2, ...(after === undefined ? {} : { after }) };
      const out = core.receive(subjectFor(PREFIX, 'pools', '_'), bytes(query), 'ops', 2 * S);
      const decoded = decodeReply(encodeMessage(out[0]?.reply as never));
      return decoded.ok ? decoded.value : decoded;
    };
    expect(list()).toMatchObject({
      kind: 'pools',
      coordinator: 'c1',
      next: 'b',
      pools: [{ pool: 'a', kind: 'configured' }, { pool: 'b' }],
    });
    expect(list('b')).toMatchObject({ next: null, pools: [{ pool: 'c', capacityTokens: 100, quietMs: 0 }] });
  });
});
