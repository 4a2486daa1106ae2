/**
 * Durable mode on a Redis Cluster that speaks TLS only (three primaries
 * with one replica each, `--port 0`, the cluster bus and replication over
 * TLS too, clients asked for a certificate), reached by
 * `rediss+cluster://` with `--redis-ca`, `--redis-cert` and `--redis-key`.
 *
 * - A coordinator started on it serves: an agent is granted, and the
 *   grant's write is on the primary that serves the pool's slot, confirmed
 *   by its replica (no replica warning at start, no write refused).
 * - Trusting another CA, or presenting no client certificate, is one line
 *   and status 1 naming what to fix; nothing crashes, and the password
 *   inside the URL (never sent: the handshake fails first) is not printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '@tokenlease/agent';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { coordinatorCliScript } from '@tokenlease/harness/paths';
import { makePki, type Pki } from '@tokenlease/harness/pki';
import { spawnNode, stop } from '@tokenlease/harness/processes';
import { startRedisCluster, type RedisClusterHandle } from '@tokenlease/harness/redis-cluster';

const POOL = 'api';
const PREFIX = 'tlclustertls';
const SECRET = 's3cret-pw';
/** No REDIS_* setting of the parent's leaks in. */
const CLEAN_ENV: NodeJS.ProcessEnv = Object.fromEntries(
  ['REDIS_URL', 'REDIS_USER', 'REDIS_PASSWORD', 'REDIS_CA', 'REDIS_CERT', 'REDIS_KEY', 'REDIS_REPLICAS'].map((name) => [name, '']),
);

describe('durable mode on a TLS Redis Cluster', () => {
  const dir = scratchDir();
  let pki: Pki;
  let nats: NatsHandle;
  let cluster: RedisClusterHandle;
  let configPath: string;

  beforeAll(async () => {
    pki = makePki(dir);
    [nats, cluster] = await Promise.all([provideNats(), startRedisCluster({ tls: pki })]);
    configPath = writeConfig(dir, { subjectPrefix: PREFIX, pools: { [POOL]: { capacity: 20, refill: '20/s', leaseTtlMs: 1000 } } });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([nats?.stop(), cluster?.stop()]);
  });

  it('serves on rediss+cluster:// with the CA and a client certificate, and its writes land on the pool’s primary', async () => {
    expect(cluster.url).toMatch(/^rediss\+cluster:\/\/127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){5}$/);
    const child = await startCoordinator(nats.url, configPath, {
      redisUrl: cluster.url,
      member: 'c1',
      args: ['--redis-ca', pki.caFile, '--redis-cert', pki.clientCertFile, '--redis-key', pki.clientKeyFile],
      env: CLEAN_ENV,
    });
    const agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: PREFIX, agentId: 'tls-agent', env: {} });
    try {
      expect(await agent.limiter(POOL).take(1, { timeoutMs: 8000 })).toBe(true);
      // The lease it holds was written, before the grant left, on the primary of the pool's slot.
      const primary = await cluster.primaryOf(`${PREFIX}:{${POOL}}:leases`);
      expect(await cluster.command(primary, 'HEXISTS', `${PREFIX}:{${POOL}}:leases`, 'tls-agent')).toBe(1);
      expect(await cluster.command(primary, 'EXISTS', `${PREFIX}:{${POOL}}:level`)).toBe(1);
    } finally {
      await agent.close({ timeoutMs: 500 });
    }
    await stop(child);
    const said = child.lines.join('\n');
    expect(said).not.toMatch(/"replica-warning"|"store-unavailable"|CROSSSLOT/);
  }, 60_000);

  it.each<[string, (pki: Pki) => string[], RegExp]>([
    [
      'trusting another CA',
      (p) => ['--redis-ca', p.otherCaFile, '--redis-cert', p.clientCertFile, '--redis-key', p.clientKeyFile],
      /certificate problem: the server's certificate is not trusted \([A-Z_]+; --redis-ca or REDIS_CA names the CA that signed it\)$/,
    ],
    [
      'presenting no client certificate',
      (p) => ['--redis-ca', p.caFile],
      /: (TLS handshake failure: the server refused our certificate|.*\(no client certificate was given: if the server asks for one, --redis-cert and --redis-key)/,
    ],
  ])(
    'refuses to start %s: one line, status 1, no secret',
    async (_name, flags, reason) => {
      const url = cluster.url.replace('rediss+cluster://', `rediss+cluster://:${SECRET}@`);
      const child = spawnNode('cli', coordinatorCliScript(), ['--config', configPath, '--redis', url, ...flags(pki)], {
        ...CLEAN_ENV,
        NATS_URL: nats.url,
      });
      const { code, signal } = await child.exited;
      const out = `${child.lines.join('\n')}\n${child.stderr()}`.trim();
      expect({ code, signal }, out).toEqual({ code: 1, signal: null });
      expect(out.split('\n'), out).toHaveLength(1);
      expect(out).toMatch(/^tokenlease-coordinator: cannot connect to Redis at rediss\+cluster:\/\/:\*\*\*@127\.0\.0\.1:\d+,/);
      expect(out).toMatch(reason);
      expect(out).not.toContain(SECRET);
      console.log(`redis-cluster-tls: ${out}`);
    },
    30_000,
  );
});
