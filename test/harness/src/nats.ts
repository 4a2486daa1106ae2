/**
 * NATS for tests, decided by configuration, never by skipping:
 * 1. `$NATS_URL` set: use that server (CI sets it to the machine's server).
 * 2. else a `nats-server` binary on PATH (or /usr/sbin, /usr/local/bin):
 *    start a private server on a free 127.0.0.1 port.
 * 3. else a Docker engine: a NATS container through testcontainers.
 * 4. else fail, saying what to install.
 * Chaos-style tests that must kill or restart NATS always use a private
 * server (`startPrivateNats`), never the configured one.
 */
import { findExecutable, loadTestcontainers } from './binaries.js';
import { freePort, waitListening } from './ports.js';
import { spawnProcess, stop, type Child } from './processes.js';

export interface NatsHandle {
  readonly url: string;
  /** How this server was found: env, binary or container. */
  readonly source: 'env' | 'binary' | 'container';
  stop(): Promise<void>;
}

export interface PrivateNats extends NatsHandle {
  readonly port: number;
  /** kill — SIGKILLs the server and waits until it is gone. */
  kill(): Promise<void>;
  /** start — (re)starts the server on the same port. */
  start(): Promise<void>;
}

const HOW_TO_GET_NATS =
  'no NATS server available: set NATS_URL=nats://host:port, or install nats-server ' +
  '(Debian: apt-get install nats-server; or a release binary from the NATS project on PATH), ' +
  'or run a Docker engine so testcontainers can start one';

/** findNatsServerBinary — the path of an executable nats-server, or null. */
export function findNatsServerBinary(): string | null {
  return findExecutable('nats-server');
}

/** startPrivateNats — a nats-server of our own on a free port (binary, else container). */
export async function startPrivateNats(): Promise<PrivateNats> {
  const binary = findNatsServerBinary();
  if (binary !== null) return startBinaryNats(binary, await freePort());
  return startContainerNats();
}

/** provideNats — the server tests should use; see the module comment for the order. */
export async function provideNats(): Promise<NatsHandle> {
  const fromEnv = process.env['NATS_URL'];
  if (fromEnv !== undefined && fromEnv !== '') {
    return { url: fromEnv, source: 'env', stop: async () => {} };
  }
  return startPrivateNats();
}

async function startBinaryNats(binary: string, port: number): Promise<PrivateNats> {
  let child: Child | null = null;
  const handle: PrivateNats = {
    url: `nats://127.0.0.1:${port}`,
    source: 'binary',
    port,
    async start() {
      if (child !== null && child.proc.exitCode === null && child.proc.signalCode === null) return;
      child = spawnProcess(`nats-server:${port}`, binary, ['-a', '127.0.0.1', '-p', String(port)]);
      await waitListening('127.0.0.1', port, 10_000);
    },
    async kill() {
      if (child === null) return;
      child.proc.kill('SIGKILL');
      await child.exited;
    },
    async stop() {
      if (child !== null) await stop(child);
    },
  };
  await handle.start();
  return handle;
}

async function startContainerNats(): Promise<PrivateNats> {
  const testcontainers = await loadTestcontainers(HOW_TO_GET_NATS);
  const port = await freePort();
  let container: Awaited<ReturnType<InstanceType<typeof testcontainers.GenericContainer>['start']>> | null = null;
  const handle: PrivateNats = {
    url: `nats://127.0.0.1:${port}`,
    source: 'container',
    port,
    async start() {
      if (container !== null) return;
      container = await new testcontainers.GenericContainer('nats:2.10-alpine').withExposedPorts({ container: 4222, host: port }).start();
      await waitListening('127.0.0.1', port, 10_000);
    },
    async kill() {
      if (container === null) return;
      await container.stop({ timeout: 0 });
      container = null;
    },
    async stop() {
      await handle.kill();
    },
  };
  await handle.start();
  return handle;
}
