/**
 * A private Redis Cluster for tests: `redis-server` binaries on free
 * 127.0.0.1 ports, three primaries with one replica each (or as asked),
 * joined by `redis-cli --cluster create`. Every node runs in its own
 * scratch folder with `cluster-enabled yes`, its own cluster configuration
 * file and `appendonly yes`/`appendfsync always`, as durable mode requires.
 * With `tls` every node listens on TLS alone (`--port 0`), and the cluster
 * bus and replication run over TLS too, each node presenting the client
 * certificate to the others; the cluster's URL is `rediss+cluster://`.
 * Only the local binaries; nothing here touches a server it did not start.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onlineReplicas } from '@tokenlease/coordinator/internal';
import { findExecutable } from './binaries.js';
import { freeClusterPort } from './ports.js';
import { spawnProcess } from './processes.js';
import { redisCommand, redisTlsCommand, type Resp } from './redis-raw.js';
import { findRedisServerBinary, redisServerArgs } from './redis.js';
import { startBinaryServer, type PrivateServer } from './server-handle.js';
import { waitUntil } from './wait.js';

/** ClusterNode — one node of the cluster: a private server (kill and start keep its folder). */
export type ClusterNode = PrivateServer;

/** RedisClusterHandle — the cluster, its nodes, and its URL for `--redis`. */
export interface RedisClusterHandle {
  /** `redis+cluster://127.0.0.1:p1,…` (`rediss+cluster://` with TLS) listing every node as a seed. */
  readonly url: string;
  readonly nodes: readonly ClusterNode[];
  /** command — one command to the node at `port` (over TLS, as the client certificate, on a TLS cluster). */
  command(port: number, ...command: (string | number)[]): Promise<Resp>;
  /** nodeRole — `master` or `slave` as the node at `port` says (ROLE), or null when it does not answer. */
  nodeRole(port: number): Promise<string | null>;
  /** primaryOf — the port of the primary serving the slot of `key`, as `CLUSTER NODES` on a live node says. */
  primaryOf(key: string): Promise<number>;
  /** replicaOf — the ports of the replicas of the primary at `port`, as `CLUSTER NODES` on a live node says. */
  replicaOf(port: number): Promise<number[]>;
  /** waitHealthy — resolves once every live node says `cluster_state:ok`; rejects after `timeoutMs`. */
  waitHealthy(timeoutMs: number): Promise<void>;
  /** stop — stops every node and deletes their folders. */
  stop(): Promise<void>;
}

/** ClusterTls — the certificates of a TLS cluster (pki.ts makes them): the nodes serve `server*`, present `client*` to each other. */
export interface ClusterTls {
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
}

export interface RedisClusterOptions {
  readonly primaries?: number;
  readonly replicasPerPrimary?: number;
  /** cluster-node-timeout, ms (default 1000): how soon a failed primary's replica takes over. */
  readonly nodeTimeoutMs?: number;
  /** Serve TLS only, with these certificates (default: plain TCP). */
  readonly tls?: ClusterTls;
  /** More `redis-server` arguments for every node (e.g. `['--repl-diskless-sync-delay', '0']`). */
  readonly nodeArgs?: readonly string[];
}

/** startRedisCluster — a private cluster, formed and healthy. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterHandle> {
  const binary = findRedisServerBinary();
  const cli = findExecutable('redis-cli');
  if (binary === null || cli === null)
    throw new Error('Redis Cluster tests need redis-server and redis-cli (Debian: apt-get install redis-server)');
  const primaries = options.primaries ?? 3;
  const replicas = options.replicasPerPrimary ?? 1;
  const nodes: ClusterNode[] = [];
  const tls = options.tls ?? null;
  const command = commandOf(tls);
  const handle = clusterHandle(nodes, tls, command);
  try {
    for (let i = 0; i < primaries * (1 + replicas); i++)
      nodes.push(await startNode(binary, await freeClusterPort(), options.nodeTimeoutMs ?? 1000, tls, options.nodeArgs ?? []));
    const create = spawnProcess('redis-cli:cluster-create', cli, [
      ...(tls === null ? [] : ['--tls', '--cacert', tls.caFile, '--cert', tls.clientCertFile, '--key', tls.clientKeyFile]),
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    const exit = await create.exited;
    if (exit.code !== 0)
      throw new Error(
        `redis-cli --cluster create failed (${exit.code}): ${[...create.lines.slice(-20), create.stderr().slice(-2000)].join('\n')}`,
      );
    await handle.waitHealthy(20_000);
    // Every replica attached to its primary, and online as the primary sees it (what a coordinator counts before it
    // trusts a write to be confirmed), so a write can be confirmed from the start. A replica reports its link up
    // while its primary may still be sending it the first sync.
    await waitUntil('Redis Cluster: every replica linked to its primary and online there', 20_000, async () => {
      const roles = await Promise.all(nodes.map((n) => command(n.port, 'ROLE')));
      if (!roles.every((role) => Array.isArray(role) && (role[0] !== 'slave' || role[3] === 'connected'))) return false;
      const primaries = nodes.filter((_, i) => (roles[i] as Resp[])[0] === 'master');
      const infos = await Promise.all(primaries.map((n) => command(n.port, 'INFO', 'replication')));
      return infos.every((info) => typeof info === 'string' && (onlineReplicas(info) ?? 0) >= replicas);
    });
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return handle;
}

/** NodeCommand — one command to the node on 127.0.0.1:`port`, over TLS for a TLS cluster. */
type NodeCommand = (port: number, ...command: (string | number)[]) => Promise<Resp>;

