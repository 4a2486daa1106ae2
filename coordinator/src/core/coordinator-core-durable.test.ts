/**
 * CoordinatorCore in durable mode, at fixed instants (µs): it holds only the
 * pools it was given (`adopt`), each with the epoch of its ownership, and
 * forgets those it lost (`release`, answering their held requests
 * `not-owner`). Also `kindOf`, `takeEvicted` and the per-pool batches of
 * `tickEach` / `flushEach`.
 *
 * Pools: "p", the standard pool of pool.fixtures.ts (capacity 100, 1 token
 * per ms, TTL 1 s, leases ≤ 20, minimum grant 5, holds ≤ 200 ms); "q"
 * (capacity 10, 10/s = 1 token per 100 ms, leases ≤ 1, holds ≤ 125 ms);
 * "tenant:vip", configured though it matches the template "tenant:*"
 * (capacity 10, leases ≤ 5, idle eviction after 2 s, at most 2 pools). The
 * core starts at 0 with a quiet period of 1 s.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor, TokenleaseError, type LeaseRequest, type Reply, type Request } from '@tokenlease/shared';
import { thrown } from '@tokenlease/shared/testing';
import { parseCoordinatorConfig, type CoordinatorConfig } from './config.js';
import { CoordinatorCore, notOwner } from './coordinator-core.js';
import type { Delivery } from './pool.js';
import { MS, S, STANDARD_POOL_FIELDS, acquireOf, grantOf, type AcquireFields } from './pool.fixtures.js';
import type { PersistedPool } from './pool-state.js';
import { SECRET } from './pool.fixtures.js';

const CORE_EPOCH = 7;
const EMPTY: PersistedPool = { levelTokens: 0, leases: [] };

function makeConfig(): CoordinatorConfig {
  return parseCoordinatorConfig('coordinator-core-durable.test.yaml', {
    quietPeriodMs: 1000,
    pools: {
      p: STANDARD_POOL_FIELDS,
      q: { capacity: 10, refill: '10/s', leaseTtlMs: 500 },
      'tenant:vip': { capacity: 500, refill: '500/s', leaseTtlMs: 1000, maxLeaseTokens: 50 },
    },
    templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, maxLeaseTokens: 5, idleEvictMs: 2000, maxPools: 2 } },
  });
}

const durableCore = (): CoordinatorCore<string> => new CoordinatorCore<string>(makeConfig(), CORE_EPOCH, 0, true);
const memoryCore = (): CoordinatorCore<string> => new CoordinatorCore<string>(makeConfig(), CORE_EPOCH, 0);

const acquireReq = (pool: string, fields: AcquireFields): LeaseRequest => acquireOf({ pool, ...fields });

function send(core: CoordinatorCore<string>, req: Request, to: string, nowUs: number): Delivery<string>[] {
  return core.receive(subjectFor('tokenlease', req.op, req.pool), encodeMessage(req), to, nowUs);
}

function only(deliveries: readonly Delivery<string>[]): Reply {
  expect(deliveries).toHaveLength(1);
  const reply = deliveries[0]?.reply;
  if (reply === undefined) throw new Error('no delivery');
  return reply;
}

/** visits — the [pool, reply targets] of each batch `run` hands over, in order. */
function visits(run: (visit: (pool: string, out: Delivery<string>[]) => void) => void): Array<[string, string[]]> {
  const seen: Array<[string, string[]]> = [];
  run((pool, out) => seen.push([pool, out.map((d) => d.to)]));
  return seen;
}

describe('a durable core before it adopts anything', () => {
  it('holds no pool, has no deadline and refuses every request as unknown-pool', () => {
    const core = durableCore();
    expect(core.poolCount).toBe(0);
    expect(core.nextDeadlineUs()).toBe(Infinity);
    for (const pool of ['p', 'tenant:vip', 'tenant:acme', 'nope']) {
      expect(core.pool(pool)).toBeUndefined();
      expect(only(send(core, acquireReq(pool, { agentId: 'a', seq: 1 }), 'a#1', 5 * S))).toMatchObject({
        kind: 'error',
        seq: 1,
        code: 'unknown-pool',
        fault: 'peer',
        retryAfterMs: 0,
      });
      expect(only(send(core, { v: 2, op: 'status', pool }, 'status', 5 * S))).toMatchObject({
        kind: 'error',
        seq: null,
        code: 'unknown-pool',
      });
    }
    // No template pool is made on first use: only an adopt makes one.
    expect(core.poolCount).toBe(0);
    expect(core.tick(10 * S)).toEqual([]);
    expect(core.flush(10 * S)).toEqual([]);
  });
});

