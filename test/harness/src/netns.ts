/**
 * NetLab: real network faults between processes, from Linux network
 * namespaces and nftables. Hosts are network namespaces, each with one
 * veth link into a bridge that lives in a switch namespace of the lab's
 * own; the test process reaches the bridge too, through one more veth
 * pair whose root end holds the lab's `.254` address (that is the only
 * thing the lab puts in the machine's own namespace: a link of its own
 * name, with a route to the lab's /24 only; no real interface, no
 * 127.0.0.1 service, no global firewall rule is touched).
 *
 * Rules:
 * - Addresses: 10.213.S.0/24, S picked per lab among the subnets the
 *   machine has no route to; host i is 10.213.S.(i+1), the test process
 *   10.213.S.254. Ports need no choosing: every host has its own.
 * - Faults are packet drops on the receiving side only, in each host's own
 *   nft table (`inet tlnf`, chain `input`): `cut(a, b)` drops a→b and b→a,
 *   `drop(from, to)` only from→to, `restore(a, b)` lifts both. A sender
 *   sees silence, as across a real partition (a drop on output would fail
 *   its sends at once with EPERM instead). The rules of a host are
 *   rewritten whole from the lab's own record of blocked pairs, so each
 *   command is idempotent.
 * - Processes run in a host through `ip netns exec <ns> <command>`, which
 *   execs: the child's pid is the process's, and it is a registered child
 *   of processes.ts (logs, stop(), stopAll() as for any other).
 * - Names carry the creating process's pid (`tlnf<pid>l<k>`, hosts
 *   `tlnf<pid>l<k>-<host>`), so parallel runs never meet, and a lab whose
 *   creator died is swept by the next lab made on the machine.
 * - Everything made is removed by `destroy()` (which the caller runs in a
 *   finally/afterAll), and by an exit hook, also on SIGINT and SIGTERM.
 * - Where namespaces are not permitted, `NetLab.create` throws a
 *   NetnsUnavailableError whose message is one line saying why.
 */
import { execFile, execFileSync } from 'node:child_process';
import { spawnProcess, type Child } from './processes.js';
import { findExecutable } from './binaries.js';

/** NetnsUnavailableError — network namespaces or nftables cannot be used here; `message` is one line. */
export class NetnsUnavailableError extends Error {
  override readonly name = 'NetnsUnavailableError';
  readonly code = 'netns-unavailable';
}

/** NetHost — one host of a lab: its namespace and its address on the lab's bridge. */
export interface NetHost {
  readonly name: string;
  readonly ns: string;
  readonly address: string;
}

/**
 * NETNS_SKIP_ENV — set to `skip` to have tests that need network namespaces
 * skipped (their reason printed) where namespaces are not permitted; unset,
 * such tests fail with that reason. Decided by configuration, never found out.
 */
export const NETNS_SKIP_ENV = 'TOKENLEASE_NETNS_UNAVAILABLE';

/** NAME_PREFIX — the prefix of every namespace and link a lab makes. */
export const NAME_PREFIX = 'tlnf';
/** SUBNET_BASE — the lab subnets are SUBNET_BASE.S.0/24, S in [1, 250]. */
const SUBNET_BASE = '10.213';
/** TEST_HOST_OCTET — the test process's address on the lab's bridge ends with this. */
const TEST_HOST_OCTET = 254;
/** MAX_HOSTS — hosts per lab (addresses .1 to .MAX_HOSTS). */
const MAX_HOSTS = 200;
const HOST_NAME = /^[a-z][a-z0-9]{0,7}$/;
const LEFTOVER = new RegExp(`^${NAME_PREFIX}(\\d+)l\\d+(-[a-z0-9]+)?$`);

const live = new Set<NetLab>();
let labCount = 0;
let hooked = false;