function commandOf(tls: ClusterTls | null): NodeCommand {
  if (tls === null) return (port, ...command) => redisCommand(`redis://127.0.0.1:${port}`, ...command);
  const files = { caFile: tls.caFile, certFile: tls.clientCertFile, keyFile: tls.clientKeyFile };
  return (port, ...command) => redisTlsCommand(`rediss://127.0.0.1:${port}`, files, ...command);
}

async function startNode(
  binary: string,
  port: number,
  nodeTimeoutMs: number,
  tls: ClusterTls | null,
  nodeArgs: readonly string[],
): Promise<ClusterNode> {
  const dir = mkdtempSync(join(tmpdir(), 'tokenlease-redis-cluster-'));
  const args = [
    ...redisServerArgs(port, dir, true),
    ...['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-node-timeout', String(nodeTimeoutMs)],
    ...(tls === null
      ? []
      : [
          ...['--port', '0', '--tls-port', String(port), '--tls-cluster', 'yes', '--tls-replication', 'yes', '--tls-auth-clients', 'yes'],
          ...['--tls-cert-file', tls.serverCertFile, '--tls-key-file', tls.serverKeyFile, '--tls-ca-cert-file', tls.caFile],
          ...['--tls-client-cert-file', tls.clientCertFile, '--tls-client-key-file', tls.clientKeyFile],
        ]),
    ...nodeArgs,
  ];
  const scheme = tls === null ? 'redis' : 'rediss';
  return startBinaryServer({ scheme, binary, args, cleanUp: () => rmSync(dir, { recursive: true, force: true }) }, port);
}

/** clusterNodes — the id, port and primary's id (`-` for a primary) of every node, as `CLUSTER NODES` on the first live node says. */
async function clusterNodes(
  live: readonly ClusterNode[],
  command: NodeCommand,
): Promise<Array<{ id: string; port: number; masterId: string }>> {
  const node = live[0];
  if (node === undefined) throw new Error('Redis Cluster: no node is running');
  const text = String(await command(node.port, 'CLUSTER', 'NODES'));
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id, address, , masterId] = line.split(' ');
      return { id: id ?? '', port: Number((address ?? '').split('@')[0]?.split(':')[1]), masterId: masterId ?? '-' };
    });
}

function clusterHandle(nodes: ClusterNode[], tls: ClusterTls | null, command: NodeCommand): RedisClusterHandle {
  const live = (): ClusterNode[] => nodes.filter((n) => n.pid() !== null);
  return {
    get url() {
      return `${tls === null ? 'redis' : 'rediss'}+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
    },
    nodes,
    command,
    async nodeRole(port) {
      const role = await command(port, 'ROLE').catch(() => null);
      return Array.isArray(role) && typeof role[0] === 'string' ? role[0] : null;
    },
    async primaryOf(key) {
      const node = live()[0];
      if (node === undefined) throw new Error('Redis Cluster: no node is running');
      const slot = Number(await command(node.port, 'CLUSTER', 'KEYSLOT', key));
      const text = String(await command(node.port, 'CLUSTER', 'NODES'));
      for (const line of text.split('\n')) {
        const [, address, flags, , , , , state, ...ranges] = line.split(' ');
        if (!(flags ?? '').includes('master') || (flags ?? '').includes('fail') || state !== 'connected') continue;
        for (const range of ranges) {
          const [from, to] = range.split('-').map(Number);
          if (from !== undefined && slot >= from && slot <= (to ?? from)) return Number((address ?? '').split('@')[0]?.split(':')[1]);
        }
      }
      throw new Error(`Redis Cluster: no live primary serves slot ${slot} of ${key}`);
    },
    async replicaOf(port) {
      const lines = await clusterNodes(live(), command);
      const primary = lines.find((l) => l.port === port);
      if (primary === undefined) throw new Error(`Redis Cluster: no node on port ${port}`);
      return lines.filter((l) => l.masterId === primary.id).map((l) => l.port);
    },
    async waitHealthy(timeoutMs) {
      await waitUntil('Redis Cluster: cluster_state:ok on every live node', timeoutMs, async () => {
        const infos = await Promise.all(live().map((n) => command(n.port, 'CLUSTER', 'INFO')));
        return infos.every((info) => String(info).includes('cluster_state:ok'));
      });
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}
