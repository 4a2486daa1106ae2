/**
 * A Redis Cluster primary fails over under two durable coordinators with a
 * short ownership TTL. Three primaries with one replica each
 * (`cluster-node-timeout` 1 s), a pool on each primary with two agent
 * processes at twice its refill, an ownership TTL of 1.2 s. The primary of
 * the first pool is SIGKILLed under load: its slots answer nothing, then
 * (once the node is marked failed, until its replica is promoted) the whole
 * cluster answers CLUSTERDOWN, so renewals of every pool fail and
 * ownerships lapse; each owner gives its pools up and claims them again,
 * while writes of the ownerships it gave up come back late (ioredis keeps a
 * command that failed with CLUSTERDOWN in its retry queue). The killed node
 * is started again once its replica is promoted and rejoins as its replica,
 * so the writes of that pool can be confirmed again (replica confirmation
 * is on, N = 1).
 *
 * Checked: no coordinator steps down an ownership it claimed after the kill
 * unless another coordinator claimed the pool after it (otherwise a late
 * outcome of an ownership given up acted on the new one); the envelope
 * holds per pool over the agents' admissions; every pool is granted again.
 *
 * Printed: when the replica was promoted, when the restarted node was a
 * replica again and when each pool was first granted after the promotion,
 * all counted from the kill.
 * `FAILOVER_REPLICAS` (default 1) and `FAILOVER_DISKLESS_DELAY_S` (default 0
 * here; Redis's own default is 5) set the cluster for the figures of
 * docs/operations.md.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope } from '@tokenlease/shared/testing';
import { leaseAdmissions, readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { logEvents, type CoordinatorEvent } from '@tokenlease/harness/log-events';
import { provideNats } from '@tokenlease/harness/nats';
import { stop, type Child } from '@tokenlease/harness/processes';
import { startRedisCluster, type RedisClusterHandle } from '@tokenlease/harness/redis-cluster';
import { seededRun, serverForSuite } from '../servers.js';

const CAPACITY = 40;
const REFILL = makeRate(40, 1000);
const OWNERSHIP_TTL_MS = 1200;
const LOAD_BEFORE_KILL_MS = 3000;
const LOAD_AFTER_REJOIN_MS = 3000;
const REPLICAS = Number(process.env['FAILOVER_REPLICAS'] ?? '1');
const DISKLESS_DELAY_S = Number(process.env['FAILOVER_DISKLESS_DELAY_S'] ?? '0');

/** A log line of a coordinator: its fields, which coordinator, and when (wall clock, ms). */
interface Logged {
  readonly coordinator: string;
  readonly event: string;
  readonly pool: string;
  readonly epoch: number;
  readonly timeMs: number;
  readonly fields: Readonly<Record<string, unknown>>;
}

function logged(children: ReadonlyMap<string, Child>, event: CoordinatorEvent): Logged[] {
  return [...children].flatMap(([coordinator, child]) =>
    logEvents(child.lines, { event }).map(({ fields }) => ({
      coordinator,
      event,
      pool: String(fields['pool']),
      epoch: Number(fields['epoch']),
      timeMs: Number(fields['time']),
      fields,
    })),
  );
}

/** poolPerPrimary — one pool name for each primary of the cluster, by where their keys' slot lives. */
async function poolPerPrimary(cluster: RedisClusterHandle, prefix: string): Promise<Array<{ pool: string; primary: number }>> {
  const byPrimary = new Map<number, string>();
  for (let i = 0; i < 200 && byPrimary.size < 3; i++) {
    const primary = await cluster.primaryOf(`${prefix}:{pool${i}}:owner`);
    if (!byPrimary.has(primary)) byPrimary.set(primary, `pool${i}`);
  }
  return [...byPrimary].map(([primary, pool]) => ({ pool, primary }));
}

async function until(what: string, timeoutMs: number, test: () => Promise<boolean> | boolean): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
  return hostMonoNowUs();
}

