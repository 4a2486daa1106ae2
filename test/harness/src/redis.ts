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
 * restart keeps every acknowledged write, as the durable mode requires.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findExecutable, loadTestcontainers } from './binaries.js';
import { freePort, waitListening } from './ports.js';
import { spawnProcess, stop, type Child } from './processes.js';

export interface RedisHandle {
  readonly url: string;
  /** How this server was found: env, binary or container. */
  readonly source: 'env' | 'binary' | 'container';
  stop(): Promise<void>;
}

export interface PrivateRedis extends RedisHandle {
  readonly port: number;
  /** kill — SIGKILLs the server and waits until it is gone (its append-only file stays). */
  kill(): Promise<void>;
  /** start — (re)starts the server on the same port and folder. */
  start(): Promise<void>;
}

const HOW_TO_GET_REDIS =
  'no Redis server available: set REDIS_URL=redis://host:port, or install redis-server ' +
  '(Debian: apt-get install redis-server), or run a Docker engine so testcontainers can start one';

/** findRedisServerBinary — the path of an executable redis-server, or null. */
export function findRedisServerBinary(): string | null {
  return findExecutable('redis-server');
}

/** provideRedis — the server tests should use; see the module comment for the order. */
export async function provideRedis(): Promise<RedisHandle> {
  const fromEnv = process.env['REDIS_URL'];
  if (fromEnv !== undefined && fromEnv !== '') return { url: fromEnv, source: 'env', stop: async () => {} };
  return startPrivateRedis();
}

/** startPrivateRedis — a durable redis-server of our own on a free port (binary, else container). */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const binary = findRedisServerBinary();
  if (binary !== null) return startBinaryRedis(binary, await freePort());
  return startContainerRedis();
}

async function startBinaryRedis(binary: string, port: number): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'tokenlease-redis-'));
  let child: Child | null = null;
  const args = [
    '--bind',
    '127.0.0.1',
    '--port',
    String(port),
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--save',
    '',
    '--protected-mode',
    'no',
  ];
  const handle: PrivateRedis = {
    url: `redis://127.0.0.1:${port}`,
    source: 'binary',
    port,
    async start() {
      if (child !== null && child.proc.exitCode === null && child.proc.signalCode === null) return;
      child = spawnProcess(`redis-server:${port}`, binary, args);
      await waitListening('127.0.0.1', port, 10_000);
    },
    async kill() {
      if (child === null) return;
      child.proc.kill('SIGKILL');
      await child.exited;
    },
    async stop() {
      if (child !== null) await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await handle.start();
  return handle;
}

async function startContainerRedis(): Promise<PrivateRedis> {
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
          .withCommand(['redis-server', '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''])
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
  };
  await handle.start();
  return handle;
}