describe('adopt', () => {
  it('serves an adopted pool at once, full when the store has no record, under the adopt’s epoch', () => {
    const core = durableCore();
    // 10 ms after the core's start: no quiet period for a pool taken over.
    expect(core.adopt('p', 5, 10 * MS, null)).toBe('adopted');
    expect(core.poolCount).toBe(1);
    const g = grantOf(send(core, acquireReq('p', { agentId: 'a', seq: 1 }), 'a#1', 10 * MS));
    expect(g).toMatchObject({ tokensGranted: 20, tokensHeld: 20, epoch: 5, retryAfterMs: 0 });
    expect(g.leaseId.startsWith('5-')).toBe(true);
    expect(only(send(core, { v: 2, op: 'status', pool: 'p' }, 'status', 10 * MS))).toMatchObject({
      kind: 'status',
      epoch: 5,
      levelTokens: 80,
      leasedTokens: 20,
      quietMs: 0,
    });
  });

  it('takes the store’s state over: its level and its leases', () => {
    const core = durableCore();
    const state: PersistedPool = {
      levelTokens: 3,
      leases: [{ agentId: 'a', secret: SECRET, leaseId: '2-a', boundTokens: 1, lastSeq: 4, lastReply: null }],
    };
    expect(core.adopt('q', 9, 2 * S, state)).toBe('adopted');
    expect(only(send(core, { v: 2, op: 'status', pool: 'q', agentId: 'a' }, 'status', 2 * S))).toMatchObject({
      epoch: 9,
      levelTokens: 3,
      leasedTokens: 1,
      leases: 1,
      agentLease: { leaseId: '2-a', tokensHeld: 1, expiresInMs: 500 },
    });
    // The kept request was held: its retry learns the balance.
    expect(grantOf(send(core, acquireReq('q', { agentId: 'a', seq: 4 }), 'a#4', 2 * S))).toMatchObject({
      seq: 4,
      leaseId: '2-a',
      tokensGranted: 0,
      tokensHeld: 1,
      epoch: 9,
    });
  });

  it('keeps a pool already held as it is, whatever state a second adopt brings', () => {
    const core = durableCore();
    core.adopt('p', 5, 1 * S, null);
    grantOf(send(core, acquireReq('p', { agentId: 'a', seq: 1 }), 'a#1', 1 * S));
    expect(core.adopt('p', 6, 1 * S, EMPTY)).toBe('adopted');
    expect(core.poolCount).toBe(1);
    expect(only(send(core, { v: 2, op: 'status', pool: 'p' }, 'status', 1 * S))).toMatchObject({
      epoch: 5,
      levelTokens: 80,
      leasedTokens: 20,
    });
  });

  it('refuses names that are no pool and match no template', () => {
    const core = durableCore();
    for (const name of ['nope', 'tenant:', 'Tenant:acme']) expect(core.adopt(name, 1, 1 * S, null)).toBe('unknown');
    expect(core.poolCount).toBe(0);
  });

  it('makes a template pool with the template’s fields and serves it', () => {
    const core = durableCore();
    expect(core.adopt('tenant:acme', 3, 1 * S, null)).toBe('adopted');
    expect(grantOf(send(core, acquireReq('tenant:acme', { agentId: 'a', seq: 1 }), 'a#1', 1 * S))).toMatchObject({
      tokensGranted: 5,
      capacityTokens: 10,
      maxLeaseTokens: 5,
      epoch: 3,
    });
  });

  it('respects maxPools per template; release frees a place, once', () => {
    const core = durableCore();
    expect(core.adopt('tenant:a', 1, 1 * S, null)).toBe('adopted');
    expect(core.adopt('tenant:b', 1, 1 * S, null)).toBe('adopted');
    // Adopting a held one again does not count it twice.
    expect(core.adopt('tenant:b', 1, 1 * S, null)).toBe('adopted');
    expect(core.adopt('tenant:c', 1, 1 * S, null)).toBe('too-many');
    // A configured pool is no template pool, though its name matches.
    expect(core.adopt('tenant:vip', 1, 1 * S, null)).toBe('adopted');
    expect(core.poolCount).toBe(3);
    core.release('tenant:a');
    expect(core.adopt('tenant:c', 1, 1 * S, null)).toBe('adopted');
    core.release('tenant:c');
    // Releasing what is not held frees nothing more.
    expect(core.release('tenant:c')).toEqual([]);
    expect(core.adopt('tenant:d', 1, 1 * S, null)).toBe('adopted');
    expect(core.adopt('tenant:e', 1, 1 * S, null)).toBe('too-many');
  });

  it('rejects a clock reading that is not a non-negative integer of µs', () => {
    const core = durableCore();
    for (const nowUs of [-1, 1.5, Number.NaN])
      expect(thrown(TokenleaseError, () => core.adopt('p', 1, nowUs, null)).code).toBe('out-of-range');
    expect(core.poolCount).toBe(0);
  });

  it('adopted pools track their changes for the store; a memory-mode core’s pools do not', () => {
    const durable = durableCore();
    durable.adopt('p', 5, 2 * S, null);
    const g = grantOf(send(durable, acquireReq('p', { agentId: 'a', seq: 1 }), 'a#1', 2 * S));
    expect(durable.pool('p')?.takeChanges()).toEqual({
      levelTokens: 80,
      upserts: [{ agentId: 'a', secret: SECRET, leaseId: g.leaseId, boundTokens: 20, lastSeq: 1, lastReply: g, identity: 'anon' }],
      removes: [],
    });
    const memory = memoryCore();
    grantOf(send(memory, acquireReq('p', { agentId: 'a', seq: 1 }), 'a#1', 2 * S));
    expect(memory.pool('p')?.takeChanges()).toBeNull();
  });
});

