/**
 * A private Redis Sentinel setup for tests: a primary and two replicas
 * (private redis-servers, append-only, fsync always) watched by three
 * sentinels (`redis-server <conf> --sentinel`, each with its own writable
 * configuration file) under the master name `tlprimary`, quorum 2, a
 * primary counted down after 1 s. Resolves once every sentinel knows both
 * replicas and the other two sentinels, so a failover can be agreed on,
 * and the promoted replica still has a replica to confirm writes.
 * Only the local binary; nothing here touches a server it did not start.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { redisCommand } from './redis-raw.js';
import { findRedisServerBinary, startPrivateRedis, type PrivateRedis } from './redis.js';
import { startBinaryServer, type PrivateServer } from './server-handle.js';

/** SENTINEL_MASTER — the name the sentinels know the primary by. */
export const SENTINEL_MASTER = 'tlprimary';

export interface RedisSentinelHandle {
  /** `redis+sentinel://127.0.0.1:s1,…/tlprimary`, for `--redis`. */
  readonly url: string;
  readonly primary: PrivateRedis;
  readonly replicas: readonly PrivateRedis[];
  readonly sentinels: readonly PrivateServer[];
  /** primaryPort — the port of the primary the first live sentinel names now. */
  primaryPort(): Promise<number>;
  stop(): Promise<void>;
}

async function until(what: string, timeoutMs: number, test: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await test().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`Redis Sentinel: ${what}: not within ${timeoutMs} ms`);
}

/** startRedisSentinel — a primary, its two replicas and three sentinels, ready to fail over. */
export async function startRedisSentinel(): Promise<RedisSentinelHandle> {
  const binary = findRedisServerBinary();
  if (binary === null) throw new Error('Redis Sentinel tests need the redis-server binary (Debian: apt-get install redis-server)');
  const started: Array<{ stop(): Promise<void> }> = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(started.map((s) => s.stop()));
  };
  try {
    const primary = await startPrivateRedis();
    started.push(primary);
    const replicas = [await startPrivateRedis(), await startPrivateRedis()];
    started.push(...replicas);
    // No five-second wait before a first sync (on any, as any may become the primary): a replica is online at once.
    for (const node of [primary, ...replicas]) await redisCommand(node.url, 'CONFIG', 'SET', 'repl-diskless-sync-delay', '0');
    for (const replica of replicas) await redisCommand(replica.url, 'REPLICAOF', '127.0.0.1', String(primary.port));
    const sentinels: PrivateServer[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'tokenlease-sentinel-'));
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          'protected-mode no',
          `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
          `sentinel failover-timeout ${SENTINEL_MASTER} 3000`,
          '',
        ].join('\n'),
      );
      const args = [conf, '--sentinel'];
      const sentinel = await startBinaryServer(
        { scheme: 'redis', binary, args, cleanUp: () => rmSync(dir, { recursive: true, force: true }) },
        port,
      );
      sentinels.push(sentinel);
      started.push(sentinel);
    }
    await until('every sentinel knows both replicas and the other sentinels', 30_000, async () => {
      const ready = await Promise.all(
        sentinels.map(async (s) => {
          const known = await redisCommand(s.url, 'SENTINEL', 'REPLICAS', SENTINEL_MASTER);
          const peers = await redisCommand(s.url, 'SENTINEL', 'SENTINELS', SENTINEL_MASTER);
          return Array.isArray(known) && known.length === 2 && Array.isArray(peers) && peers.length === 2;
        }),
      );
      return ready.every(Boolean);
    });
    return {
      url: `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${SENTINEL_MASTER}`,
      primary,
      replicas,
      sentinels,
      async primaryPort() {
        const live = sentinels.find((s) => s.pid() !== null);
        if (live === undefined) throw new Error('Redis Sentinel: no sentinel is running');
        const address = await redisCommand(live.url, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER);
        return Array.isArray(address) ? Number(address[1]) : NaN;
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
