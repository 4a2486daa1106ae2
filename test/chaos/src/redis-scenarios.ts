/**
 * Chaos on a Redis Cluster: the primary holding the pool's slot killed
 * under load, with and without replica confirmation.
 *
 * - `redis-primary-failover`: each write confirmed by a replica (the
 *   default). A replica is promoted, the owner's writes are `unavailable`
 *   meanwhile and go on on the new primary; no acknowledged grant is lost,
 *   so the envelope holds.
 * - `redis-primary-failover-unconfirmed`: `--redis-replicas 0`, and the
 *   harmful case made to happen rather than hoped for. A primary that fails
 *   over on its own seldom loses a write (replication on loopback lags by
 *   microseconds), and a lost write costs nothing while its owner lives
 *   (the owner keeps the pool in memory and its writes go on on the
 *   promoted replica); it matters when the pool changes owner and the new
 *   owner loads what the promoted replica holds. So: the replica stops and
 *   its link drops before any agent starts, the owner grants for a second
 *   on writes only the primary has, then the primary and the owner are
 *   killed together and the standby takes the pool over from the promoted
 *   replica, which has no record of those grants: the pool starts full
 *   again while agents still spend what it granted. The pool (B = 200,
 *   r = 20/s) has a burst larger than what refills during the failover, so
 *   the forgotten tokens show as windows over B + r·T. The verdict expects
 *   them (verdict.ts): the row fails if the check found none.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { procState } from '@tokenlease/harness/proc-state';
import { redisCommand } from '@tokenlease/harness/redis-raw';
import { startRedisCluster, type RedisClusterHandle } from '@tokenlease/harness/redis-cluster';
import { POOL, type ChaosFleet, type ChaosPool } from './chaos-fleet.js';
import { nowUs, runScenario, withPrivateNats, type ScenarioOptions, type ScenarioRow } from './run-scenario.js';

/** BURST_POOL — the unconfirmed variant's pool: its burst (200) outweighs what refills (20/s) during a failover of about 3 s. */
export const BURST_POOL: ChaosPool = { capacity: 200, refillPerSecond: 20, leaseTtlMs: 1000, maxLeaseTokens: 20 };
/** How long the owner grants on writes only the primary has, before the primary and the owner are killed, ms. */
const UNREPLICATED_MS = 1000;

const ms = (fromUs: number, us: number | null): string => (us === null ? 'never' : `${Math.round((us - fromUs) / 1000)} ms`);

/** untilPromoted — the first of `replicas` that says it is a primary, polled for up to `timeoutMs`; undefined if none. */
async function untilPromoted(cluster: RedisClusterHandle, replicas: readonly number[], timeoutMs: number): Promise<number | undefined> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const roles = await Promise.all(replicas.map((port) => cluster.nodeRole(port)));
    const promoted = replicas.find((_, k) => roles[k] === 'master');
    if (promoted !== undefined) return promoted;
    await sleep(100);
  }
  return undefined;
}

/**
 * 4c. Kill the Redis Cluster primary that holds the pool's slot, under
 * load, with an owner and a standby on the cluster (three primaries with
 * two replicas each; one replica confirms each write, the default).
 */
export async function redisPrimaryFailover(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const cluster = await startRedisCluster({ replicasPerPrimary: 2 });
    try {
      // Long enough after the promotion (about 2.5 s after the kill) for a full second at 90% of r,
      // even when the agents share a busy machine.
      const runMs = options.short ? 10_000 : 12_000;
      return await runScenario(
        'redis-primary-failover',
        nats.url,
        options,
        3,
        runMs,
        async (fleet) => {
          await fleet.startCoordinator(); // the standby
          await sleep(2000);
          const primary = await cluster.primaryOf(`${fleet.prefix}:{${POOL}}:owner`);
          const replicas = await cluster.replicaOf(primary);
          const victim = cluster.nodes.find((n) => n.port === primary);
          const killedUs = nowUs();
          await victim?.kill();
          const dead = victim?.pid() === null && (await cluster.nodeRole(primary)) === null;
          const promoted = await untilPromoted(cluster, replicas, 10_000);
          const promotedUs = nowUs();
          await sleep(3000);
          // Grants go on after the promotion: the owner's writes reached the new primary.
          const grantUs = fleet.firstGrantAfterUs(promotedUs);
          return {
            faultVerified: dead && promoted !== undefined && grantUs !== null,
            reclaimMs: null,
            recoveryFromUs: [killedUs],
            note: `primary :${primary} of the pool's slot SIGKILLed; replica :${promoted ?? '?'} of ${replicas.length} promoted ${promoted === undefined ? 'never' : ms(killedUs, promotedUs)} after; first grant after that ${ms(killedUs, grantUs)} after the kill`,
          };
        },
        { redisUrl: cluster.url },
      );
    } finally {
      await cluster.stop();
    }
  });
}

