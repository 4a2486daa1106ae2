/**
 * Servers inside a NetLab host (netns.ts): a private nats-server or
 * redis-server of the host's own, listening on the host's address at the
 * server's usual port (each host has its own ports), so every process of
 * the lab, and the test process through the lab's bridge, reaches it by
 * one URL, and a fault between two hosts cuts exactly the traffic between
 * them. Only local binaries (binaries.ts finds them).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NetHost, NetLab } from './netns.js';
import { findNatsServerBinary } from './nats.js';
import { waitListening } from './ports.js';
import { findRedisServerBinary, redisServerArgs } from './redis.js';
import { stop, type Child } from './processes.js';

/** HostServer — a server running in a lab host. */
export interface HostServer {
  readonly url: string;
  readonly host: NetHost;
  readonly child: Child;
  stop(): Promise<void>;
}

const NATS_PORT = 4222;
const REDIS_PORT = 6379;
const READY_WITHIN_MS = 10_000;

/** startHostNats — nats-server in `host`, on its address, port 4222; resolves once it listens. */
export async function startHostNats(lab: NetLab, host: NetHost): Promise<HostServer> {
  const binary = findNatsServerBinary();
  if (binary === null) throw new Error('network-fault scenarios need the nats-server binary (Debian: apt-get install nats-server)');
  const child = lab.spawn(host, `nats-server@${host.name}`, binary, ['-a', host.address, '-p', String(NATS_PORT)]);
  return ready({ url: `nats://${host.address}:${NATS_PORT}`, host, child, stop: () => stop(child) }, NATS_PORT);
}

/** startHostRedis — a durable redis-server (append-only, fsync always) in `host`, on its address, port 6379. */
export async function startHostRedis(lab: NetLab, host: NetHost): Promise<HostServer> {
  const binary = findRedisServerBinary();
  if (binary === null) throw new Error('network-fault scenarios need the redis-server binary (Debian: apt-get install redis-server)');
  const dir = mkdtempSync(join(tmpdir(), 'tokenlease-redis-'));
  const child = lab.spawn(host, `redis-server@${host.name}`, binary, redisServerArgs(REDIS_PORT, dir, true, host.address));
  const server: HostServer = {
    url: `redis://${host.address}:${REDIS_PORT}`,
    host,
    child,
    stop: async () => {
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return ready(server, REDIS_PORT);
}

async function ready(server: HostServer, port: number): Promise<HostServer> {
  try {
    await waitListening(server.host.address, port, READY_WITHIN_MS);
  } catch (error) {
    await server.stop();
    throw new Error(`${server.child.name} did not start: ${server.child.stderr().slice(-2000)}`, { cause: error });
  }
  return server;
}