describe('release', () => {
  it('answers every held request not-owner (fault coordinator) at its latest reply target and forgets the pool', () => {
    const core = durableCore();
    core.adopt('p', 5, 1 * S, EMPTY);
    expect(send(core, acquireReq('p', { agentId: 'a', seq: 1, holdMs: 200 }), 'a#1', 1 * S)).toEqual([]);
    // A retry of the held request moves its reply target.
    expect(send(core, acquireReq('p', { agentId: 'a', seq: 1, holdMs: 200 }), 'a#1-retry', 1 * S)).toEqual([]);
    expect(send(core, acquireReq('p', { agentId: 'b', seq: 3, holdMs: 200 }), 'b#3', 1 * S)).toEqual([]);
    expect(core.touchedDeadlineUs()).toBe(1 * S + 5 * MS);
    const out = core.release('p');
    const message = 'pool "p" is changing owner; ask again';
    expect(out).toEqual([
      { to: 'a#1-retry', reply: { v: 2, kind: 'error', seq: 1, code: 'not-owner', fault: 'coordinator', message, retryAfterMs: 50 } },
      { to: 'b#3', reply: { v: 2, kind: 'error', seq: 3, code: 'not-owner', fault: 'coordinator', message, retryAfterMs: 50 } },
    ]);
    expect(out).toEqual([notOwner('a#1-retry', 1, message), notOwner('b#3', 3, message)]);
    expect(core.poolCount).toBe(0);
    expect(core.pool('p')).toBeUndefined();
    expect(core.touchedDeadlineUs()).toBe(Infinity);
    expect(core.nextDeadlineUs()).toBe(Infinity);
    // Nothing of it answers later.
    expect(core.tick(2 * S)).toEqual([]);
    expect(only(send(core, acquireReq('p', { agentId: 'a', seq: 2 }), 'a#2', 2 * S))).toMatchObject({ code: 'unknown-pool' });
  });

  it('answers nothing for a pool without held requests, or one not held', () => {
    const core = durableCore();
    core.adopt('p', 5, 1 * S, null);
    grantOf(send(core, acquireReq('p', { agentId: 'a', seq: 1 }), 'a#1', 1 * S));
    expect(core.release('p')).toEqual([]);
    expect(core.release('p')).toEqual([]);
    expect(core.release('nope')).toEqual([]);
  });

  it('keeps the other pools and their deadlines', () => {
    const core = durableCore();
    core.adopt('p', 5, 1 * S, EMPTY);
    core.adopt('q', 5, 1 * S, EMPTY);
    send(core, acquireReq('q', { agentId: 'b', seq: 1, tokensWanted: 1, holdMs: 125 }), 'b#1', 1 * S);
    send(core, acquireReq('p', { agentId: 'a', seq: 1, holdMs: 200 }), 'a#1', 1 * S);
    expect(core.release('p')).toHaveLength(1);
    expect(core.nextDeadlineUs()).toBe(1 * S + 100 * MS);
    expect(core.tick(1 * S + 100 * MS)).toMatchObject([{ to: 'b#1', reply: { kind: 'grant', tokensGranted: 1 } }]);
  });
});

