/**
 * The coordinator CLI in durable mode: one clear line and the documented
 * exit status for each bad Redis setting (2: usage or configuration, 1:
 * Redis unreachable), and a clean SIGTERM: exit 0, every pool handed over
 * and the member gone from the member list, so another coordinator takes
 * the pools at once instead of waiting out the ownership TTL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '@tokenlease/agent';
import { connectRedisStore } from '@tokenlease/coordinator';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { hasEvent, logEvents, waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { coordinatorCliScript } from '@tokenlease/harness/paths';
import { freePort } from '@tokenlease/harness/ports';
import { spawnNode, stop, stopAll, type Child } from '@tokenlease/harness/processes';
import { seedFromEnv } from '@tokenlease/shared/testing';
import { provideRedis, type RedisHandle } from '@tokenlease/harness/redis';

async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string }> {
  const child = spawnNode('cli', coordinatorCliScript(), args, env);
  const { code } = await child.exited;
  return { code, stderr: child.stderr().trim() };
}

function expectOneLine(stderr: string): void {
  expect(stderr.split('\n'), stderr).toHaveLength(1);
  expect(stderr).toMatch(/^tokenlease-coordinator: /);
  expect(stderr).not.toMatch(/\bat .*:\d+:\d+/);
}

interface Owned {
  readonly pool: string;
  readonly epoch: number;
  readonly leases?: number;
}

function owned(child: Child): Owned[] {
  return logEvents(child.lines, { event: 'pool-owned' }).map(({ fields }) => fields as unknown as Owned);
}

describe('tokenlease-coordinator CLI in durable mode', () => {
  let nats: NatsHandle;
  let redis: RedisHandle;
  const dir = scratchDir();
  let configPath: string;
  beforeAll(async () => {
    [nats, redis] = await Promise.all([provideNats(), provideRedis()]);
    configPath = writeConfig(dir, { subjectPrefix: `tldcli${seedFromEnv()}`, pools: { api: { capacity: 10, refill: '10/s' } } });
  });
  afterAll(async () => {
    await stopAll();
    await Promise.all([nats.stop(), redis.stop()]);
  });

  it('refuses a Redis URL that is no redis:// URL, status 2, on one line', async () => {
    for (const url of ['not-a-url', 'http://127.0.0.1:1']) {
      const { code, stderr } = await run(['--config', configPath, '--redis', url]);
      expect(code, url).toBe(2);
      expectOneLine(stderr);
      expect(stderr).toContain(JSON.stringify(url));
    }
    // REDIS_URL is read the same way when --redis is not given.
    const fromEnv = await run(['--config', configPath], { REDIS_URL: 'not-a-url' });
    expect(fromEnv.code).toBe(2);
    expectOneLine(fromEnv.stderr);
  });

  it('says it cannot reach Redis, status 1, on one line', async () => {
    const port = await freePort();
    const { code, stderr } = await run(['--config', configPath, '--redis', `redis://127.0.0.1:${port}`, '--nats', nats.url]);
    expect(code).toBe(1);
    expectOneLine(stderr);
    expect(stderr).toContain(`cannot connect to Redis at redis://127.0.0.1:${port}: `);
  });

  it('refuses --memory with --redis, a bad ownership TTL, member or key prefix, status 2', async () => {
    // A usage error: its line, then the usage.
    const both = await run(['--config', configPath, '--nats', nats.url, '--memory', '--redis', redis.url]);
    expect(both.code).toBe(2);
    const [first, ...usage] = both.stderr.split('\n');
    expect(first).toBe('tokenlease-coordinator: --memory and --redis exclude each other');
    expect(usage[0]).toMatch(/^usage: tokenlease-coordinator /);
    expect(both.stderr).not.toMatch(/\bat .*:\d+:\d+/);
    const cases = [
      ['--redis', redis.url, '--ownership-ttl-ms', '5'],
      ['--redis', redis.url, '--ownership-ttl-ms', '600001'],
      ['--redis', redis.url, '--ownership-ttl-ms', 'soon'],
      ['--redis', redis.url, '--member', 'two words'],
      ['--redis', redis.url, '--redis-prefix', 'a{b}'],
    ];
    for (const args of cases) {
      const { code, stderr } = await run(['--config', configPath, '--nats', nats.url, ...args]);
      expect(code, args.join(' ')).toBe(2);
      expectOneLine(stderr);
    }
  });

  it('hands its pools over and leaves the member list on SIGTERM, so another coordinator takes them at once', async () => {
    const prefix = `tldstop${seedFromEnv()}`;
    const path = writeConfig(scratchDir(), {
      subjectPrefix: prefix,
      pools: { api: { capacity: 50, refill: '50/s', leaseTtlMs: 5000, maxLeaseTokens: 10 } },
      templates: { 'tenant:*': { capacity: 50, refill: '50/s' } },
    });
    const ttlMs = 10_000;
    const first = await startCoordinator(nats.url, path, { redisUrl: redis.url, member: 'cli-a', ownershipTtlMs: ttlMs });
    await waitForEvent(first, { event: 'pool-owned', pool: '*' }, 5000);
    await waitForEvent(first, { event: 'pool-owned', pool: 'api' }, 5000);
    // An agent holds a lease when the owner goes: the next owner must find it in Redis.
    const agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: prefix, agentId: 'cli-agent' });
    const limiter = agent.limiter('api');
    const deadlineMs = performance.now() + 3000;
    while (!limiter.tryTake(1) && performance.now() < deadlineMs) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(limiter.leaseId).not.toBeNull();

    first.proc.kill('SIGTERM');
    const exit = await first.exited;
    const stoppedAtMs = performance.now();
    expect({ ...exit, stderr: first.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(hasEvent(first, { event: 'durable-stopped' })).toBe(true);
    const handedOver = logEvents(first.lines, { event: 'pool-handed-over' }).map(({ fields }) => String(fields['pool']));
    expect(handedOver.sort()).toEqual(['*', 'api']);

    const store = await connectRedisStore(redis.url, { keyPrefix: prefix });
    try {
      // heartbeat at ttl 0 of a member that was never there only reads the list.
      expect((await store.heartbeat('cli-probe', 0)).members).toEqual([]);

      const second = await startCoordinator(nats.url, path, { redisUrl: redis.url, member: 'cli-b', ownershipTtlMs: ttlMs });
      await waitForEvent(second, { event: 'pool-owned', pool: 'api' }, 3000);
      await waitForEvent(second, { event: 'pool-owned', pool: '*' }, 3000);
      const takeoverMs = performance.now() - stoppedAtMs;
      const before = owned(first);
      const after = owned(second);
      console.log(
        `durable-cli: cli-b owned ${JSON.stringify(after.map(({ pool, epoch, leases }) => ({ pool, epoch, leases })))} ${Math.round(takeoverMs)} ms after cli-a exited (ownership TTL ${ttlMs} ms)`,
      );
      expect(takeoverMs).toBeLessThan(3000);
      for (const unit of ['api', '*']) {
        const epochBefore = before.find((o) => o.pool === unit)?.epoch ?? NaN;
        expect(after.find((o) => o.pool === unit)?.epoch, unit).toBe(epochBefore + 1);
      }
      expect(after.find((o) => o.pool === 'api')?.leases).toBe(1);
      await agent.close();
      await stop(second);
      expect((await second.exited).code).toBe(0);
      expect((await store.heartbeat('cli-probe', 0)).members).toEqual([]);
      // Leave nothing behind on a shared Redis.
      for (const unit of ['api', '*']) {
        const claim = await store.claim(unit, 'cleanup', 1000);
        expect(claim.taken, unit).toBe(true);
        if (claim.taken) expect(await store.forget(unit, 'cleanup', claim.epoch)).toBe(true);
      }
    } finally {
      await store.close();
    }
  });
});
