/**
 * A private nats-server run on a configuration file (logins, TLS,
 * permissions), on a free 127.0.0.1 port whatever the file says: the
 * command line's `-a` and `-p` win over the file's `listen`. Only the
 * local binary: a configuration names files on this machine.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findNatsServerBinary } from './nats.js';
import { freePort, waitListening } from './ports.js';
import { spawnProcess, stop, type Child } from './processes.js';

export interface ConfiguredNats {
  /** `nats://127.0.0.1:<port>`, no credentials. */
  readonly url: string;
  readonly port: number;
  readonly child: Child;
  stop(): Promise<void>;
}

/**
 * startConfiguredNats — nats-server on the configuration `text` (written to
 * `<dir>/<name>.conf`) or on the file `configFile`, with `env` added to its
 * environment (a configuration's `$VARIABLE`s are read from it).
 */
export async function startConfiguredNats(
  dir: string,
  name: string,
  config: { readonly text: string } | { readonly file: string },
  env: NodeJS.ProcessEnv = {},
): Promise<ConfiguredNats> {
  const binary = findNatsServerBinary();
  if (binary === null) throw new Error('secured NATS tests need the nats-server binary (Debian: apt-get install nats-server)');
  const file = 'file' in config ? config.file : join(dir, `${name}.conf`);
  if ('text' in config) writeFileSync(file, config.text);
  const port = await freePort();
  const child = spawnProcess(`nats-server:${name}:${port}`, binary, ['-c', file, '-a', '127.0.0.1', '-p', String(port)], env);
  try {
    await waitListening('127.0.0.1', port, 10_000);
  } catch (error) {
    await stop(child);
    throw new Error(`nats-server on ${file} did not start: ${child.stderr().slice(-2000)}`, { cause: error });
  }
  return { url: `nats://127.0.0.1:${port}`, port, child, stop: () => stop(child) };
}
