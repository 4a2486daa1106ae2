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
import { serverFromEnv, startBinaryServer, type PrivateServer, type ServerHandle } from './server-handle.js';

/** NatsHandle — the NATS a suite uses. */
export type NatsHandle = ServerHandle;
/** PrivateNats — a nats-server of our own. */
export type PrivateNats = PrivateServer;

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
  if (binary !== null) {
    const port = await freePort();
    return startBinaryServer({ scheme: 'nats', binary, args: ['-a', '127.0.0.1', '-p', String(port)] }, port);
  }
  return startContainerNats();
}

/** provideNats — the server tests should use; see the module comment for the order. */
export async function provideNats(): Promise<NatsHandle> {
  return serverFromEnv('NATS_URL') ?? startPrivateNats();
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
    pid: () => null,
  };
  await handle.start();
  return handle;
}
