/** Free TCP ports and readiness checks on 127.0.0.1 only. */
import { createConnection, createServer } from 'node:net';

/** freePort — a port nothing listens on right now, chosen by the OS. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** CLUSTER_BUS_OFFSET — a Redis Cluster node also listens on its port + 10000 (the cluster bus). */
const CLUSTER_BUS_OFFSET = 10_000;

/**
 * freeClusterPort — a free port whose cluster-bus port (+10000) is free too,
 * for a Redis Cluster node: a node whose bus port is taken cannot join.
 */
export async function freeClusterPort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await freePort();
    if (port + CLUSTER_BUS_OFFSET <= 65_535 && (await canListen(port + CLUSTER_BUS_OFFSET))) return port;
  }
  throw new Error('no free port with a free cluster-bus port (+10000) in 100 tries');
}

/** canListen — whether a server can listen on 127.0.0.1:`port` right now (it is closed again at once). */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** isListening — whether a TCP connect to host:port succeeds within `timeoutMs`. */
export function isListening(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** waitListening — polls until host:port accepts connections; rejects after `timeoutMs`. */
export async function waitListening(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await isListening(host, port, 200)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
}