describe('notOwner', () => {
  it('is a coordinator-fault error with the seq given and 50 ms to wait unless told otherwise', () => {
    expect(notOwner('x', null, 'm')).toEqual({
      to: 'x',
      reply: { v: 2, kind: 'error', seq: null, code: 'not-owner', fault: 'coordinator', message: 'm', retryAfterMs: 50 },
    });
    expect(notOwner('x', 4, 'm', 250).reply).toMatchObject({ seq: 4, retryAfterMs: 250 });
  });
});

describe('kindOf', () => {
  it.each<[string, 'fixed' | 'template' | null]>([
    ['p', 'fixed'],
    ['q', 'fixed'],
    ['tenant:vip', 'fixed'],
    ['tenant:acme', 'template'],
    ['tenant:a:b', 'template'],
    ['tenant:', null],
    ['tenant', null],
    ['nope', null],
    ['*', null],
  ])('names %j a %s pool, in either mode, adopted or not', (name, kind) => {
    const durable = durableCore();
    expect(durable.kindOf(name)).toBe(kind);
    durable.adopt(name, 1, 1 * S, null);
    expect(durable.kindOf(name)).toBe(kind);
    expect(memoryCore().kindOf(name)).toBe(kind);
  });
});

describe('takeEvicted', () => {
  it('is empty in memory mode, though idle template pools are forgotten', () => {
    const core = memoryCore();
    const g = grantOf(send(core, acquireReq('tenant:acme', { agentId: 'a', seq: 1, tokensWanted: 5 }), 'a#1', 5 * S));
    send(
      core,
      { v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'tenant:acme', seq: 2, leaseId: g.leaseId, tokensLeft: 5 },
      'a#2',
      5 * S,
    );
    expect(core.poolCount).toBe(4);
    core.tick(7 * S);
    expect(core.poolCount).toBe(3);
    expect(core.takeEvicted()).toEqual([]);
  });

  it('lists the template pools ticks forgot in durable mode, once; configured pools are never evicted', () => {
    const core = durableCore();
    core.adopt('p', 1, 1 * S, null);
    core.adopt('tenant:acme', 1, 1 * S, null);
    core.adopt('tenant:busy', 1, 1 * S, null);
    grantOf(send(core, acquireReq('tenant:busy', { agentId: 'a', seq: 1, tokensWanted: 5 }), 'a#1', 1 * S));
    // Full since its adoption at 1 s and untouched: forgotten 2 s (idleEvictMs) later.
    core.tick(3 * S - 1);
    expect(core.takeEvicted()).toEqual([]);
    core.tick(3 * S);
    expect(core.takeEvicted()).toEqual(['tenant:acme']);
    expect(core.takeEvicted()).toEqual([]);
    expect(core.pool('tenant:acme')).toBeUndefined();
    expect(core.pool('tenant:busy')).toBeDefined();
    expect(core.pool('p')).toBeDefined();
    // Its place under maxPools is free again.
    expect(core.adopt('tenant:other', 1, 3 * S, null)).toBe('adopted');
    // The busy one goes once its lease has expired, it is full again and has been idle for 2 s.
    core.tick(10 * S);
    core.tick(13 * S);
    expect(core.takeEvicted().sort()).toEqual(['tenant:busy', 'tenant:other']);
    expect(core.poolCount).toBe(1);
  });

  it('a flush collects nothing', () => {
    const core = durableCore();
    core.adopt('tenant:acme', 1, 1 * S, null);
    core.flush(10 * S);
    expect(core.takeEvicted()).toEqual([]);
  });
});

