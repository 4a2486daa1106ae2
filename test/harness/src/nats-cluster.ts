/**
 * A private NATS cluster of `size` nodes on free 127.0.0.1 ports (local
 * nats-server binary only), for chaos tests that lose a node. Clients
 * connect to node 0 and learn the others from the cluster's gossip.
 */
import { findNatsServerBinary } from './nats.js';
import { freePort, waitListening } from './ports.js';
import { spawnProcess, stop, type Child } from './processes.js';

export interface NatsNode {
  readonly clientPort: number;
  readonly url: string;
  child: Child | null;
}

export interface NatsCluster {
  readonly nodes: readonly NatsNode[];
  /** Client URL of node 0. */
  readonly url: string;
  /** kill — SIGKILLs node `index`; resolves with whether it is verified dead. */
  kill(index: number): Promise<boolean>;
  stop(): Promise<void>;
}

export async function startNatsCluster(size: number): Promise<NatsCluster> {
  const binary = findNatsServerBinary();
  if (binary === null) throw new Error('a NATS cluster needs the nats-server binary (Debian: apt-get install nats-server)');
  const clientPorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  const nodes: NatsNode[] = clientPorts.map((clientPort) => ({ clientPort, url: `nats://127.0.0.1:${clientPort}`, child: null }));
  nodes.forEach((node, i) => {
    node.child = spawnProcess(`nats-node-${i}`, binary, [
      '-a',
      '127.0.0.1',
      '-p',
      String(node.clientPort),
      '--cluster_name',
      'tokenlease-chaos',
      '--cluster',
      `nats://127.0.0.1:${routePorts[i]}`,
      '--routes',
      routes,
    ]);
  });
  await Promise.all(nodes.map((node) => waitListening('127.0.0.1', node.clientPort, 10_000)));
  return {
    nodes,
    url: (nodes[0] as NatsNode).url,
    async kill(index) {
      const child = nodes[index]?.child;
      if (child === null || child === undefined) return false;
      child.proc.kill('SIGKILL');
      const { signal } = await child.exited;
      return signal === 'SIGKILL';
    },
    async stop() {
      await Promise.all(nodes.flatMap(({ child }) => (child === null ? [] : [stop(child)])));
    },
  };
}