/** run — `command args` (stdin `input`), resolving with stdout; rejects with its stderr's first line. */
function run(command: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { timeout: 10_000 }, (error, stdout, stderr) => {
      if (error === null) return resolve(stdout);
      const why = stderr.trim().split('\n')[0] || error.message;
      reject(new Error(`${command} ${args.join(' ')}: ${why}`));
    });
    // A command that reads no stdin may exit before it is closed: that is no failure.
    child.stdin?.on('error', () => {});
    if (input === undefined) child.stdin?.end();
    else child.stdin?.end(input);
  });
}

/** runQuietly — `command args` now, synchronously, ignoring failure (exit hooks and sweeps). */
function runQuietly(command: string, args: readonly string[]): void {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 10_000 });
  } catch {
    // already gone, or never made
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** sweepLeftovers — removes namespaces and root links of this prefix whose creating process is gone. */
function sweepLeftovers(ip: string): void {
  const names = (text: string): string[] => text.split('\n').map((line) => line.split(/[\s@:]+/)[0] ?? '');
  const dead = (name: string): boolean => {
    const match = LEFTOVER.exec(name);
    return match !== null && !pidAlive(Number(match[1]));
  };
  let namespaces: string[] = [];
  let links: string[] = [];
  try {
    namespaces = names(execFileSync(ip, ['netns', 'list'], { encoding: 'utf8' }));
    links = execFileSync(ip, ['-o', 'link', 'show'], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.split(': ')[1]?.split('@')[0] ?? '');
  } catch {
    return;
  }
  for (const link of links.filter(dead)) runQuietly(ip, ['link', 'del', link]);
  for (const ns of namespaces.filter(dead)) runQuietly(ip, ['netns', 'del', ns]);
}

/** hookExit — once per process: every live lab is destroyed at exit, and on SIGINT/SIGTERM before the signal's default. */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  const destroyAll = (): void => {
    for (const lab of live) lab.destroySync();
  };
  process.once('exit', destroyAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      destroyAll();
      process.kill(process.pid, signal);
    });
  }
}

/** NetLab — hosts in network namespaces on one bridge, and the faults between them; see the module comment. */
export class NetLab {
  private readonly hosts = new Map<string, NetHost>();
  /** Blocked directions, as `from>to` host names. */
  private readonly blocked = new Set<string>();
  private readonly children: Child[] = [];
  private destroyed = false;

  private constructor(
    private readonly ip: string,
    private readonly nft: string,
    /** The lab's name: its switch namespace, and its link in the root namespace. */
    readonly id: string,
    /** The lab's /24 as `10.213.S` (no last octet). */
    readonly subnet: string,
  ) {}

  /** testAddress — the test process's address on the lab's bridge. */
  get testAddress(): string {
    return `${this.subnet}.${TEST_HOST_OCTET}`;
  }

  /**
   * create — a lab with its bridge and the test process's link to it;
   * throws NetnsUnavailableError (one line) where `ip netns`, veth links or
   * `nft` are not available or not permitted.
   */
  static async create(): Promise<NetLab> {
    const ip = findExecutable('ip');
    const nft = findExecutable('nft');
    if (ip === null) throw new NetnsUnavailableError('network faults need iproute2 (`ip`; Debian: apt-get install iproute2)');
    if (nft === null) throw new NetnsUnavailableError('network faults need nftables (`nft`; Debian: apt-get install nftables)');
    hookExit();
    sweepLeftovers(ip);
    labCount += 1;
    const id = `${NAME_PREFIX}${process.pid}l${labCount}`;
    const lab = new NetLab(ip, nft, id, `${SUBNET_BASE}.${await freeSubnet(ip)}`);
    live.add(lab);
    try {
      await lab.ip_(['netns', 'add', id]);
    } catch (error) {
      live.delete(lab);
      const why = error instanceof Error ? error.message : String(error);
      throw new NetnsUnavailableError(`network namespaces are not permitted here (needs root or CAP_SYS_ADMIN): ${why}`);
    }
    try {
      await lab.ip_(['-n', id, 'link', 'add', 'br0', 'type', 'bridge']);
      await lab.ip_(['-n', id, 'link', 'set', 'br0', 'up']);
      await lab.ip_(['link', 'add', id, 'type', 'veth', 'peer', 'name', 'uplink', 'netns', id]);
      await lab.ip_(['-n', id, 'link', 'set', 'dev', 'uplink', 'master', 'br0', 'up']);
      await lab.ip_(['addr', 'add', `${lab.testAddress}/24`, 'dev', id]);
      await lab.ip_(['link', 'set', id, 'up']);
    } catch (error) {
      await lab.destroy();
      const why = error instanceof Error ? error.message : String(error);
      throw new NetnsUnavailableError(`could not build a network namespace lab: ${why}`);
    }
    return lab;
  }