describe('tickEach and flushEach', () => {
  it('hand over each pool’s replies with its name, only for pools that have some', () => {
    const core = durableCore();
    core.adopt('p', 1, 1 * S, EMPTY);
    core.adopt('q', 1, 1 * S, EMPTY);
    core.adopt('tenant:vip', 1, 1 * S, null);
    send(core, acquireReq('p', { agentId: 'a', seq: 1, holdMs: 200 }), 'a#1', 1 * S);
    send(core, acquireReq('q', { agentId: 'b', seq: 1, tokensWanted: 1, holdMs: 125 }), 'b#1', 1 * S);
    expect(visits((v) => core.tickEach(1 * S + 1 * MS, v))).toEqual([]);
    // "p" accrues its turn of 5 tokens in 5 ms; "q" its 1 token in 100 ms.
    expect(visits((v) => core.tickEach(1 * S + 5 * MS, v))).toEqual([['p', ['a#1']]]);
    expect(visits((v) => core.tickEach(1 * S + 100 * MS, v))).toEqual([['q', ['b#1']]]);
  });

  it('flushEach answers every held request, batched by pool', () => {
    const core = durableCore();
    core.adopt('p', 1, 1 * S, EMPTY);
    core.adopt('q', 1, 1 * S, EMPTY);
    core.adopt('tenant:vip', 1, 1 * S, null);
    send(core, acquireReq('p', { agentId: 'c', seq: 1, holdMs: 200 }), 'c#1', 1 * S);
    send(core, acquireReq('p', { agentId: 'd', seq: 1, holdMs: 200 }), 'd#1', 1 * S);
    send(core, acquireReq('q', { agentId: 'e', seq: 1, tokensWanted: 1, holdMs: 125 }), 'e#1', 1 * S);
    const flushed = visits((v) => core.flushEach(1 * S + 1 * MS, v));
    expect(flushed.sort()).toEqual([
      ['p', ['c#1', 'd#1']],
      ['q', ['e#1']],
    ]);
    expect(core.flush(1 * S + 1 * MS)).toEqual([]);
  });

  it('give the same replies as tick and flush, in the same order', () => {
    const run = (each: boolean): Delivery<string>[] => {
      const core = durableCore();
      core.adopt('p', 1, 1 * S, EMPTY);
      core.adopt('q', 1, 1 * S, EMPTY);
      send(core, acquireReq('p', { agentId: 'a', seq: 1, holdMs: 200 }), 'a#1', 1 * S);
      send(core, acquireReq('q', { agentId: 'b', seq: 1, tokensWanted: 1, holdMs: 125 }), 'b#1', 1 * S);
      send(core, acquireReq('p', { agentId: 'c', seq: 1, holdMs: 200 }), 'c#1', 1 * S);
      const out: Delivery<string>[] = [];
      if (!each) return [...core.tick(1 * S + 100 * MS), ...core.flush(1 * S + 101 * MS)];
      core.tickEach(1 * S + 100 * MS, (_pool, replies) => out.push(...replies));
      core.flushEach(1 * S + 101 * MS, (_pool, replies) => out.push(...replies));
      return out;
    };
    const plain = run(false);
    expect(plain.length).toBeGreaterThan(0);
    expect(run(true)).toEqual(plain);
  });

  it('reject a clock reading that is not a non-negative integer of µs', () => {
    const core = durableCore();
    expect(thrown(TokenleaseError, () => core.tickEach(-1, () => undefined)).code).toBe('out-of-range');
    expect(thrown(TokenleaseError, () => core.flushEach(0.5, () => undefined)).code).toBe('out-of-range');
  });
});
