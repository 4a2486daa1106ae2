/**
 * The network fault injector itself, on real namespaces: two hosts, a TCP
 * echo (and UDP datagrams, to see one direction alone) between them works,
 * is cut both ways, one way, restored; nothing of the lab is left after.
 * Where namespaces are not permitted it fails with the reason, unless
 * TOKENLEASE_NETNS_UNAVAILABLE=skip says to skip it (the reason printed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetLab, netnsSkipped, netnsUnavailable, type NetHost } from './netns.js';
import { waitListening } from './ports.js';
import { stopAll } from './processes.js';
import { waitUntil } from './wait.js';

const TCP_PORT = 7007;
const UDP_PORT = 7008;
const ECHO = `
const net = require('node:net'), dgram = require('node:dgram');
const address = process.argv[1];
net.createServer((s) => { s.on('error', () => {}); s.pipe(s); }).listen(${TCP_PORT}, address, () => console.log('listening'));
dgram.createSocket('udp4').on('message', (m) => console.log('udp ' + m)).bind(${UDP_PORT}, address);`;
// One TCP round trip to the peer within 1 s ("tcp ok" / "tcp fail"), then one UDP datagram naming the sender.
const PROBE = `
const net = require('node:net'), dgram = require('node:dgram');
const [to, from] = process.argv.slice(1);
const s = net.connect(${TCP_PORT}, to);
const done = (ok) => {
  console.log(ok ? 'tcp ok' : 'tcp fail');
  s.destroy();
  const u = dgram.createSocket('udp4');
  u.send('from ' + from, ${UDP_PORT}, to, () => u.close());
};
const timer = setTimeout(() => done(false), 1000);
s.on('connect', () => s.write('ping'));
s.on('data', () => { clearTimeout(timer); done(true); });
s.on('error', () => { clearTimeout(timer); done(false); });`;

const unavailable = await netnsUnavailable();
if (unavailable !== null) console.error(`netns: ${unavailable}`);
const skip = unavailable !== null && netnsSkipped();
if (skip) console.error(`netns: NOT RUN, skipped as TOKENLEASE_NETNS_UNAVAILABLE=skip asks: ${unavailable}`);

describe.skipIf(skip)('network fault injector', () => {
  let lab: NetLab;
  let a: NetHost;
  let b: NetHost;

  /** tcp — whether a fresh TCP round trip from `from` to `to` succeeds. */
  async function tcp(from: NetHost, to: NetHost): Promise<boolean> {
    const child = lab.spawn(from, `probe@${from.name}`, process.execPath, ['-e', PROBE, to.address, from.name]);
    await child.exited;
    return child.lines.includes('tcp ok');
  }
  const echoes = new Map<string, string[]>();
  const datagramsAt = (to: NetHost, from: NetHost): number =>
    (echoes.get(to.name) ?? []).filter((l) => l === `udp from ${from.name}`).length;

  beforeAll(async () => {
    if (unavailable !== null) throw new Error(`netns: ${unavailable} (set TOKENLEASE_NETNS_UNAVAILABLE=skip to skip)`);
    lab = await NetLab.create();
    a = await lab.addHost('a');
    b = await lab.addHost('b');
    for (const host of [a, b]) {
      const echo = lab.spawn(host, `echo@${host.name}`, process.execPath, ['-e', ECHO, host.address]);
      echoes.set(host.name, echo.lines);
      await echo.waitForLine((l) => l === 'listening', 5000);
    }
  });
  afterAll(async () => {
    await stopAll();
    await lab?.destroy();
  });

  it('joins hosts on one bridge, reachable from each other and from the test process', async () => {
    expect(a.address).not.toBe(b.address);
    expect(a.address.startsWith('10.213.')).toBe(true);
    expect(await tcp(a, b)).toBe(true);
    expect(await tcp(b, a)).toBe(true);
    await waitListening(a.address, TCP_PORT, 2000);
    expect(await lab.blockedFrom(a)).toEqual([]);
  });

  it('cuts both ways, then restores', async () => {
    await lab.cut(a, b);
    expect(await lab.blockedFrom(a)).toEqual(['b']);
    expect(await lab.blockedFrom(b)).toEqual(['a']);
    expect(await tcp(a, b)).toBe(false);
    expect(await tcp(b, a)).toBe(false);
    await lab.restore(a, b);
    expect(await lab.blockedFrom(a)).toEqual([]);
    expect(await tcp(a, b)).toBe(true);
    expect(await tcp(b, a)).toBe(true);
  });

  it('drops one way only: datagrams a→b are lost, b→a arrive; restore lifts it', async () => {
    const before = { atA: datagramsAt(a, b), atB: datagramsAt(b, a) };
    await lab.drop(a, b);
    expect(await lab.blockedFrom(b)).toEqual(['a']);
    expect(await lab.blockedFrom(a)).toEqual([]);
    await tcp(a, b); // sends a datagram a→b: dropped
    await tcp(b, a); // sends a datagram b→a: arrives
    await waitUntil('the datagram b→a', 2000, () => datagramsAt(a, b) > before.atA);
    expect(datagramsAt(b, a)).toBe(before.atB);
    await lab.restore(a, b);
    expect(await tcp(a, b)).toBe(true);
    await waitUntil('a datagram a→b after the restore', 2000, () => datagramsAt(b, a) > before.atB);
  });

  it('leaves nothing behind: processes, namespaces, links', async () => {
    const spare = await NetLab.create();
    const host = await spare.addHost('x');
    const child = spare.spawn(host, 'sleeper', 'sleep', ['60']);
    await spare.cut(host, await spare.addHost('y'));
    expect(spare.leftovers().length).toBeGreaterThanOrEqual(3);
    await spare.destroy();
    expect((await child.exited).signal).toBe('SIGKILL');
    expect(spare.leftovers()).toEqual([]);
  });
});
