/**
 * A private nats-server run on a configuration file (logins, TLS,
 * permissions), on a free 127.0.0.1 port whatever the file says: the
 * command line's `-a` and `-p` win over the file's `listen`. Only the
 * local binary: a configuration names files on this machine.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findNatsServerBinary } from './nats.js';
import { securedNatsConfig } from './paths.js';
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

/** SHIPPED_USERS — the users of deploy/nats/secured.conf; its subject prefix is `tokenlease`; `edge` is a relay's. */
export const SHIPPED_USERS = ['coordinator', 'operator', 'checkout', 'search', 'edge'] as const;
export type ShippedUser = (typeof SHIPPED_USERS)[number];

export interface ShippedNats extends ConfiguredNats {
  /** The password of `user` (a shipped one, or one added), as a client gives it. */
  password(user: string): string;
}

/** The ops an agent user may publish, as the shipped agent blocks allow them: lease requests, no operator op. */
const LEASE_OPS = ['acquire', 'return', 'report'] as const;

/** AddedAgent — an agent user added to the shipped file: it sends lease requests under its own name on `prefix` and reads `_INBOX_<user>`. */
export interface AddedAgent {
  readonly user: string;
  readonly prefix: string;
}

/**
 * startShippedNats — nats-server on deploy/nats/secured.conf as shipped
 * (with `added` agent users appended to its users, in the shipped agent
 * blocks' form), each user's password random and handed over in its
 * environment variable, quoted (the server reads it as a configuration
 * value). The passwords hold '#', ':' and a space, which unquoted would be
 * cut short or refused.
 */
export async function startShippedNats(dir: string, added: readonly AddedAgent[] = []): Promise<ShippedNats> {
  const users = [...SHIPPED_USERS, ...added.map((a) => a.user)];
  const passwords = new Map<string, string>(users.map((user) => [user, `${randomBytes(9).toString('hex')}#p:w d`]));
  const env = Object.fromEntries(users.map((user) => [`TOKENLEASE_${user.toUpperCase()}_PASSWORD`, `"${passwords.get(user)}"`]));
  let config: { readonly file: string } | { readonly text: string } = { file: securedNatsConfig() };
  if (added.length > 0) {
    const blocks = added.map(
      ({ user, prefix }) =>
        `    {\n      user: ${user}\n      password: $TOKENLEASE_${user.toUpperCase()}_PASSWORD\n      permissions: {\n` +
        `        publish = { allow = [${LEASE_OPS.map((op) => `"${prefix}.v2.${op}.*.${user}"`).join(', ')}] }\n` +
        `        subscribe = { allow = ["_INBOX_${user}.>"] }\n      }\n    }\n`,
    );
    const shipped = readFileSync(securedNatsConfig(), 'utf8');
    const end = shipped.lastIndexOf('  ]\n}');
    if (end < 0) throw new Error('deploy/nats/secured.conf: no end of the users list');
    config = { text: shipped.slice(0, end) + blocks.join('') + shipped.slice(end) };
  }
  const server = await startConfiguredNats(dir, 'secured', config, env);
  return { ...server, password: (user) => passwords.get(user) as string };
}
