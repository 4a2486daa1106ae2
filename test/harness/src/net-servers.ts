/**
 * Servers inside a NetLab host (netns.ts): a private nats-server or
 * redis-server of the host's own, listening on the host's address at the
 * server's usual port (each host has its own ports), so every process of
 * the lab, and the test process through the lab's bridge, reaches it by
 * one URL, and a fault between two hosts cuts exactly the traffic between
 * them. A NATS cluster puts one server in each of several hosts, joined by
 * routes, so a fault can cut a server off from its peers while its own
 * clients stay on it. Only local binaries (binaries.ts finds them).
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

const ROUTE_PORT = 6222;
const MONITOR_PORT = 8222;
/** How long a cluster's routes may take to form, ms. */
const ROUTES_WITHIN_MS = 15_000;

/** HostCluster — nats-servers in lab hosts joined by routes: each server's own client URL, in the order of its hosts. */
export interface HostCluster {
  readonly servers: readonly HostServer[];
  /** routesOf — how many routes server `index` has now (its monitoring endpoint's /routez), or null if it does not answer. */
  routesOf(index: number): Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * startHostNatsCluster — one nats-server in each of `hosts` (at least two),
 * each routed to all the others (cluster port 6222, monitoring on 8222 of
 * its address); resolves once every server has a route to every other.
 */
export async function startHostNatsCluster(lab: NetLab, hosts: readonly NetHost[], clusterName: string): Promise<HostCluster> {
  if (hosts.length < 2) throw new RangeError(`a NATS cluster needs at least two hosts, got ${hosts.length}`);
  const binary = findNatsServerBinary();
  if (binary === null) throw new Error('a NATS cluster needs the nats-server binary (Debian: apt-get install nats-server)');
  const routes = hosts.map((h) => `nats://${h.address}:${ROUTE_PORT}`).join(',');
  const servers: HostServer[] = [];
  const routesOf = async (index: number): Promise<number | null> => {
    const host = hosts[index];
    if (host === undefined) return null;
    try {
      const response = await fetch(`http://${host.address}:${MONITOR_PORT}/routez`, { signal: AbortSignal.timeout(1000) });
      const body = (await response.json()) as { num_routes?: unknown };
      return typeof body.num_routes === 'number' ? body.num_routes : null;
    } catch {
      return null;
    }
  };
  const cluster: HostCluster = {
    servers,
    routesOf,
    stop: async () => {
      for (const server of servers) await server.stop();
    },
  };
  try {
    for (const host of hosts) {
      const args = ['-a', host.address, '-p', String(NATS_PORT), '-m', String(MONITOR_PORT)];
      args.push('--cluster_name', clusterName, '--cluster', `nats://${host.address}:${ROUTE_PORT}`, '--routes', routes);
      const child = lab.spawn(host, `nats-server@${host.name}`, binary, args);
      servers.push(await ready({ url: `nats://${host.address}:${NATS_PORT}`, host, child, stop: () => stop(child) }, NATS_PORT));
    }
    const deadline = performance.now() + ROUTES_WITHIN_MS;
    for (;;) {
      const counts = await Promise.all(hosts.map((_, i) => routesOf(i)));
      // A server may count a route to a peer twice while both dial each other: at least one to each is what matters.
      if (counts.every((n) => n !== null && n >= hosts.length - 1)) return cluster;
      if (performance.now() > deadline)
        throw new Error(`the NATS cluster's routes did not form within ${ROUTES_WITHIN_MS} ms (routes: ${counts.join(', ')})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await cluster.stop();
    throw error;
  }
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
