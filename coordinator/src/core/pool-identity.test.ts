/**
 * Identities in a pool: caps per identity on leases, held requests and
 * template pools refuse `unavailable` (`fault: 'peer'`, with a retry hint)
 * and change nothing, while other identities are served; a class (or a
 * fleet weight) claimed by an identity the configuration does not grant it
 * weighs 1, is served, and is counted.
 *
 * Pool "p" is the standard pool of pool.fixtures.ts (capacity 100, 1 token
 * per ms, TTL 1 s, leases ≤ 20, minimum grant 5, holds ≤ 200 ms), full
 * from FULL_AT; each test names the identity each request is sent under.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor, type Reply, type Request } from '@tokenlease/shared';
import { acquireRequest } from '@tokenlease/shared/testing';
import { parseCoordinatorConfig, type CoordinatorConfig, type PoolConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { Pool } from './pool.js';
import type { PersistedLease } from './pool-state.js';
import { FULL_AT, MS, S, SECRET, acquire, grantOf, internals, makePool, tick } from './pool.fixtures.js';

function onlyPool(config: CoordinatorConfig): PoolConfig {
  const pool = config.pools[0];
  if (pool === undefined) throw new Error('no pool');
  return pool;
}

describe('leases per identity', () => {
  it('refuses a new lease beyond maxLeasesPerIdentity (default: half of maxLeases) as the peer’s, and changes nothing', () => {
    const pool = makePool({ fields: { maxLeases: 4 } });
    expect(pool.config.maxLeasesPerIdentity).toBe(2);
    grantOf(acquire(pool, FULL_AT, { agentId: 'm1', seq: 1, tokensWanted: 0, identity: 'mallory' }));
    grantOf(acquire(pool, FULL_AT, { agentId: 'm2', seq: 1, tokensWanted: 0, identity: 'mallory' }));
    const before = internals(pool);
    const [refused] = acquire(pool, FULL_AT, { agentId: 'm3', seq: 1, tokensWanted: 0, identity: 'mallory' });
    expect(refused?.reply).toEqual({
      v: 2,
      kind: 'error',
      seq: 1,
      code: 'unavailable',
      fault: 'peer',
      message: 'identity "mallory" in pool "p" holds its most leases (maxLeasesPerIdentity 2); ask again',
      retryAfterMs: 1000, // one TTL: by then a lease of its own may have lapsed
    });
    expect(internals(pool)).toBe(before);
    // Another identity is served, and a lease already held renews as usual.
    expect(grantOf(acquire(pool, FULL_AT, { agentId: 'h1', seq: 1, identity: 'honest' })).tokensGranted).toBe(20);
    grantOf(acquire(pool, FULL_AT + MS, { agentId: 'm1', seq: 2, tokensWanted: 0, identity: 'mallory' }));
  });

  it('counts a lease against its identity until it is returned or expires', () => {
    const pool = makePool({ fields: { maxLeases: 4 } });
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'm1', seq: 1, identity: 'mallory' }));
    grantOf(acquire(pool, FULL_AT, { agentId: 'm2', seq: 1, tokensWanted: 0, identity: 'mallory' }));
    const returned: Parameters<typeof pool.giveBack>[0] = {
      v: 2,
      op: 'return',
      pool: 'p',
      agentId: 'm1',
      leaseSecret: SECRET,
      seq: 2,
      leaseId: g.leaseId,
      tokensLeft: 20,
    };
    pool.giveBack(returned, 'm1#2', FULL_AT + MS, []);
    grantOf(acquire(pool, FULL_AT + MS, { agentId: 'm3', seq: 1, tokensWanted: 0, identity: 'mallory' }));
    expect(acquire(pool, FULL_AT + MS, { agentId: 'm4', seq: 1, identity: 'mallory' })[0]?.reply).toMatchObject({ fault: 'peer' });
    // m2 and m3 lapse one TTL after their grants: their places are free again.
    tick(pool, FULL_AT + MS + 1 * S);
    expect(pool.leases.leasesOf('mallory')).toBe(0);
    grantOf(acquire(pool, FULL_AT + 1002 * MS, { agentId: 'm4', seq: 1, identity: 'mallory' }));
    expect(pool.leases.leasesOf('mallory')).toBe(1);
  });

  it('takes maxLeasesPerIdentity as configured, up to maxLeases itself (no cap per identity)', () => {
    const pool = makePool({ fields: { maxLeases: 3, maxLeasesPerIdentity: 3 } });
    for (const id of ['a', 'b', 'c']) grantOf(acquire(pool, FULL_AT, { agentId: id, seq: 1, tokensWanted: 0, identity: 'fleet' }));
    // The pool's own cap still speaks for the pool: the coordinator's refusal.
    expect(acquire(pool, FULL_AT, { agentId: 'd', seq: 1, identity: 'other' })[0]?.reply).toMatchObject({
      code: 'unavailable',
      fault: 'coordinator',
    });
  });
});

describe('stored leases and their identities', () => {
  it('counts a stored lease against the identity it names; one stored without an identity loads and counts against none', () => {
    const config = parseCoordinatorConfig('takeover.yaml', { pools: { p: { capacity: 100, refill: '100/s', maxLeases: 4 } } });
    const kept = (agentId: string, identity?: string): PersistedLease => ({
      agentId,
      secret: SECRET,
      leaseId: `1-${agentId}`,
      boundTokens: 5,
      lastSeq: 1,
      lastReply: null,
      ...(identity === undefined ? {} : { identity }),
    });
    const state = { levelTokens: 50, leases: [kept('m1', 'mallory'), kept('m2', 'mallory'), kept('old')] };
    const pool = Pool.takeOver<string>(onlyPool(config), 2, 10 * S, state);
    expect(pool.damage).toBeNull();
    expect([pool.leases.size, pool.leases.leasesOf('mallory'), pool.leases.get('old')?.identity]).toEqual([3, 2, null]);
    expect(acquire(pool, 10 * S, { agentId: 'm3', seq: 1, identity: 'mallory' })[0]?.reply).toMatchObject({ fault: 'peer' });
    expect(grantOf(acquire(pool, 10 * S, { agentId: 'h1', seq: 1, identity: 'honest' })).tokensGranted).toBe(10);
  });
});

describe('held requests per identity', () => {
  it('refuses a hold beyond maxWaitingPerIdentity (default: half of maxWaiting) as the peer’s, and changes nothing', () => {
    const pool = makePool({ fields: { maxWaiting: 4 } });
    expect(pool.config.maxWaitingPerIdentity).toBe(2);
    // Drain the level so that requests wait.
    for (const id of ['a', 'b', 'c', 'd', 'e']) grantOf(acquire(pool, FULL_AT, { agentId: id, seq: 1, tokensWanted: 20 }));
    expect(acquire(pool, FULL_AT, { agentId: 'w1', seq: 1, holdMs: 200, identity: 'mallory' })).toEqual([]);
    expect(acquire(pool, FULL_AT, { agentId: 'w2', seq: 1, holdMs: 200, identity: 'mallory' })).toEqual([]);
    const before = internals(pool);
    const [refused] = acquire(pool, FULL_AT, { agentId: 'w3', seq: 1, holdMs: 200, identity: 'mallory' });
    expect(refused?.reply).toMatchObject({
      code: 'unavailable',
      fault: 'peer',
      message: 'identity "mallory" in pool "p" has its most requests waiting (maxWaitingPerIdentity 2); ask again',
      retryAfterMs: 200,
    });
    expect(internals(pool)).toBe(before);
    // Another identity still waits its turn.
    expect(acquire(pool, FULL_AT, { agentId: 'h1', seq: 1, holdMs: 200, identity: 'honest' })).toEqual([]);
    expect(pool.heldRequests().map((w) => w.record.agentId)).toEqual(['w1', 'w2', 'h1']);
    // Once its holds are answered, the identity may wait again.
    tick(pool, FULL_AT + 200 * MS);
    expect(pool.heldRequests()).toEqual([]);
    const again = acquire(pool, FULL_AT + 200 * MS, { agentId: 'w1', seq: 2, holdMs: 200, identity: 'mallory' });
    expect(again.filter((d) => d.reply.kind === 'error')).toEqual([]);
  });
});

describe('classes bound to identities', () => {
  const fields = {
    classWeights: { premium: 4, open: 2 },
    relayClasses: { edge: 50 },
    classIdentities: { premium: ['svc'], edge: ['relay'] },
  };

  it('weighs a class claimed by an identity not granted it as 1, serves it, and counts it', () => {
    const pool = makePool({ fields });
    for (const id of ['a', 'b', 'c', 'd', 'e']) grantOf(acquire(pool, FULL_AT, { agentId: id, seq: 1, tokensWanted: 20 }));
    const held = (agentId: string, identity: string, claim: Partial<Request & { op: 'acquire' }>): void => {
      expect(acquire(pool, FULL_AT, { agentId, seq: 1, holdMs: 200, identity, ...claim })).toEqual([]);
    };
    held('false', 'mallory', { agentClass: 'premium' });
    held('true', 'svc', { agentClass: 'premium' });
    held('any', 'anyone', { agentClass: 'open' });
    held('relay-false', 'mallory', { agentClass: 'edge', fleetWeight: 40 });
    held('relay-true', 'relay', { agentClass: 'edge', fleetWeight: 40 });
    const turns = pool.heldRequests().map((w) => [w.record.agentId, w.record.weight, w.record.agentClass, w.thresholdTokens]);
    expect(turns).toEqual([
      ['false', 1, null, 5],
      ['true', 4, 'premium', 20],
      ['any', 2, 'open', 10],
      ['relay-false', 1, null, 5],
      ['relay-true', 40, 'edge', 20],
    ]);
    expect(pool.takeTally().classClaimsRefused).toBe(2);
    expect(pool.takeTally().classClaimsRefused).toBe(0);
  });

  it('takes the top-level classIdentities for every pool; a pool’s own entry for a class replaces it', () => {
    const config = parseCoordinatorConfig('classes.yaml', {
      classIdentities: { premium: ['svc'], gold: ['svc'] },
      pools: {
        p: { capacity: 10, refill: '10/s', classWeights: { premium: 4, gold: 2 }, classIdentities: { gold: ['other'] } },
      },
    });
    expect(config.pools[0]?.classIdentities).toEqual(
      new Map([
        ['premium', new Set(['svc'])],
        ['gold', new Set(['other'])],
      ]),
    );
  });
});

describe('through the coordinator core', () => {
  const MALLORY = 'mallory';

  it('applies new caps per identity and class grants in place on a reload: no lease is renewed under a new id', () => {
    const doc = (fields: Record<string, unknown>): CoordinatorConfig =>
      parseCoordinatorConfig('reload.yaml', {
        quietPeriodMs: 1000,
        pools: { api: { capacity: 100, refill: '100/s', leaseTtlMs: 1000, classWeights: { premium: 4 }, ...fields } },
      });
    const core = new CoordinatorCore<string>(doc({}), 1, 0);
    const first = send(core, acquireRequest({ pool: 'api', agentId: 'svc.a', leaseSecret: SECRET, agentClass: 'premium' }), 'svc', 2 * S);
    expect(first).toMatchObject({ kind: 'grant' });
    const summary = core.reconfigure(doc({ maxLeasesPerIdentity: 1, classIdentities: { premium: ['other'] } }), 2 * S, () => undefined);
    expect(summary.changed).toEqual(['api']);
    const leaseId = first.kind === 'grant' ? first.leaseId : null;
    const renewal = acquireRequest({ pool: 'api', agentId: 'svc.a', leaseSecret: SECRET, seq: 2, leaseId, agentClass: 'premium' });
    expect(send(core, renewal, 'svc', 2 * S + MS)).toMatchObject({ kind: 'grant', leaseId });
    expect(core.pool('api')?.leases.get('svc.a')?.weight).toBe(1);
    expect(send(core, acquireRequest({ pool: 'api', agentId: 'svc.b', leaseSecret: SECRET }), 'svc', 2 * S + MS)).toMatchObject({
      code: 'unavailable',
      fault: 'peer',
    });
  });

  function send(c: CoordinatorCore<string>, req: Request, identity: string, nowUs: number): Reply {
    const out = c.receive(subjectFor('tokenlease', req.op, req.pool, identity), encodeMessage(req), 'to', nowUs);
    expect(out).toHaveLength(1);
    return (out[0] as { reply: Reply }).reply;
  }

  it('keeps one identity opening 0-token leases under fresh ids from locking a new agent of another out', () => {
    const config = parseCoordinatorConfig('exhaustion.yaml', {
      bindIdentity: true,
      quietPeriodMs: 1000,
      pools: { api: { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeases: 200 } },
    });
    const core = new CoordinatorCore<string>(config, 1, 0);
    const codes = new Map<string, number>();
    for (let i = 0; i < 300; i += 1) {
      const req = acquireRequest({ pool: 'api', agentId: `${MALLORY}.${i}`, seq: 1, leaseSecret: SECRET, tokensWanted: 0 });
      const reply = send(core, req, MALLORY, 2 * S);
      const key = reply.kind === 'error' ? `${reply.code}/${reply.fault}` : reply.kind;
      codes.set(key, (codes.get(key) ?? 0) + 1);
    }
    expect(Object.fromEntries(codes)).toEqual({ grant: 100, 'unavailable/peer': 200 });
    const asked = acquireRequest({ pool: 'api', agentId: 'honest.a', seq: 1, leaseSecret: SECRET, tokensWanted: 10 });
    const honest = send(core, asked, 'honest', 2 * S);
    expect(honest).toMatchObject({ kind: 'grant', tokensGranted: 10 });
  });

  it('refuses a template pool beyond maxPoolsPerIdentity (default: half of maxPools) until one of its pools is forgotten', () => {
    const config = parseCoordinatorConfig('templates.yaml', {
      quietPeriodMs: 1000,
      templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, idleEvictMs: 2000, maxPools: 4 } },
    });
    const core = new CoordinatorCore<string>(config, 1, 0);
    const make = (pool: string, identity: string, nowUs: number): Reply =>
      send(core, acquireRequest({ pool, agentId: `${identity}.a`, seq: 1, leaseSecret: SECRET, tokensWanted: 0 }), identity, nowUs);
    expect(make('tenant:m1', MALLORY, 5 * S)).toMatchObject({ kind: 'grant' });
    expect(make('tenant:m2', MALLORY, 5 * S)).toMatchObject({ kind: 'grant' });
    expect(make('tenant:m3', MALLORY, 5 * S)).toEqual({
      v: 2,
      kind: 'error',
      seq: 1,
      code: 'unavailable',
      fault: 'peer',
      message: 'pool "tenant:m3": identity "mallory" made as many pools of template "tenant:*" as one identity may (maxPoolsPerIdentity)',
      retryAfterMs: 1000,
    });
    expect(core.pool('tenant:m3')).toBeUndefined();
    // Another identity makes one; a pool mallory made is used by others and still counts as its.
    expect(make('tenant:h1', 'honest', 5 * S)).toMatchObject({ kind: 'grant' });
    expect(make('tenant:m1', 'honest', 5 * S)).toMatchObject({ kind: 'grant' });
    // Idle and full for idleEvictMs (the 0-token leases lapse at 6 s): forgotten, and mallory may make another.
    core.tick(9 * S);
    expect(core.poolCount).toBe(0);
    expect(make('tenant:m3', MALLORY, 9 * S)).toMatchObject({ kind: 'grant' });
  });
});
