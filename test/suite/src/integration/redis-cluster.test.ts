/**
 * Durable mode on a real Redis Cluster (three primaries with one replica
 * each, from the redis-server binaries on private ports).
 *
 * - The store: every script runs on the slot of its pool (no CROSSSLOT),
 *   pools land on different primaries, and a write's WAIT goes to the node
 *   that took the write: once the replica of one pool's primary is killed,
 *   that pool's writes are refused as store-unavailable (its state kept,
 *   written again once the replica is back) while the pools of the other
 *   primaries are written as before.
 * - The fleet: two coordinators on `--redis redis+cluster://…` share pools
 *   spread over the three primaries; agent processes draw from each; the
 *   merged admissions of every pool keep the envelope in every window.
 * - What each setting guarantees (last: it fails a primary over): with the
 *   replica of a pool's primary stopped (SIGSTOP, its link dropped), a write without
 *   confirmation is acknowledged and then lost when the primary dies and
 *   that replica is promoted; with confirmation the same write is refused
 *   (`store-unavailable`), so no reply could have depended on it.
 * - Every socket the store opens hears every error, the connections the
 *   cluster client opens by itself to ask a node for the slots included:
 *   two errors on each (a TLS alert, then the peer's reset) end nothing,
 *   and the store serves again once reconnected.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectRedisStore, resolveRedisOptions, type StateStore } from '@tokenlease/coordinator';
import { makeRate } from '@tokenlease/shared';
import { checkEnvelope } from '@tokenlease/shared/testing';
import { leaseAdmissions, readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { parseLogLine } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { stop, type Child } from '@tokenlease/harness/processes';
import { startRedisCluster, type RedisClusterHandle } from '@tokenlease/harness/redis-cluster';
import { redisCommand } from '@tokenlease/harness/redis-raw';
import { seededRun } from '../servers.js';

const CAPACITY = 40;
const REFILL = makeRate(80, 1000);
const DRIVE_MS = 6000;
const OWNERSHIP_TTL_MS = 1500;
const NO_CHANGES = { levelTokens: 7, upserts: [], removes: [] };

/** poolsOnEveryPrimary — `perPrimary` pool names for each primary of the cluster, by where their keys' slot lives. */
async function poolsOnEveryPrimary(cluster: RedisClusterHandle, prefix: string, perPrimary: number): Promise<Map<number, string[]>> {
  const byPrimary = new Map<number, string[]>();
  for (let i = 0; i < 200 && !(byPrimary.size === 3 && [...byPrimary.values()].every((p) => p.length >= perPrimary)); i++) {
    const pool = `pool${i}`;
    const primary = await cluster.primaryOf(`${prefix}:{${pool}}:owner`);
    const pools = byPrimary.get(primary) ?? [];
    if (pools.length < perPrimary) pools.push(pool);
    byPrimary.set(primary, pools);
  }
  return byPrimary;
}

