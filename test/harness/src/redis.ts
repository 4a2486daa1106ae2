/**
 * Redis for tests, decided by configuration, never by skipping:
 * 1. `$REDIS_URL` set: use that server (CI sets it to the machine's Redis);
 *    tests keep apart by key prefix.
 * 2. else a `redis-server` binary on PATH (or /usr/bin, /usr/sbin,
 *    /usr/local/bin): start a private server on a free 127.0.0.1 port.
 * 3. else a Docker engine: a Redis container through testcontainers.
 * 4. else fail, saying what to install.
 * Tests that kill or restart Redis always use a private server
 * (`startPrivateRedis`), never the configured one. A private server runs
 * with `appendonly yes` and `appendfsync always` in its own folder, so a
 * restart keeps every acknowledged write, as the durable mode requires;
 * `{ durable: false }` starts one without the append-only file, as Redis is
 * commonly run for rate limiting (the comparison benchmark's).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findExecutable, loadTestcontainers } from './binaries.js';
import { freePort, waitListening } from './ports.js';
import { serverFromEnv, startBinaryServer, type PrivateServer, type ServerHandle } from './server-handle.js';

/** RedisHandle — the Redis a suite uses. */
export type RedisHandle = ServerHandle;
/** PrivateRedis — a redis-server of our own; a kill keeps its append-only file. */
export type PrivateRedis = PrivateServer;

const HOW_TO_GET_REDIS =
  'no Redis server available: set REDIS_URL=redis://host:port, or install redis-server ' +
  '(Debian: apt-get install redis-server), or run a Docker engine so testcontainers can start one';

/** findRedisServerBinary — the path of an executable redis-server, or null. */
export function findRedisServerBinary(): string | null {
  return findExecutable('redis-server');
}

/** provideRedis — the server tests should use; see the module comment for the order. */
export async function provideRedis(): Promise<RedisHandle> {
  return serverFromEnv('REDIS_URL') ?? startPrivateRedis();
}

/** PrivateRedisOptions — how a private redis-server runs. */
export interface PrivateRedisOptions {
  /** Append-only file with fsync on every write (default true); false: no persistence at all. */
  readonly durable?: boolean;
}

/**
 * redisServerArgs — a private redis-server's command line: `bind`:`port`
 * (default 127.0.0.1), its files in `dir`, no snapshots; durable: an
 * append-only file fsynced on every write, else no persistence at all.
 */
export function redisServerArgs(port: number, dir: string, durable: boolean, bind = '127.0.0.1'): string[] {
  return [
    ...['--bind', bind, '--port', String(port), '--dir', dir],
    ...(durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    ...['--save', '', '--protected-mode', 'no'],
  ];
}

/** startPrivateRedis — a redis-server of our own on a free port (binary, else container), durable unless told otherwise. */
export async function startPrivateRedis(options: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  const durable = options.durable ?? true;
  const binary = findRedisServerBinary();
  if (binary !== null) return startBinaryRedis(binary, await freePort(), durable);
  return startContainerRedis(durable);
}

async function startBinaryRedis(binary: string, port: number, durable: boolean): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'tokenlease-redis-'));
  const args = redisServerArgs(port, dir, durable);
  return startBinaryServer({ scheme: 'redis', binary, args, cleanUp: () => rmSync(dir, { recursive: true, force: true }) }, port);
}

async function startContainerRedis(durable: boolean): Promise<PrivateRedis> {
  const testcontainers = await loadTestcontainers(HOW_TO_GET_REDIS);
  const port = await freePort();
  let container: Awaited<ReturnType<InstanceType<typeof testcontainers.GenericContainer>['start']>> | null = null;
  const handle: PrivateRedis = {
    url: `redis://127.0.0.1:${port}`,
    source: 'container',
    port,
    async start() {
      if (container !== null) {
        await container.restart();
      } else {
        container = await new testcontainers.GenericContainer('redis:7-alpine')
          .withCommand([
            'redis-server',
            ...(durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
            '--save',
            '',
          ])
          .withExposedPorts({ container: 6379, host: port })
          .start();
      }
      await waitListening('127.0.0.1', port, 10_000);
    },
    async kill() {
      // The container (and its append-only file) stays; start() restarts it.
      await container?.stop({ timeout: 0, remove: false });
    },
    async stop() {
      await container?.stop({ timeout: 0 });
      container = null;
    },
    pid: () => null,
  };
  await handle.start();
  return handle;
}