/** A replica stopped with SIGSTOP: resumed once, whatever happens. */
interface Stopped {
  readonly pid: number;
  resumed: boolean;
}

/**
 * 4d. The same failover with `--redis-replicas 0`, the loss of acknowledged
 * grants forced (see the module comment): three primaries with one replica
 * each, B = 200, r = 20/s.
 */
export async function redisPrimaryFailoverUnconfirmed(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const cluster = await startRedisCluster({ replicasPerPrimary: 1 });
    const stopped: Stopped[] = [];
    const resume = (): void => {
      for (const s of stopped.filter((x) => !x.resumed)) {
        s.resumed = true;
        process.kill(s.pid, 'SIGCONT');
      }
    };
    let cut = { primary: 0, replicas: [] as number[], linksDropped: 0, stoppedVerified: false, atUs: 0 };
    try {
      return await runScenario(
        'redis-primary-failover-unconfirmed',
        nats.url,
        options,
        3,
        options.short ? 8000 : 9000,
        async (fleet) => {
          await sleep(UNREPLICATED_MS);
          // Grants that only the primary has: logged by the owner after the cut.
          const unreplicated = fleet.grants().filter((g) => g.tUs >= cut.atUs);
          const victim = cluster.nodes.find((n) => n.port === cut.primary);
          const killedUs = nowUs();
          await victim?.kill();
          const ownerDead = await fleet.killOwner();
          resume();
          const primaryDead = victim?.pid() === null && (await cluster.nodeRole(cut.primary)) === null;
          const promoted = await untilPromoted(cluster, cut.replicas, 15_000);
          const promotedUs = nowUs();
          let successor: ChaosFleet['coordinators'][number] | undefined;
          for (let i = 0; i < 100 && successor === undefined; i++) {
            successor = fleet.owner();
            if (successor === undefined) await sleep(50);
          }
          // The agents' retries back off while nobody grants: the standby's first grant may come a while after it owns the pool.
          let grantUs: number | null = null;
          for (let i = 0; i < 100 && grantUs === null; i++) {
            grantUs = fleet.firstGrantAfterUs(killedUs);
            if (grantUs === null) await sleep(50);
          }
          const tokens = unreplicated.length;
          return {
            faultVerified:
              cut.stoppedVerified &&
              cut.linksDropped > 0 &&
              tokens > 0 &&
              primaryDead &&
              ownerDead &&
              promoted !== undefined &&
              successor !== undefined &&
              grantUs !== null,
            reclaimMs: null,
            takeoverMs: grantUs === null ? null : Math.round((grantUs - killedUs) / 1000),
            recoveryFromUs: [killedUs],
            note:
              `replica confirmation off; replica :${cut.replicas.join(',')} stopped and its link to primary :${cut.primary} dropped ` +
              `before the agents started; ${tokens} grants acknowledged by the primary alone in ${UNREPLICATED_MS} ms; ` +
              `primary and owner SIGKILLed; replica promoted ${promoted === undefined ? 'never' : ms(killedUs, promotedUs)} after, ` +
              `standby's first grant ${ms(killedUs, grantUs)} after the kill`,
          };
        },
        {
          pool: BURST_POOL,
          redisUrl: cluster.url,
          coordinatorEnv: { REDIS_REPLICAS: '0' },
          beforeAgents: async (fleet) => {
            await fleet.startCoordinator(); // the standby
            await sleep(1500); // the pool settles on its owner by the rendezvous hash
            const primary = await cluster.primaryOf(`${fleet.prefix}:{${POOL}}:owner`);
            const replicas = await cluster.replicaOf(primary);
            for (const port of replicas) {
              const pid = cluster.nodes.find((n) => n.port === port)?.pid() ?? null;
              if (pid === null) continue;
              process.kill(pid, 'SIGSTOP');
              stopped.push({ pid, resumed: false });
            }
            await sleep(50);
            const stoppedVerified = stopped.length === replicas.length && stopped.every((s) => procState(s.pid) === 'T');
            const victim = cluster.nodes.find((n) => n.port === primary);
            const linksDropped = Number(victim === undefined ? 0 : await redisCommand(victim.url, 'CLIENT', 'KILL', 'TYPE', 'replica'));
            cut = { primary, replicas, linksDropped, stoppedVerified, atUs: nowUs() };
          },
        },
      );
    } finally {
      resume();
      await cluster.stop();
    }
  });
}