describe('a Redis Cluster primary failing over under durable coordinators', () => {
  const nats = serverForSuite(provideNats);

  it('steps no ownership down that nobody else claimed, and keeps the envelope of every pool', async () => {
    const { seed, random } = seededRun(
      'redis-cluster-failover',
      import.meta.url,
      ` replicas=${REPLICAS} disklessDelay=${DISKLESS_DELAY_S}s`,
    );
    const cluster = await startRedisCluster({
      replicasPerPrimary: REPLICAS,
      nodeArgs: ['--repl-diskless-sync-delay', String(DISKLESS_DELAY_S)],
    });
    const coordinators = new Map<string, Child>();
    try {
      const prefix = `tlfailover${seed}`;
      const pools = await poolPerPrimary(cluster, prefix);
      expect(pools).toHaveLength(3);
      const [victim] = pools as [{ pool: string; primary: number }];
      const dir = scratchDir();
      const pool = { capacity: CAPACITY, refill: '40/s', leaseTtlMs: 1000, maxLeaseTokens: 8 };
      const configPath = writeConfig(dir, { subjectPrefix: prefix, pools: Object.fromEntries(pools.map((p) => [p.pool, pool])) });
      for (const member of ['c1', 'c2'])
        coordinators.set(
          member,
          await startCoordinator(nats().url, configPath, {
            redisUrl: cluster.url,
            member,
            ownershipTtlMs: OWNERSHIP_TTL_MS,
            logLevel: 'debug',
          }),
        );
      const owners = (): Set<string> => new Set(logged(coordinators, 'pool-owned').map((o) => o.pool));
      await until('every pool owned', 10_000, () => pools.every((p) => owners().has(p.pool)));

      // Two agent processes a pool, together at twice its refill, for as long as the failover can take.
      const driveMs = LOAD_BEFORE_KILL_MS + 4000 + 1000 * DISKLESS_DELAY_S + LOAD_AFTER_REJOIN_MS + 6000;
      const agents = await Promise.all(
        pools.flatMap(({ pool: name }) =>
          [0, 1].map(async (i) => {
            const logPath = join(dir, `agent-${name}-${i}.log`);
            const child = await startAgentProcess({
              natsUrl: nats().url,
              subjectPrefix: prefix,
              pool: name,
              name: `${name}-${i}`,
              seed: random.int(0, 2 ** 31),
              durationMs: driveMs,
              logPath,
              traffic: { kind: 'steady', perSecond: 40 },
            });
            return { name, child, logPath };
          }),
        ),
      );
      await sleep(LOAD_BEFORE_KILL_MS);

      const replicas = await cluster.replicaOf(victim.primary);
      const node = cluster.nodes.find((n) => n.port === victim.primary);
      const killedMs = Date.now();
      const killedUs = hostMonoNowUs();
      await node?.kill();
      const promotedUs = await until('a replica promoted', 15_000, async () =>
        (await Promise.all(replicas.map((port) => cluster.nodeRole(port)))).includes('master'),
      );
      // With one replica a primary, the promoted one confirms no write until the old primary is back as its replica.
      await node?.start();
      const rejoinedUs = await until(
        'the killed primary back as a replica',
        30_000,
        async () => (await cluster.nodeRole(victim.primary)) === 'slave',
      );
      await sleep(LOAD_AFTER_REJOIN_MS);
      await Promise.all(agents.map((a) => a.child.exited));
      await Promise.all([...coordinators.values()].map((c) => stop(c)));

      // Step-downs: of an ownership claimed before the kill (it lapsed in the outage), or of one another coordinator claimed the pool after.
      const claims = logged(coordinators, 'pool-owned');
      const stepDowns = logged(coordinators, 'stepped-down');
      const spurious = stepDowns.filter((d) => {
        const claimedMs = claims.find((c) => c.coordinator === d.coordinator && c.pool === d.pool && c.epoch === d.epoch)?.timeMs ?? 0;
        const otherClaimed = claims.some((c) => c.coordinator !== d.coordinator && c.pool === d.pool && c.epoch > d.epoch);
        return claimedMs > killedMs && !otherClaimed;
      });
      // A grant whose write the killed primary had taken may be logged just after the kill: count from the promotion.
      const firstGrantUs = (name: string): number | null =>
        Math.min(
          ...[...coordinators.values()].flatMap((c) =>
            logEvents(c.lines, { event: 'grant', pool: name }).flatMap(({ fields }) =>
              Number(fields['tUs']) > promotedUs ? [Number(fields['tUs'])] : [],
            ),
          ),
        );
      const afterKillS = (us: number | null): string =>
        us === null || !Number.isFinite(us) ? 'never' : ((us - killedUs) / 1e6).toFixed(2);
      const reclaims = claims.filter((c) => c.timeMs > killedMs);
      console.log(
        `redis-cluster-failover: primary :${victim.primary} of ${victim.pool} SIGKILLed; replica promoted ${afterKillS(promotedUs)} s after, ` +
          `the restarted node a replica again ${afterKillS(rejoinedUs)} s after; first grant of ${victim.pool} after that ${afterKillS(firstGrantUs(victim.pool))} s after ` +
          `(the others: ${pools
            .slice(1)
            .map((p) => afterKillS(firstGrantUs(p.pool)))
            .join(', ')} s); ${reclaims.length} claims after the kill, ${stepDowns.length} step-downs ` +
          `${JSON.stringify(stepDowns.map((d) => [d.coordinator, d.pool, d.epoch, d.fields['reason']]))}; logs in ${dir}`,
      );
      expect(
        spurious.map((d) => ({ ...d, fields: undefined })),
        'step-downs of an ownership claimed after the kill that nobody else claimed',
      ).toEqual([]);
      for (const { pool: name } of pools) {
        const report = checkEnvelope(
          leaseAdmissions(agents.filter((a) => a.name === name).flatMap((a) => readAdmissionLog(a.logPath))),
          CAPACITY,
          REFILL,
        );
        expect(report.violations, `${name}: worst window ${JSON.stringify(report.worstWindow)} over by ${report.worstExcessTokens}`).toBe(
          0,
        );
        expect(Number.isFinite(firstGrantUs(name)), `${name} granted again after the kill`).toBe(true);
      }
    } finally {
      // Processes still running after a failure are stopped with the suite (serverForSuite).
      await cluster.stop();
    }
  }, 90_000);
});
