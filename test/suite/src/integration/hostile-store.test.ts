/**
 * Redis state trusted no further than a peer's message, with a real
 * durable coordinator process on a real Redis: damaged stored leases are
 * not adopted (the pool starts empty and quiet, and serves after one TTL),
 * nor are leases that each fit the pool but not together (retries of their
 * kept grants replay nothing),
 * an ownership record that never expires and a member whose heartbeat lies
 * impossibly far ahead are cleared, and a configured pool that nobody owns
 * answers `not-owner` at once instead of letting requests time out.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATCH_ALL_UNIT, preferredOwner } from '@tokenlease/coordinator/internal';
import { makeRate } from '@tokenlease/shared';
import { acquireRequest, checkEnvelope, seedFromEnv } from '@tokenlease/shared/testing';
import { readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { logEvents, waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { stopAll, type Child } from '@tokenlease/harness/processes';
import { redisCommand } from '@tokenlease/harness/redis-raw';
import { provideRedis, type RedisHandle } from '@tokenlease/harness/redis';

const CAPACITY = 100;
const TTL_MS = 500;
const POOL = { capacity: CAPACITY, refill: '100/s', leaseTtlMs: TTL_MS, maxLeaseTokens: 20, maxHoldMs: 100 };
const RUN_MS = 3000;

describe('hostile state in Redis', () => {
  let nats: NatsHandle;
  let redis: RedisHandle;
  let probe: StatusProbe;
  const seed = seedFromEnv();
  let runs = 0;
  beforeAll(async () => {
    [nats, redis] = await Promise.all([provideNats(), provideRedis()]);
    probe = await StatusProbe.connect(nats.url);
  });
  afterAll(async () => {
    // Keys first: a private Redis is one of the processes stopAll stops.
    for (let i = 1; i <= runs; i += 1) {
      const keys = (await redisCommand(redis.url, 'KEYS', `tlhstore${seed}x${i}:*`)) as string[];
      if (keys.length > 0) await redisCommand(redis.url, 'DEL', ...keys);
    }
    await stopAll();
    await probe.close();
    await Promise.all([nats.stop(), redis.stop()]);
  });

  function nextPrefix(): string {
    runs += 1;
    return `tlhstore${seed}x${runs}`;
  }

  async function coordinator(prefix: string, member: string): Promise<Child> {
    const config = writeConfig(scratchDir(), { subjectPrefix: prefix, pools: { api: POOL } });
    return startCoordinator(nats.url, config, { redisUrl: redis.url, member, ownershipTtlMs: 600 });
  }

  it('does not adopt a stored lease of 2^53-1 tokens: the pool serves after one TTL, within the envelope, and deletes the record', async () => {
    const prefix = nextPrefix();
    const damaged = {
      secret: 'stolen-secret-of-128-bits',
      leaseId: 'x-1',
      boundTokens: Number.MAX_SAFE_INTEGER,
      lastSeq: 1,
      lastReply: null,
    };
    await redisCommand(redis.url, 'HSET', `${prefix}:{api}:leases`, 'ghost-agent', JSON.stringify(damaged));
    await redisCommand(redis.url, 'SET', `${prefix}:{api}:level`, '100');
    const c = await coordinator(prefix, 'm1');
    const invalid = await waitForEvent(c, { event: 'state-invalid' }, 10_000);
    expect(String(invalid['reason'])).toContain('above capacity + allowance');
    const dir = scratchDir();
    const logPath = join(dir, 'agent.log');
    const agent = await startAgentProcess({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      name: 'honest',
      seed,
      durationMs: RUN_MS,
      logPath,
      traffic: { kind: 'steady', perSecond: 300 },
    });
    await agent.exited;
    const report = checkEnvelope(readAdmissionLog(logPath), CAPACITY, makeRate(100, 1000));
    expect(report.ok).toBe(true);
    expect(report.admittedTokens).toBeGreaterThan(100);
    expect(await redisCommand(redis.url, 'HEXISTS', `${prefix}:{api}:leases`, 'ghost-agent')).toBe(0);
  });

  it('does not adopt twenty stored leases of 20 on a pool of 100: retries of their kept grants replay nothing', async () => {
    const prefix = nextPrefix();
    const secret = 'stolen-secret-of-128-bits';
    const leases = Array.from({ length: 20 }, (_, i) => {
      const leaseId = `x-${i}`;
      const grant = {
        v: 2,
        kind: 'grant',
        seq: 1,
        leaseId,
        tokensGranted: 20,
        tokensHeld: 20,
        ttlMs: TTL_MS,
        epoch: 1,
        maxLeaseTokens: 20,
        capacityTokens: CAPACITY,
        refillTokens: 100,
        refillPeriodMs: 1000,
        retryAfterMs: 0,
      };
      return { agentId: `ghost-${i}`, leaseId, record: { secret, leaseId, boundTokens: 20, lastSeq: 1, lastReply: JSON.stringify(grant) } };
    });
    await redisCommand(redis.url, 'HSET', `${prefix}:{api}:leases`, ...leases.flatMap((l) => [l.agentId, JSON.stringify(l.record)]));
    await redisCommand(redis.url, 'SET', `${prefix}:{api}:level`, '0');
    const c = await coordinator(prefix, 'm1');
    const invalid = await waitForEvent(c, { event: 'state-invalid' }, 10_000);
    expect(String(invalid['reason'])).toBe('the stored leases hold more than capacity + allowance 100 together (20 leases)');
    await waitForEvent(c, { event: 'pool-owned', pool: 'api' }, 10_000);
    let replayedTokens = 0;
    for (const { agentId, leaseId } of leases) {
      const retry = acquireRequest({ agentId, leaseSecret: secret, seq: 1, leaseId, tokensLeft: 0, tokensWanted: 20 });
      const reply = await probe.raw(`${prefix}.v2.acquire.api.anon`, new TextEncoder().encode(JSON.stringify(retry)));
      // A replay answers under the kept lease; once the quarantine's quiet TTL is over a retry may open a new lease, which is no replay.
      if (reply.ok && reply.value.kind === 'grant' && reply.value.leaseId === leaseId) replayedTokens += reply.value.tokensGranted;
    }
    // Before, each retry was answered with its kept grant: 400 tokens on a pool of 100.
    expect(replayedTokens).toBe(0);
  });

  it('clears an ownership record that never expires and a member heartbeat far in the future', async () => {
    const prefix = nextPrefix();
    await redisCommand(redis.url, 'HSET', `${prefix}:{api}:owner`, 'member', 'ghost', 'epoch', '41');
    await redisCommand(redis.url, 'ZADD', `${prefix}:members`, String(Date.now() + 86_400_000), 'ghost-member');
    const c = await coordinator(prefix, 'm1');
    await waitForEvent(c, { event: 'owner-record-cleared', pool: 'api' }, 10_000);
    await waitForEvent(c, { event: 'members-cleared' }, 10_000);
    await waitForEvent(c, { event: 'pool-owned', pool: 'api' }, 10_000);
    expect((await probe.status('api', prefix)).capacityTokens).toBe(CAPACITY);
  });

  it('answers a request for a configured pool nobody owns with not-owner at once', async () => {
    const prefix = nextPrefix();
    // A live member the pool prefers, which never claims it; this coordinator is preferred for the catch-all.
    const names = Array.from({ length: 200 }, (_, i) => [`ghost-${i}`, `real-${i}`] as const);
    const pair = names.find(
      ([ghost, real]) => preferredOwner('api', [ghost, real]) === ghost && preferredOwner(CATCH_ALL_UNIT, [ghost, real]) === real,
    );
    if (pair === undefined) throw new Error('no member names with the wanted preferences');
    const [ghost, real] = pair;
    await redisCommand(redis.url, 'ZADD', `${prefix}:members`, String(Date.now() + 60_000), ghost);
    const c = await coordinator(prefix, real);
    await waitForEvent(c, { event: 'pool-owned', pool: CATCH_ALL_UNIT }, 10_000);
    const message = acquireRequest({ tokensWanted: 1 });
    const startedMs = performance.now();
    const reply = await probe.raw(`${prefix}.v2.acquire.api.anon`, new TextEncoder().encode(JSON.stringify(message)));
    const tookMs = performance.now() - startedMs;
    expect(reply.ok && reply.value.kind === 'error' ? reply.value.code : reply).toBe('not-owner');
    // Answered rather than left to the 2 s request timeout.
    expect(tookMs).toBeLessThan(1500);
    expect(logEvents(c.lines, { event: 'pool-owned', pool: 'api' })).toEqual([]);
    await redisCommand(redis.url, 'ZREM', `${prefix}:members`, ghost);
  });
});
