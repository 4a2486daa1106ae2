/**
 * Durable mode through Redis Sentinel (a primary, two replicas and three
 * sentinels, from the redis-server binary on private ports), reached by
 * `redis+sentinel://s1,s2,s3/<master>`.
 *
 * - A coordinator serves: the lease an agent holds is on the primary, each
 *   write confirmed by a replica (the default through Sentinel).
 * - The primary is SIGKILLed: the sentinels promote a replica and point
 *   the other at it; the coordinator, which asks the sentinels for the
 *   primary at each reconnection, grants again and writes there, each
 *   write confirmed by the remaining replica.
 * - A master name no sentinel knows, or no sentinel answering, is one
 *   line and status 1, within a second.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '@tokenlease/agent';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { coordinatorCliScript } from '@tokenlease/harness/paths';
import { spawnNode, stop } from '@tokenlease/harness/processes';
import { redisCommand } from '@tokenlease/harness/redis-raw';
import { startRedisSentinel, SENTINEL_MASTER, type RedisSentinelHandle } from '@tokenlease/harness/redis-sentinel';

const POOL = 'api';
const PREFIX = 'tlsentinel';
const LEASES = `${PREFIX}:{${POOL}}:leases`;
const CLEAN_ENV: NodeJS.ProcessEnv = Object.fromEntries(
  ['REDIS_URL', 'REDIS_USER', 'REDIS_PASSWORD', 'REDIS_CA', 'REDIS_CERT', 'REDIS_KEY', 'REDIS_REPLICAS'].map((name) => [name, '']),
);

describe('durable mode through Redis Sentinel', () => {
  const dir = scratchDir();
  let nats: NatsHandle;
  let sentinel: RedisSentinelHandle;
  let configPath: string;

  beforeAll(async () => {
    [nats, sentinel] = await Promise.all([provideNats(), startRedisSentinel()]);
    configPath = writeConfig(dir, { subjectPrefix: PREFIX, pools: { [POOL]: { capacity: 20, refill: '20/s', leaseTtlMs: 1000 } } });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([nats?.stop(), sentinel?.stop()]);
  });

  /** grantedTo — whether `agentId` is granted a token within `timeoutMs`, and whether its lease is then on the Redis at `port`. */
  async function grantedTo(agentId: string, port: number, timeoutMs: number): Promise<{ granted: boolean; onPrimary: boolean }> {
    const agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: PREFIX, agentId, env: {} });
    try {
      const granted = await agent.limiter(POOL).take(1, { timeoutMs });
      const onPrimary = (await redisCommand(`redis://127.0.0.1:${port}`, 'HEXISTS', LEASES, agentId)) === 1;
      return { granted, onPrimary };
    } finally {
      await agent.close({ timeoutMs: 500 });
    }
  }

  it('serves through the sentinels, and follows the primary they promote', async () => {
    expect(sentinel.url).toMatch(
      new RegExp(`^redis\\+sentinel://127\\.0\\.0\\.1:\\d+,127\\.0\\.0\\.1:\\d+,127\\.0\\.0\\.1:\\d+/${SENTINEL_MASTER}$`),
    );
    const child = await startCoordinator(nats.url, configPath, {
      redisUrl: sentinel.url,
      member: 'c1',
      ownershipTtlMs: 1500,
      env: CLEAN_ENV,
    });
    try {
      expect(await grantedTo('before', sentinel.primary.port, 8000)).toEqual({ granted: true, onPrimary: true });

      const killedMs = performance.now();
      await sentinel.primary.kill();
      const replicaPorts = sentinel.replicas.map((r) => r.port);
      let promoted = NaN;
      for (let i = 0; i < 150 && !replicaPorts.includes(promoted); i++) {
        promoted = await sentinel.primaryPort().catch(() => NaN);
        if (!replicaPorts.includes(promoted)) await sleep(100);
      }
      expect(replicaPorts, 'the sentinels promoted a replica').toContain(promoted);
      const promotedMs = performance.now() - killedMs;
      const after = await grantedTo('after', promoted, 20_000);
      console.log(
        `redis-sentinel: replica promoted ${Math.round(promotedMs)} ms after the kill; granted again ${Math.round(performance.now() - killedMs)} ms after it`,
      );
      expect(after).toEqual({ granted: true, onPrimary: true });
      expect(child.lines.some((line) => line.includes('"replica-warning"'))).toBe(false);
    } finally {
      await stop(child);
    }
  }, 90_000);

  it.each<[string, (handle: RedisSentinelHandle) => string, RegExp]>([
    ['a master name no sentinel knows', (h) => h.url.replace(`/${SENTINEL_MASTER}`, '/nosuchmaster'), /No such master with that name/],
    ['no sentinel answering', () => `redis+sentinel://127.0.0.1:1/${SENTINEL_MASTER}`, /All sentinels are unreachable/],
  ])(
    'refuses to start on %s: one line, status 1',
    async (_name, url, reason) => {
      const started = performance.now();
      const child = spawnNode('cli', coordinatorCliScript(), ['--config', configPath, '--redis', url(sentinel)], {
        ...CLEAN_ENV,
        NATS_URL: nats.url,
      });
      const { code } = await child.exited;
      const out = `${child.lines.join('\n')}\n${child.stderr()}`.trim();
      expect(code, out).toBe(1);
      expect(out.split('\n'), out).toHaveLength(1);
      expect(out).toMatch(/^tokenlease-coordinator: cannot connect to Redis at redis\+sentinel:\/\/127\.0\.0\.1:\d+/);
      expect(out).toMatch(reason);
      expect(performance.now() - started).toBeLessThan(10_000);
    },
    30_000,
  );
});