  /** addHost — a host `name` (lowercase, up to 8 characters) with the next address, its loopback up and an empty input chain. */
  async addHost(name: string): Promise<NetHost> {
    if (!HOST_NAME.test(name) || this.hosts.has(name)) throw new Error(`netns: bad or repeated host name ${JSON.stringify(name)}`);
    if (this.hosts.size >= MAX_HOSTS) throw new Error(`netns: at most ${MAX_HOSTS} hosts`);
    const host: NetHost = { name, ns: `${this.id}-${name}`, address: `${this.subnet}.${this.hosts.size + 1}` };
    this.hosts.set(name, host);
    const port = `h${this.hosts.size}`;
    await this.ip_(['netns', 'add', host.ns]);
    await this.ip_(['link', 'add', 'eth0', 'netns', host.ns, 'type', 'veth', 'peer', 'name', port, 'netns', this.id]);
    await this.ip_(['-n', this.id, 'link', 'set', port, 'master', 'br0', 'up']);
    await this.ip_(['-n', host.ns, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0']);
    await this.ip_(['-n', host.ns, 'link', 'set', 'eth0', 'up']);
    await this.ip_(['-n', host.ns, 'link', 'set', 'lo', 'up']);
    await this.writeRules(host);
    return host;
  }

  /** host — the host named `name`; throws if there is none. */
  host(name: string): NetHost {
    const host = this.hosts.get(name);
    if (host === undefined) throw new Error(`netns: no host ${JSON.stringify(name)} in ${this.id}`);
    return host;
  }

  /** via — the command prefix that runs a command inside `host` (for the harness's spawn helpers). */
  via(host: NetHost): readonly string[] {
    return [this.ip, 'netns', 'exec', host.ns];
  }

  /** spawn — `command args` as a registered child (processes.ts) inside `host`; killed by destroy() if still running. */
  spawn(host: NetHost, name: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Child {
    const child = spawnProcess(name, command, args, env, this.via(host));
    this.children.push(child);
    return child;
  }

  /** cut — drops every packet between `a` and `b`, both ways. */
  async cut(a: NetHost, b: NetHost): Promise<void> {
    this.blocked.add(`${a.name}>${b.name}`);
    this.blocked.add(`${b.name}>${a.name}`);
    await Promise.all([this.writeRules(a), this.writeRules(b)]);
  }

  /** drop — drops every packet from `from` to `to`; the other way still flows. */
  async drop(from: NetHost, to: NetHost): Promise<void> {
    this.blocked.add(`${from.name}>${to.name}`);
    await this.writeRules(to);
  }

  /** restore — lifts every drop between `a` and `b`, both ways. */
  async restore(a: NetHost, b: NetHost): Promise<void> {
    this.blocked.delete(`${a.name}>${b.name}`);
    this.blocked.delete(`${b.name}>${a.name}`);
    await Promise.all([this.writeRules(a), this.writeRules(b)]);
  }

  /** blockedFrom — the hosts whose packets `to` drops now, as its nft table says (read back from the kernel). */
  async blockedFrom(to: NetHost): Promise<string[]> {
    const listing = await run(this.ip, [...this.via(to).slice(1), this.nft, 'list', 'chain', 'inet', 'tlnf', 'input']);
    const addresses = new Set([...listing.matchAll(/\d+\.\d+\.\d+\.\d+/g)].map((m) => m[0]));
    return [...this.hosts.values()].filter((h) => addresses.has(h.address)).map((h) => h.name);
  }

  /** destroy — kills what the lab started that still runs, then removes its namespaces, links and tables. */
  destroy(): Promise<void> {
    this.destroySync();
    return Promise.resolve();
  }

  /** destroySync — destroy(), synchronously (for exit hooks); a second call does nothing. */
  destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    live.delete(this);
    for (const child of this.children) if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
    runQuietly(this.ip, ['link', 'del', this.id]);
    for (const host of this.hosts.values()) runQuietly(this.ip, ['netns', 'del', host.ns]);
    runQuietly(this.ip, ['netns', 'del', this.id]);
  }

  /** leftovers — namespaces and root links of this lab that still exist (empty once destroyed). */
  leftovers(): string[] {
    const namespaces = execFileSync(this.ip, ['netns', 'list'], { encoding: 'utf8' });
    const links = execFileSync(this.ip, ['-o', 'link', 'show'], { encoding: 'utf8' });
    const mine = (name: string): boolean => name === this.id || name.startsWith(`${this.id}-`);
    return [
      ...namespaces.split('\n').map((line) => line.split(' ')[0] ?? ''),
      ...links.split('\n').map((line) => line.split(': ')[1]?.split('@')[0] ?? ''),
    ].filter(mine);
  }

  /** writeRules — `host`'s input chain rewritten whole from the blocked pairs that end at it. */
  private async writeRules(host: NetHost): Promise<void> {
    const sources = [...this.blocked]
      .filter((pair) => pair.endsWith(`>${host.name}`))
      .map((pair) => this.host(pair.slice(0, pair.indexOf('>'))).address);
    const script = [
      'table inet tlnf {}',
      'flush table inet tlnf',
      'table inet tlnf {',
      '  chain input {',
      '    type filter hook input priority 0; policy accept;',
      ...(sources.length === 0 ? [] : [`    ip saddr { ${sources.join(', ')} } drop`]),
      '  }',
      '}',
    ].join('\n');
    await run(this.ip, [...this.via(host).slice(1), this.nft, '-f', '-'], `${script}\n`);
  }

  private async ip_(args: readonly string[]): Promise<void> {
    await run(this.ip, args);
  }
}

/**
 * netnsUnavailable — why network faults cannot be injected here (one
 * line), or null when a lab can be built: builds one and destroys it.
 */
export async function netnsUnavailable(): Promise<string | null> {
  try {
    await (await NetLab.create()).destroy();
    return null;
  } catch (error) {
    if (error instanceof NetnsUnavailableError) return error.message;
    throw error;
  }
}

/** netnsSkipped — whether NETNS_SKIP_ENV asks for tests needing namespaces to be skipped where they are unavailable. */
export function netnsSkipped(): boolean {
  return process.env[NETNS_SKIP_ENV] === 'skip';
}

/** freeSubnet — the third octet of a 10.213.S.0/24 the machine has no route to, starting from one this process's pid picks. */
async function freeSubnet(ip: string): Promise<number> {
  const routes = await run(ip, ['-4', 'route', 'show']);
  const used = new Set([...routes.matchAll(/^10\.213\.(\d+)\./gm)].map((m) => Number(m[1])));
  const start = (process.pid * 7 + labCount) % 250;
  for (let i = 0; i < 250; i += 1) {
    const s = ((start + i) % 250) + 1;
    if (!used.has(s)) return s;
  }
  throw new NetnsUnavailableError(`no free ${SUBNET_BASE}.S.0/24 subnet: every one is routed on this machine`);
}
