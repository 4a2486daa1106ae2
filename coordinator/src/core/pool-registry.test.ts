/**
 * Template pools: made on first use, with the coordinator's quiet period,
 * refused beyond maxPools, forgotten once idle and full, and made again
 * full, at fixed instants through CoordinatorCore.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor, type Reply, type Request } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { CoordinatorError } from '../errors.js';
import { SECRET } from './pool.fixtures.js';

const MS = 1000;
const S = 1_000_000;

function core(maxPools = 3): CoordinatorCore<string> {
  const config = parseCoordinatorConfig('templates.yaml', {
    quietPeriodMs: 1000,
    pools: { 'tenant:vip': { capacity: 500, refill: '500/s', leaseTtlMs: 1000, maxLeaseTokens: 50 } },
    templates: {
      'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, maxLeaseTokens: 5, idleEvictMs: 2000, maxPools },
      'tenant:gold:*': { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 20 },
    },
  });
  return new CoordinatorCore<string>(config, 1, 0);
}

function send(c: CoordinatorCore<string>, req: Request, nowUs: number): Reply {
  const out = c.receive(subjectFor('tokenlease', req.op, req.pool), encodeMessage(req), 'to', nowUs);
  expect(out).toHaveLength(1);
  return (out[0] as { reply: Reply }).reply;
}

const acquire = (pool: string, agentId = 'a', seq = 1, tokensWanted = 5): Request => ({
  v: 2,
  op: 'acquire',
  leaseSecret: SECRET,
  agentId,
  pool,
  seq,
  leaseId: null,
  tokensLeft: 0,
  tokensWanted,
  demandPerSecond: 0,
  holdMs: 0,
});

describe('template pools', () => {
  it('are made on first use with the template of the longest matching prefix; a named pool wins', () => {
    const c = core();
    expect(c.poolCount).toBe(1);
    expect(send(c, acquire('tenant:acme'), 5 * S)).toMatchObject({ kind: 'grant', tokensGranted: 5, capacityTokens: 10 });
    expect(send(c, acquire('tenant:gold:bigco'), 5 * S)).toMatchObject({ kind: 'grant', capacityTokens: 100 });
    expect(send(c, acquire('tenant:vip'), 5 * S)).toMatchObject({ kind: 'grant', capacityTokens: 500 });
    expect(c.poolCount).toBe(3);
  });

  it('refuse names matching no template, and a status query never makes one', () => {
    const c = core();
    expect(send(c, acquire('other:acme'), 5 * S)).toMatchObject({ kind: 'error', code: 'unknown-pool' });
    expect(send(c, acquire('tenant:'), 5 * S)).toMatchObject({ kind: 'error', code: 'unknown-pool' });
    expect(send(c, { v: 2, op: 'status', pool: 'tenant:acme' }, 5 * S)).toMatchObject({ kind: 'error', code: 'unknown-pool' });
    expect(c.poolCount).toBe(1);
  });

  it('obey the quiet period of the coordinator’s start', () => {
    const c = core();
    expect(send(c, acquire('tenant:early'), 500 * MS)).toMatchObject({ kind: 'grant', tokensGranted: 0 });
  });

  it('stop at maxPools with a typed refusal', () => {
    const c = core(2);
    send(c, acquire('tenant:a'), 5 * S);
    send(c, acquire('tenant:b'), 5 * S);
    expect(send(c, acquire('tenant:c'), 5 * S)).toMatchObject({ kind: 'error', code: 'unavailable', fault: 'peer' });
  });

  it('are forgotten once idle and full for idleEvictMs, and come back full', () => {
    const c = core(1);
    const g = send(c, acquire('tenant:a'), 5 * S);
    if (g.kind !== 'grant') throw new Error('expected a grant');
    c.tick(6 * S);
    expect(c.poolCount).toBe(2); // the lease is still live
    send(c, { v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'tenant:a', seq: 2, leaseId: g.leaseId, tokensLeft: 5 }, 6 * S);
    c.tick(7 * S);
    expect(c.poolCount).toBe(2); // idle and full, but not for 2 s yet
    c.tick(8 * S);
    expect(c.poolCount).toBe(1);
    expect(c.pool('tenant:a')).toBeUndefined();
    expect(send(c, acquire('tenant:a', 'b'), 8 * S)).toMatchObject({ kind: 'grant', tokensGranted: 5 });
    expect(c.pool('tenant:a')?.status(8 * S, []).levelTokens).toBe(5);
  });

  it('are not forgotten while not full', () => {
    const c = core();
    const g = send(c, acquire('tenant:a'), 5 * S);
    if (g.kind !== 'grant') throw new Error('expected a grant');
    // The lease lapses at 6 s; its 5 tokens are lost and refill at 10/s takes until 6.5 s.
    c.tick(7 * S);
    expect(c.poolCount).toBe(2);
    c.tick(8.6 * S);
    expect(c.poolCount).toBe(1);
  });
});

describe('template configuration', () => {
  it.each<[string, unknown, string]>([
    ['a key without "*"', { templates: { 'tenant:': { capacity: 1, refill: '1/s' } } }, 'followed by "*"'],
    ['a key with a dot', { templates: { 'a.b*': { capacity: 1, refill: '1/s' } } }, 'name'],
    [
      'idleEvictMs shorter than the TTL',
      { templates: { 't:*': { capacity: 1, refill: '1/s', leaseTtlMs: 5000, idleEvictMs: 1000 } } },
      'idleEvictMs',
    ],
    ['an unknown field', { templates: { 't:*': { capacity: 1, refill: '1/s', maxPool: 3 } } }, 'maxPool'],
  ])('refuses %s', (_name, doc, fragment) => {
    expect(() => parseCoordinatorConfig('t.yaml', doc)).toThrow(CoordinatorError);
    expect(() => parseCoordinatorConfig('t.yaml', doc)).toThrow(fragment);
  });

  it('fills defaults and lets templates stand alone', () => {
    const config = parseCoordinatorConfig('t.yaml', { templates: { 'tenant:*': { capacity: 10, refill: '10/s' } } });
    expect(config.pools).toEqual([]);
    expect(config.templates[0]).toMatchObject({
      prefix: 'tenant:',
      idleEvictMs: 60_000,
      maxPools: 100_000,
      pool: { name: 'tenant:*', capacity: 10 },
    });
    expect(config.quietPeriodMs).toBe(2000);
  });
});

describe('classWeights configuration', () => {
  it.each<[string, unknown]>([
    ['weight 0', { premium: 0 }],
    ['a fractional weight', { premium: 1.5 }],
    ['a weight over 1000', { premium: 1001 }],
    ['a class with a space', { 'pre mium': 2 }],
    ['a list', [2]],
  ])('refuses %s naming the field', (_name, classWeights) => {
    const doc = { pools: { api: { capacity: 10, refill: '10/s', classWeights } } };
    expect(() => parseCoordinatorConfig('w.yaml', doc)).toThrow(/pool "api": field "classWeights"/);
  });
});

describe('relayClasses configuration', () => {
  it('reads a class relays ask under with the most weight it may claim', () => {
    const doc = { pools: { api: { capacity: 10, refill: '10/s', classWeights: { premium: 2 }, relayClasses: { 'relay-eu': 500 } } } };
    const pool = parseCoordinatorConfig('w.yaml', doc).pools[0];
    expect(pool?.relayClasses).toEqual(new Map([['relay-eu', 500]]));
    expect(parseCoordinatorConfig('w.yaml', { pools: { api: { capacity: 10, refill: '10/s' } } }).pools[0]?.relayClasses.size).toBe(0);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['weight 0', { relayClasses: { r: 0 } }, /integer in \[1, 1000000\]/],
    ['a weight over 10^6', { relayClasses: { r: 1_000_001 } }, /integer in \[1, 1000000\]/],
    ['a class with a space', { relayClasses: { 'r 1': 2 } }, /class "r 1"/],
    ['a list', { relayClasses: [2] }, /mapping/],
    ['a class also in classWeights', { classWeights: { r: 2 }, relayClasses: { r: 20 } }, /also in classWeights/],
    ['a rate pool', { leaseMode: 'rate', relayClasses: { r: 20 } }, /chunk pools/],
  ])('refuses %s naming the field', (_name, fields, problem) => {
    const doc = { pools: { api: { capacity: 10, refill: '10/s', ...fields } } };
    expect(() => parseCoordinatorConfig('w.yaml', doc)).toThrow(/pool "api": field "relayClasses"/);
    expect(() => parseCoordinatorConfig('w.yaml', doc)).toThrow(problem);
  });

  it('cost a tick nothing while idle: only the pools due are ticked, and an idle one is forgotten when its time comes', () => {
    const config = parseCoordinatorConfig('templates.yaml', {
      quietPeriodMs: 1000,
      pools: {},
      templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, maxLeaseTokens: 5, idleEvictMs: 60_000 } },
    });
    const c = new CoordinatorCore<string>(config, 1, 0);
    for (let i = 0; i < 500; i += 1) expect(send(c, acquire(`tenant:t${i}`), 5 * S)).toMatchObject({ kind: 'grant' });
    // Every lease expires and is reclaimed: 500 idle pools, each forgotten 60 s after its last use.
    c.tick(8 * S);
    expect(c.nextDeadlineUs()).toBe(65 * S);
    let ticked = 0;
    for (let i = 0; i < 500; i += 1) {
      const pool = c.pool(`tenant:t${i}`);
      if (pool === undefined) throw new Error(`tenant:t${i} is gone`);
      const tickOf = pool.tick.bind(pool);
      pool.tick = (nowUs, out) => {
        ticked += 1;
        tickOf(nowUs, out);
      };
    }
    for (let t = 8 * S; t < 9 * S; t += 100 * MS) c.tick(t);
    expect(ticked).toBe(0);
    c.wake('tenant:t7');
    c.tick(9 * S);
    expect(ticked).toBe(1);
    c.tick(65 * S);
    expect(ticked).toBe(501);
    expect(c.poolCount).toBe(0);
    expect(c.nextDeadlineUs()).toBe(Infinity);
  });
});
