/**
 * A private redis-server run on a configuration file (passwords, ACL
 * users, TLS), on 127.0.0.1 and a free port, in its own folder. For the
 * plain setup tests use redis.ts; this one is for what only a
 * configuration file can say. Only the local binary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findRedisServerBinary } from './redis.js';
import { freePort, waitListening } from './ports.js';
import { spawnProcess, stop, type Child } from './processes.js';

export interface ConfiguredRedis {
  readonly port: number;
  readonly child: Child;
  stop(): Promise<void>;
}

/**
 * startConfiguredRedis — redis-server on the directives `text` (written to
 * `<dir>/<name>.conf`), listening on a free port: a TLS port when `tls` is
 * set (and no plain one), else a plain port.
 */
export async function startConfiguredRedis(dir: string, name: string, text: string, tls = false): Promise<ConfiguredRedis> {
  const binary = findRedisServerBinary();
  if (binary === null) throw new Error('secured Redis tests need the redis-server binary (Debian: apt-get install redis-server)');
  const port = await freePort();
  const file = join(dir, `${name}.conf`);
  const listen = tls ? `port 0\ntls-port ${port}\n` : `port ${port}\n`;
  writeFileSync(file, `bind 127.0.0.1\n${listen}dir ${dir}\nsave ""\nprotected-mode no\n${text}`);
  const child = spawnProcess(`redis-server:${name}:${port}`, binary, [file]);
  try {
    await waitListening('127.0.0.1', port, 10_000);
  } catch (error) {
    await stop(child);
    throw new Error(`redis-server on ${file} did not start: ${child.stderr().slice(-2000)}`, { cause: error });
  }
  return { port, child, stop: () => stop(child) };
}