describe('durable mode on a Redis Cluster', () => {
  let nats: NatsHandle;
  let cluster: RedisClusterHandle;
  beforeAll(async () => {
    [nats, cluster] = await Promise.all([provideNats(), startRedisCluster()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([nats?.stop(), cluster?.stop()]);
  });

  it('writes each pool on its own slot, and waits for the replica of the primary that took the write', async () => {
    const prefix = 'tlcluster-store';
    const byPrimary = await poolsOnEveryPrimary(cluster, prefix, 1);
    expect(byPrimary.size).toBe(3);
    const primaries = [...byPrimary.keys()];
    const victimPrimary = primaries[0] ?? 0;
    const victimPool = byPrimary.get(victimPrimary)?.[0] ?? '';
    const otherPool = byPrimary.get(primaries[1] ?? 0)?.[0] ?? '';
    const connect = (replicas: string): Promise<StateStore> =>
      connectRedisStore(
        resolveRedisOptions({ redis: cluster.url, 'redis-replicas': replicas, 'redis-replica-timeout-ms': '2000' }, {}) ?? '',
        {
          keyPrefix: prefix,
        },
      );
    const confirmed = await connect('1');
    const unconfirmed = await connect('0');
    try {
      expect(await confirmed.durabilityWarning()).toBeNull();
      expect(await unconfirmed.durabilityWarning()).toMatch(/without replica confirmation/);
      // One replica a primary: enough for one, too few for two, each primary named by its slots.
      expect(await confirmed.replicaWarning()).toBeNull();
      expect(await unconfirmed.replicaWarning()).toBeNull();
      const demanding = await connect('2');
      const shortfall = await demanding.replicaWarning().finally(() => demanding.close());
      for (const primary of primaries)
        expect(shortfall).toMatch(new RegExp(`127\\.0\\.0\\.1:${primary} \\(slots [0-9,-]+\\) has 1 online`));
      expect(shortfall).toMatch(/every write to these primaries will be refused as unavailable/);
      const epochs = new Map<string, number>();
      for (const pool of [victimPool, otherPool]) {
        const claim = await confirmed.claim(pool, 'm1', 10_000);
        if (!claim.taken) throw new Error(`${pool} not claimed`);
        epochs.set(pool, claim.epoch);
        expect(await confirmed.write(pool, 'm1', claim.epoch, NO_CHANGES)).toBe(true);
        expect(await confirmed.write(pool, 'm1', claim.epoch + 1, NO_CHANGES)).toBe(false); // fenced, on the cluster too
      }
      expect((await confirmed.heartbeat('m1', 10_000)).members).toEqual(['m1']);

      const replicas = await cluster.replicaOf(victimPrimary);
      expect(replicas).toHaveLength(1);
      const replica = cluster.nodes.find((n) => n.port === replicas[0]);
      await replica?.kill();
      const victimEpoch = epochs.get(victimPool) ?? 0;
      const refused = await confirmed.write(victimPool, 'm1', victimEpoch, NO_CHANGES).then(
        () => null,
        (error: unknown) => error as { code?: string; message?: string },
      );
      expect(refused?.code).toBe('store-unavailable');
      expect(refused?.message).toMatch(/acknowledged by 0 of 1 replicas within 2000 ms/);
      // The other primaries keep their replicas: WAIT went to the victim's primary alone.
      expect(await confirmed.write(otherPool, 'm1', epochs.get(otherPool) ?? 0, NO_CHANGES)).toBe(true);
      // Without confirmation, the same write is taken at once.
      expect(await unconfirmed.write(victimPool, 'm1', victimEpoch, NO_CHANGES)).toBe(true);

      await replica?.start();
      let written = false;
      for (let i = 0; i < 100 && !written; i++) {
        written = await confirmed.write(victimPool, 'm1', victimEpoch, NO_CHANGES).catch(() => false);
        if (!written) await sleep(100);
      }
      expect(written, 'written again once the replica is back').toBe(true);
      for (const pool of [victimPool, otherPool]) expect(await confirmed.forget(pool, 'm1', epochs.get(pool) ?? 0)).toBe(true);
      await confirmed.heartbeat('m1', 0);
    } finally {
      await Promise.all([confirmed.close(), unconfirmed.close()]);
    }
    await cluster.waitHealthy(20_000);
  }, 60_000);

  it('lives through two errors on every socket it opened, the slot refresher’s included, and serves again', async () => {
    // ioredis listens once for a socket's error; a second error nobody hears would end the process.
    const sockets: net.Socket[] = [];
    const connect = net.createConnection;
    const spy = vi.spyOn(net, 'createConnection').mockImplementation((...args: Parameters<typeof net.createConnection>) => {
      const socket = connect(...args);
      sockets.push(socket);
      return socket;
    });
    const store = await connectRedisStore(resolveRedisOptions({ redis: cluster.url, 'redis-replicas': '0' }, {}) ?? '', {
      keyPrefix: 'tlcluster-errors',
    }).finally(() => spy.mockRestore());
    try {
      // The nodes' own connections, and the copy that asked a node for the slots (closed since).
      expect(sockets.length).toBeGreaterThan(1);
      for (const socket of sockets) {
        socket.emit('error', Object.assign(new Error('certificate required'), { code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' }));
        socket.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
        socket.destroy();
      }
      let claimed: Awaited<ReturnType<StateStore['claim']>> | null = null;
      for (let tries = 0; tries < 100 && claimed === null; tries += 1) {
        claimed = await store.claim('api', 'c1', 2000).catch(() => null);
        if (claimed === null) await sleep(100);
      }
      expect(claimed).toMatchObject({ taken: true });
    } finally {
      await store.close();
    }
  });

  it('keeps the envelope of pools spread over every primary, served by two coordinators', async () => {
    const { seed, random } = seededRun('redis-cluster', import.meta.url);
    const prefix = `tlcluster${seed}`;
    const byPrimary = await poolsOnEveryPrimary(cluster, prefix, 2);
    const pools = [...byPrimary.values()].flat();
    expect(pools).toHaveLength(6);
    const dir = scratchDir();
    const pool = { capacity: CAPACITY, refill: '80/s', leaseTtlMs: 1000, maxLeaseTokens: 8 };
    const configPath = writeConfig(dir, { subjectPrefix: prefix, pools: Object.fromEntries(pools.map((name) => [name, pool])) });
    const coordinators: Child[] = [];
    for (const member of ['c1', 'c2'])
      coordinators.push(await startCoordinator(nats.url, configPath, { redisUrl: cluster.url, member, ownershipTtlMs: OWNERSHIP_TTL_MS }));
    const owned = (): Set<string> =>
      new Set(
        coordinators.flatMap((c) =>
          c.lines.map((line) => parseLogLine(line)).flatMap((f) => (f?.['event'] === 'pool-owned' ? [String(f['pool'])] : [])),
        ),
      );
    for (let i = 0; i < 100 && pools.some((p) => !owned().has(p)); i++) await sleep(100);
    expect(pools.filter((p) => !owned().has(p))).toEqual([]);

    // Two agent processes a pool, together at about 1.5 times its refill.
    const agents = await Promise.all(
      pools.flatMap((name) =>
        [0, 1].map(async (i) => {
          const logPath = join(dir, `agent-${name}-${i}.log`);
          const child = await startAgentProcess({
            natsUrl: nats.url,
            subjectPrefix: prefix,
            pool: name,
            name: `${name}-${i}`,
            seed: random.int(0, 2 ** 31),
            durationMs: DRIVE_MS,
            logPath,
            traffic: { kind: 'steady', perSecond: 60 },
          });
          return { name, child, logPath };
        }),
      ),
    );
    await Promise.all(agents.map((a) => a.child.exited));
    await Promise.all(coordinators.map((c) => stop(c)));

    const summary: Record<string, object> = {};
    for (const name of pools) {
      const admissions = leaseAdmissions(agents.filter((a) => a.name === name).flatMap((a) => readAdmissionLog(a.logPath)));
      const report = checkEnvelope(admissions, CAPACITY, REFILL);
      summary[name] = { admitted: report.admittedTokens, worstExcess: report.worstExcessTokens };
      expect(report.violations, `${name}: worst window ${JSON.stringify(report.worstWindow)} over by ${report.worstExcessTokens}`).toBe(0);
      expect(report.ok, name).toBe(true);
      // Served all along: at least a quarter of the refill over the drive. (Alone about 320–430 of the
      // refill's 480; in a full CI run, twelve agent processes, two coordinators and six Redis nodes on
      // two cores shared with the other suites, 143–211.)
      expect(report.admittedTokens, name).toBeGreaterThan((0.25 * 80 * DRIVE_MS) / 1000);
    }
    const writeErrors = coordinators.flatMap((c) => c.lines.filter((l) => parseLogLine(l)?.['event'] === 'store-unavailable'));
    console.log(`redis-cluster: ${JSON.stringify(summary)}; store-unavailable lines: ${writeErrors.length}; logs in ${dir}`);
    expect(
      coordinators.flatMap((c) => c.lines.filter((l) => /CROSSSLOT/.test(l))),
      'a script spanning slots',
    ).toEqual([]);
  }, 90_000);

  it('loses an acknowledged write in a failover without confirmation, and acknowledges none it could lose with it', async () => {
    const prefix = 'tlcluster-loss';
    const [primary, [pool]] = [...(await poolsOnEveryPrimary(cluster, prefix, 1))][0] as [number, [string]];
    const [replicaPort] = await cluster.replicaOf(primary);
    const replica = cluster.nodes.find((n) => n.port === replicaPort);
    const victim = cluster.nodes.find((n) => n.port === primary);
    const replicaPid = replica?.pid() ?? null;
    if (replica === undefined || victim === undefined || replicaPid === null) throw new Error('no replica to stop');
    const connect = (replicas: string): Promise<StateStore> =>
      connectRedisStore(
        resolveRedisOptions({ redis: cluster.url, 'redis-replicas': replicas, 'redis-replica-timeout-ms': '2000' }, {}) ?? '',
        {
          keyPrefix: prefix,
        },
      );
    const [confirmed, unconfirmed] = await Promise.all([connect('1'), connect('0')]);
    try {
      const claim = await confirmed.claim(pool, 'm1', 60_000);
      if (!claim.taken) throw new Error(`${pool} not claimed`);
      expect(await confirmed.write(pool, 'm1', claim.epoch, { ...NO_CHANGES, levelTokens: 11 })).toBe(true);

      // The replica stops, and its link drops with nothing in flight: what the primary takes from now on, no replica has.
      process.kill(replicaPid, 'SIGSTOP');
      let resumed = false;
      try {
        await redisCommand(victim.url, 'CLIENT', 'KILL', 'TYPE', 'replica');
        const refused = await confirmed.write(pool, 'm1', claim.epoch, { ...NO_CHANGES, levelTokens: 22 }).catch((e: unknown) => e);
        expect((refused as { code?: string }).code).toBe('store-unavailable');
        expect(await unconfirmed.write(pool, 'm1', claim.epoch, { ...NO_CHANGES, levelTokens: 33 })).toBe(true);
        await victim.kill();
        process.kill(replicaPid, 'SIGCONT');
        resumed = true;
      } finally {
        if (!resumed) process.kill(replicaPid, 'SIGCONT');
      }
      for (let i = 0; i < 150 && (await cluster.nodeRole(replica.port)) !== 'master'; i++) await sleep(100);
      expect(await cluster.nodeRole(replica.port), 'the stopped replica promoted').toBe('master');

      // The promoted replica has the confirmed write (11), not the one acknowledged without confirmation (33).
      let again: Awaited<ReturnType<StateStore['claim']>> | null = null;
      for (let i = 0; i < 50 && again === null; i++) again = await unconfirmed.claim(pool, 'm1', 60_000).catch(() => null);
      expect(again?.taken && again.state !== null && 'levelTokens' in again.state ? again.state.levelTokens : null).toBe(11);
      if (again?.taken) await unconfirmed.forget(pool, 'm1', again.epoch);
    } finally {
      await Promise.all([confirmed.close(), unconfirmed.close()]);
    }
    // The old primary comes back as a replica of the promoted one.
    await victim.start();
    await cluster.waitHealthy(20_000);
    for (let i = 0; i < 100 && (await cluster.nodeRole(victim.port)) !== 'slave'; i++) await sleep(100);
    expect(await cluster.nodeRole(victim.port)).toBe('slave');
  }, 90_000);
});
