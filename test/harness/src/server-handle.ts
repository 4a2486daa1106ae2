/**
 * A server a suite uses (NATS, Redis), whichever way it was found: named by
 * the environment (not ours: stop leaves it running), or a private one on a
 * free port that a test may kill and start again.
 */
import { spawnProcess, stop, type Child } from './processes.js';
import { waitListening } from './ports.js';

/** ServerHandle — where a server is, how it was found, and how to let it go. */
export interface ServerHandle {
  readonly url: string;
  /** How this server was found: env, binary or container. */
  readonly source: 'env' | 'binary' | 'container';
  stop(): Promise<void>;
}

/** PrivateServer — a server of our own, on a port of its own. */
export interface PrivateServer extends ServerHandle {
  readonly port: number;
  /** kill — SIGKILLs the server and waits until it is gone (what it keeps on disk stays). */
  kill(): Promise<void>;
  /** start — (re)starts the server on the same port (and folder). */
  start(): Promise<void>;
  /** pid — the server's process id while it runs (to read its CPU time in /proc); null when stopped or in a container. */
  pid(): number | null;
}

/** serverFromEnv — the server `$variable` names, or null when it is unset or empty. */
export function serverFromEnv(variable: string): ServerHandle | null {
  const url = process.env[variable];
  if (url === undefined || url === '') return null;
  return { url, source: 'env', stop: async () => {} };
}

/** BinaryServer — how to run one server binary: its URL scheme, the binary, its arguments for a port, and what to clean after it. */
export interface BinaryServer {
  readonly scheme: string;
  readonly binary: string;
  readonly args: readonly string[];
  readonly cleanUp?: () => void;
}

/** startBinaryServer — `binary args` on 127.0.0.1:`port`, started and listening. */
export async function startBinaryServer(server: BinaryServer, port: number): Promise<PrivateServer> {
  let child: Child | null = null;
  const name = server.binary.split('/').pop() ?? server.binary;
  const handle: PrivateServer = {
    url: `${server.scheme}://127.0.0.1:${port}`,
    source: 'binary',
    port,
    async start() {
      if (child !== null && child.proc.exitCode === null && child.proc.signalCode === null) return;
      child = spawnProcess(`${name}:${port}`, server.binary, server.args);
      await waitListening('127.0.0.1', port, 10_000);
    },
    async kill() {
      if (child === null) return;
      child.proc.kill('SIGKILL');
      await child.exited;
    },
    async stop() {
      if (child !== null) await stop(child);
      server.cleanUp?.();
    },
    pid: () => (child !== null && child.proc.exitCode === null && child.proc.signalCode === null ? child.pid : null),
  };
  await handle.start();
  return handle;
}
