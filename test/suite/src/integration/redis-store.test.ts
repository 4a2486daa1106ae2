/**
 * The Redis state store against a real Redis: claims, fencing, renewals,
 * releases, heartbeats, the key layout, and a typed one-line error for
 * every way it can fail (bad URL, unreachable server, corrupted state).
 * Each test keeps to its own key prefix, so a shared Redis stays usable.
 *
 * Raw reads go through the harness's tiny RESP client (redis-raw.ts):
 * `ioredis` is imported by the store's adapter alone (tools/lint.mjs).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import {
  connectRedisStore,
  CoordinatorError,
  isDamaged,
  resolveRedisOptions,
  type PersistedLease,
  type StateStore,
} from '@tokenlease/coordinator/internal';
import type { LeaseGrant } from '@tokenlease/shared';
import { freePort } from '@tokenlease/harness/ports';
import { redisCommand } from '@tokenlease/harness/redis-raw';
import { provideRedis, startPrivateRedis, type PrivateRedis, type RedisHandle } from '@tokenlease/harness/redis';

async function keysUnder(url: string, prefix: string): Promise<string[]> {
  return ((await redisCommand(url, 'KEYS', `${prefix}:*`)) as string[]).sort();
}

async function rejection(promise: Promise<unknown>): Promise<CoordinatorError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(CoordinatorError);
    return error as CoordinatorError;
  }
  throw new Error('expected a rejection');
}

const grant: LeaseGrant = {
  v: 2,
  kind: 'grant',
  seq: 3,
  leaseId: 'L-7',
  tokensGranted: 5,
  tokensHeld: 5,
  ttlMs: 1000,
  epoch: 1,
  maxLeaseTokens: 10,
  capacityTokens: 100,
  refillTokens: 100,
  refillPeriodMs: 1000,
  retryAfterMs: 0,
};
const leaseA: PersistedLease = {
  agentId: 'agent-a',
  secret: 'secret-of-agent-a-128bits',
  leaseId: 'L-7',
  boundTokens: 5,
  lastSeq: 3,
  lastReply: grant,
};
const leaseB: PersistedLease = {
  agentId: 'agent-b',
  secret: 'secret-of-agent-b-128bits',
  leaseId: 'L-8',
  boundTokens: 2,
  lastSeq: 9,
  lastReply: null,
};

describe('the Redis state store', () => {
  let redis: RedisHandle;
  const run = randomBytes(4).toString('hex');
  let counter = 0;
  const stores: StateStore[] = [];
  /** A prefix of its own for each test. */
  const nextPrefix = (): string => `tlstore-${run}-${(counter += 1)}`;
  async function open(prefix: string): Promise<StateStore> {
    const store = await connectRedisStore(redis.url, { keyPrefix: prefix });
    stores.push(store);
    return store;
  }

  beforeAll(async () => {
    redis = await provideRedis();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    for (let i = 1; i <= counter; i += 1) {
      const keys = await keysUnder(redis.url, `tlstore-${run}-${i}`);
      if (keys.length > 0) await redisCommand(redis.url, 'DEL', ...keys);
    }
    await redis.stop();
  });

  it('claims a fresh unit with epoch 1 and no state, and fences a second member until the record expires', async () => {
    const prefix = nextPrefix();
    const store = await open(prefix);
    expect(await store.claim('api', 'c1', 200)).toEqual({ taken: true, epoch: 1, state: null, clearedOwner: false });
    expect(await store.write('api', 'c1', 1, { levelTokens: 42, upserts: [leaseA, leaseB], removes: [] })).toBe(true);
    const refused = await store.claim('api', 'c2', 200);
    expect(refused.taken).toBe(false);
    expect(refused.taken === false && refused.heldForMs > 0 && refused.heldForMs <= 200).toBe(true);
    await sleep(260);
    const taken = await store.claim('api', 'c2', 5000);
    expect(taken.taken).toBe(true);
    if (!taken.taken) return;
    expect(taken.epoch).toBe(2);
    const state = taken.state;
    if (state === null || isDamaged(state)) throw new Error(`expected kept state, got ${JSON.stringify(state)}`);
    expect(state.levelTokens).toBe(42);
    expect([...state.leases].sort((a, b) => a.agentId.localeCompare(b.agentId))).toEqual([leaseA, leaseB]);
    // The record of c1's reign is gone: c1 is now fenced.
    expect(await store.renew('api', 'c1', 1, 5000)).toBe(false);
  });

  it('refuses a write with a stale epoch or by another member, and changes nothing', async () => {
    const prefix = nextPrefix();
    const store = await open(prefix);
    expect(await store.claim('api', 'c1', 5000)).toMatchObject({ taken: true, epoch: 1 });
    expect(await store.write('api', 'c1', 1, { levelTokens: 10, upserts: [leaseA], removes: [] })).toBe(true);
    // Claiming again (the same member) moves the epoch on: epoch 1 is stale now.
    expect(await store.claim('api', 'c1', 5000)).toMatchObject({ taken: true, epoch: 2 });
    const level = `${prefix}:{api}:level`;
    const leases = `${prefix}:{api}:leases`;
    const before = { level: await redisCommand(redis.url, 'GET', level), leases: await redisCommand(redis.url, 'HGETALL', leases) };
    expect(before.level).toBe('10');
    expect(await store.write('api', 'c1', 1, { levelTokens: 99, upserts: [leaseB], removes: ['agent-a'] })).toBe(false);
    expect(await store.write('api', 'c2', 2, { levelTokens: 99, upserts: [leaseB], removes: ['agent-a'] })).toBe(false);
    expect(await store.write('api', 'c2', 3, { levelTokens: 99, upserts: [leaseB], removes: [] })).toBe(false);
    expect({ level: await redisCommand(redis.url, 'GET', level), leases: await redisCommand(redis.url, 'HGETALL', leases) }).toEqual(
      before,
    );
    // The owner's write under its epoch goes through, upserts and removes alike.
    expect(await store.write('api', 'c1', 2, { levelTokens: 7, upserts: [leaseB], removes: ['agent-a'] })).toBe(true);
    expect(await redisCommand(redis.url, 'GET', level)).toBe('7');
    expect(await redisCommand(redis.url, 'HKEYS', leases)).toEqual(['agent-b']);
  });

  it('renews only the live claim of its member and epoch', async () => {
    const store = await open(nextPrefix());
    expect(await store.claim('api', 'c1', 300)).toMatchObject({ taken: true, epoch: 1 });
    expect(await store.renew('api', 'c1', 1, 300)).toBe(true);
    expect(await store.renew('api', 'c1', 2, 300)).toBe(false);
    expect(await store.renew('api', 'c2', 1, 300)).toBe(false);
    // Renewals keep it alive past its first TTL.
    for (let i = 0; i < 4; i += 1) {
      await sleep(150);
      expect(await store.renew('api', 'c1', 1, 300)).toBe(true);
    }
    expect((await store.claim('api', 'c2', 300)).taken).toBe(false);
    await sleep(400);
    expect(await store.renew('api', 'c1', 1, 300)).toBe(false);
  });

  it('lets another member claim at once after a release, and keeps the state for it', async () => {
    const store = await open(nextPrefix());
    expect(await store.claim('api', 'c1', 60_000)).toMatchObject({ taken: true, epoch: 1 });
    expect(await store.write('api', 'c1', 1, { levelTokens: 3, upserts: [leaseB], removes: [] })).toBe(true);
    expect(await store.release('api', 'c2', 1)).toBe(false);
    expect(await store.release('api', 'c1', 2)).toBe(false);
    expect((await store.claim('api', 'c2', 60_000)).taken).toBe(false);
    expect(await store.release('api', 'c1', 1)).toBe(true);
    expect(await store.claim('api', 'c2', 60_000)).toEqual({
      taken: true,
      epoch: 2,
      state: { levelTokens: 3, leases: [leaseB] },
      clearedOwner: false,
    });
    expect(await store.release('api', 'c1', 1)).toBe(false);
    expect(await store.write('api', 'c1', 1, { levelTokens: 100, upserts: [], removes: [] })).toBe(false);
  });

  it('forgets all four keys of a unit, and only when fenced right', async () => {
    const prefix = nextPrefix();
    const store = await open(prefix);
    expect(await store.claim('tenant:acme', 'c1', 60_000)).toMatchObject({ taken: true, epoch: 1 });
    expect(await store.write('tenant:acme', 'c1', 1, { levelTokens: 5, upserts: [leaseA], removes: [] })).toBe(true);
    expect(await store.claim('api', 'c1', 60_000)).toMatchObject({ taken: true, epoch: 1 });
    const unitKeys = ['epoch', 'leases', 'level', 'owner'].map((k) => `${prefix}:{tenant:acme}:${k}`);
    expect((await keysUnder(redis.url, prefix)).filter((k) => k.includes('{tenant:acme}'))).toEqual(unitKeys);
    expect(await store.forget('tenant:acme', 'c2', 1)).toBe(false);
    expect(await store.forget('tenant:acme', 'c1', 2)).toBe(false);
    expect(await store.forget('tenant:acme', 'c1', 1)).toBe(true);
    expect(await keysUnder(redis.url, prefix)).toEqual([`${prefix}:{api}:epoch`, `${prefix}:{api}:owner`]);
    // A later owner starts over: epoch 1, no state.
    expect(await store.claim('tenant:acme', 'c2', 60_000)).toEqual({ taken: true, epoch: 1, state: null, clearedOwner: false });
  });

  it('lists live members in the heartbeat, drops a lapsed one, and removes one at ttl 0', async () => {
    const store = await open(nextPrefix());
    const members = async (member: string, ttlMs: number): Promise<string[]> => (await store.heartbeat(member, ttlMs)).members.sort();
    expect(await members('c1', 10_000)).toEqual(['c1']);
    expect(await members('c2', 200)).toEqual(['c1', 'c2']);
    expect(await members('c3', 10_000)).toEqual(['c1', 'c2', 'c3']);
    await sleep(300);
    expect(await members('c1', 10_000)).toEqual(['c1', 'c3']);
    expect(await members('c3', 0)).toEqual(['c1']);
    expect(await members('c1', 0)).toEqual([]);
  });

  it('keeps every key of a unit under the documented names with the unit as hash tag', async () => {
    const prefix = nextPrefix();
    const store = await open(prefix);
    await store.heartbeat('c1', 60_000);
    for (const unit of ['api', 'tenant:acme', '*']) {
      const claim = await store.claim(unit, 'c1', 60_000);
      expect(claim.taken).toBe(true);
      if (unit !== '*' && claim.taken)
        expect(await store.write(unit, 'c1', claim.epoch, { levelTokens: 1, upserts: [leaseA], removes: [] })).toBe(true);
    }
    const keys = await keysUnder(redis.url, prefix);
    const layout = new RegExp(`^${prefix}:(members|\\{([^{}]+)\\}:(owner|epoch|level|leases))$`);
    for (const key of keys) expect(key, key).toMatch(layout);
    const byUnit = new Map<string, string[]>();
    for (const key of keys) {
      const match = layout.exec(key);
      if (match?.[2] !== undefined) byUnit.set(match[2], [...(byUnit.get(match[2]) ?? []), match[3] as string]);
    }
    expect(Object.fromEntries([...byUnit].map(([unit, kinds]) => [unit, kinds.sort()]))).toEqual({
      api: ['epoch', 'leases', 'level', 'owner'],
      'tenant:acme': ['epoch', 'leases', 'level', 'owner'],
      '*': ['epoch', 'owner'],
    });
    expect(keys).toContain(`${prefix}:members`);
    expect(await redisCommand(redis.url, 'TYPE', `${prefix}:members`)).toBe('zset');
    expect(await redisCommand(redis.url, 'TYPE', `${prefix}:{api}:owner`)).toBe('hash');
    expect(await redisCommand(redis.url, 'TYPE', `${prefix}:{api}:leases`)).toBe('hash');
    expect(await redisCommand(redis.url, 'HGETALL', `${prefix}:{api}:owner`)).toEqual(['member', 'c1', 'epoch', '1']);
    const pttl = (await redisCommand(redis.url, 'PTTL', `${prefix}:{api}:owner`)) as number;
    expect(pttl).toBeGreaterThan(50_000);
    expect(await redisCommand(redis.url, 'PTTL', `${prefix}:{api}:leases`)).toBe(-1);
  });

  it('refuses a bad URL or key prefix with config-invalid, and an unreachable server with one line of store-unavailable', async () => {
    for (const url of ['http://x', 'not a url', 'redis://']) {
      const error = await rejection(connectRedisStore(url));
      expect(error.code, url).toBe('config-invalid');
      expect(error.message).not.toContain('\n');
    }
    for (const keyPrefix of ['a{b}', '', 'a b'])
      expect((await rejection(connectRedisStore(redis.url, { keyPrefix }))).code).toBe('config-invalid');
    const port = await freePort();
    const startedMs = performance.now();
    const error = await rejection(connectRedisStore(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 1000 }));
    expect(performance.now() - startedMs).toBeLessThan(3000);
    expect(error.code).toBe('store-unavailable');
    expect(error.message).toContain(`cannot connect to Redis at redis://127.0.0.1:${port}`);
    expect(error.message.split('\n')).toHaveLength(1);
  });

  it('returns a corrupted lease or level as damaged state, naming it and the agents whose records to delete', async () => {
    const prefix = nextPrefix();
    const store = await open(prefix);
    await redisCommand(redis.url, 'HSET', `${prefix}:{api}:leases`, 'agent-x', '{not json');
    const first = await store.claim('api', 'c1', 60_000);
    expect(first).toMatchObject({ taken: true, state: { agentIds: ['agent-x'] } });
    expect(first.taken && isDamaged(first.state) && first.state.damaged).toContain('"agent-x"');
    await redisCommand(
      redis.url,
      'HSET',
      `${prefix}:{api}:leases`,
      'agent-x',
      JSON.stringify({ leaseId: 'L', boundTokens: -1, lastSeq: 0, lastReply: null }),
    );
    const second = await store.claim('api', 'c1', 60_000);
    expect(second.taken && isDamaged(second.state)).toBe(true);
    await redisCommand(redis.url, 'SET', `${prefix}:{other}:level`, '12.5');
    const third = await store.claim('other', 'c1', 60_000);
    expect(third.taken && isDamaged(third.state)).toBe(true);
  });

  it('clears an owner record that never expires, and a member whose heartbeat is impossibly far ahead', async () => {
    const prefix = nextPrefix();
    const store = await open(prefix);
    await redisCommand(redis.url, 'HSET', `${prefix}:{api}:owner`, 'member', 'ghost', 'epoch', '7');
    expect(await store.claim('api', 'c1', 60_000)).toMatchObject({ taken: true, clearedOwner: true });
    expect(await store.ownerOf('api')).toBe('c1');
    expect(await store.ownerOf('unclaimed')).toBeNull();
    await redisCommand(redis.url, 'ZADD', `${prefix}:members`, String(Date.now() + 86_400_000), 'ghost');
    expect(await store.heartbeat('c1', 10_000)).toEqual({ members: ['c1'], droppedImpossible: 1 });
  });

  describe('on a private Redis', () => {
    let priv: PrivateRedis;
    beforeAll(async () => {
      priv = await startPrivateRedis();
    });
    afterAll(async () => {
      await priv.stop();
    });

    it('warns about a Redis that may lose acknowledged writes, and not about one set up to keep them', async () => {
      // A Redis of its own: turning appendonly off and on again starts a
      // rewrite that would hold back the append-only file of the next test.
      const own = await startPrivateRedis();
      const store = await connectRedisStore(own.url, { keyPrefix: 'tldurability' });
      try {
        expect(await store.durabilityWarning()).toBeNull();
        await redisCommand(own.url, 'CONFIG', 'SET', 'appendfsync', 'everysec');
        expect(await store.durabilityWarning()).toMatch(/appendfsync everysec/);
        await redisCommand(own.url, 'CONFIG', 'SET', 'appendonly', 'no');
        expect(await store.durabilityWarning()).toMatch(/without appendonly/);
      } finally {
        await store.close();
        await own.stop();
      }
    });

    it('warns when a primary has fewer replicas online than --redis-replicas asks, and not once it has them', async () => {
      const [primary, replica] = await Promise.all([startPrivateRedis(), startPrivateRedis()]);
      const store = await connectRedisStore(resolveRedisOptions({ redis: primary.url, 'redis-replicas': '1' }, {}) ?? '', {
        keyPrefix: 'tlreplicas',
      });
      try {
        expect(await store.replicaWarning()).toBe(
          `each write must be confirmed by 1 replica (--redis-replicas 1), but 127.0.0.1:${primary.port} has 0 online: ` +
            'every write to this primary will be refused as unavailable, and nothing granted from its pools, until enough replicas confirm it',
        );
        // No five-second wait before the first sync (repl-diskless-sync-delay): the replica is online at once.
        await redisCommand(primary.url, 'CONFIG', 'SET', 'repl-diskless-sync-delay', '0');
        await redisCommand(replica.url, 'REPLICAOF', '127.0.0.1', String(primary.port));
        let warning: string | null = 'not asked yet';
        for (let i = 0; i < 100 && warning !== null; i++) {
          warning = await store.replicaWarning();
          if (warning !== null) await sleep(50);
        }
        expect(warning, 'silent once the replica is online').toBeNull();
      } finally {
        await store.close();
        await Promise.all([primary.stop(), replica.stop()]);
      }
    });

    it('turns a dead Redis into store-unavailable, and finds its state again once it is back', async () => {
      const store = await connectRedisStore(priv.url, { keyPrefix: 'tlrestart', commandTimeoutMs: 500 });
      stores.push(store);
      expect(await store.claim('api', 'c1', 60_000)).toMatchObject({ taken: true, epoch: 1 });
      expect(await store.write('api', 'c1', 1, { levelTokens: 17, upserts: [leaseA], removes: [] })).toBe(true);
      await priv.kill();
      const startedMs = performance.now();
      for (const attempt of [store.renew('api', 'c1', 1, 60_000), store.heartbeat('c1', 1000), store.claim('api', 'c2', 1000)]) {
        const error = await rejection(attempt);
        expect(error.code).toBe('store-unavailable');
        expect(error.message.split('\n')).toHaveLength(1);
      }
      expect(performance.now() - startedMs).toBeLessThan(2000);
      await priv.start();
      // The client reconnects by itself; the append-only file kept every acknowledged write.
      const deadlineMs = performance.now() + 5000;
      let renewed: boolean | null = null;
      while (renewed === null && performance.now() < deadlineMs) {
        renewed = await store.renew('api', 'c1', 1, 60_000).catch(() => null);
        if (renewed === null) await sleep(100);
      }
      expect(renewed).toBe(true);
      expect(await store.release('api', 'c1', 1)).toBe(true);
      expect(await store.claim('api', 'c2', 60_000)).toEqual({
        taken: true,
        epoch: 2,
        state: { levelTokens: 17, leases: [leaseA] },
        clearedOwner: false,
      });
    });
  });
});
