/**
 * The chaos scenarios. Each starts its own NATS (a private server or a
 * three-node cluster), coordinator and agent processes, injects its fault,
 * verifies the fault really happened, and reports one row: the envelope
 * over every window of the merged admission logs, spending only within a
 * lease's life, the time to reclaim stranded capacity and to recover the
 * full admission rate. `short` runs a brief version for `npm test`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { hasEvent } from '@tokenlease/harness/log-events';
import { startPrivateRedis } from '@tokenlease/harness/redis';
import { startNatsCluster } from '@tokenlease/harness/nats-cluster';
import { isRunning } from '@tokenlease/harness/proc-state';
import type { Child } from '@tokenlease/harness/processes';
import type { ScenarioName } from './args.js';
import { OWNERSHIP_TTL_MS, type AgentHandle } from './chaos-fleet.js';
import { slowAgentClock } from './clock-scenario.js';
import { isolateNatsServer, killNatsServer } from './cluster-scenarios.js';
import { redisPrimaryFailover, redisPrimaryFailoverUnconfirmed } from './redis-scenarios.js';
import {
  cutAgentNats,
  cutCoordinatorNats,
  oneWayCoordinatorNats,
  cutCoordinatorRedis,
  flapAgentNats,
  flapCoordinatorRedis,
  oneWayAgentNats,
} from './net-scenarios.js';
import { killRelay } from './relay-scenario.js';
import { cutSlotHolder } from './slot-scenario.js';
import {
  CHAOS_POOL,
  nowUs,
  runScenario,
  STEADY,
  untilLease,
  VERIFIED_AFTER_MS,
  untilNoLease,
  withPrivateNats,
  type ScenarioOptions,
  type ScenarioRow,
} from './run-scenario.js';

export { CHAOS_POOL, type ScenarioOptions, type ScenarioRow } from './run-scenario.js';

/** PLAN_SLACK_MS — how far past its plan a scenario that ends its agents itself lets them run, should it never get there. */
const PLAN_SLACK_MS = 20_000;

/** Whether an agent process printed that its NATS connection came back. */
const agentReconnected = (child: Child): boolean => hasEvent(child, { type: 'event', event: 'reconnect' });
/** Whether a coordinator logged that its NATS connection came back. */
const coordinatorReconnected = (child: Child): boolean => hasEvent(child, { event: 'nats-connection', connection: { type: 'reconnect' } });

/**
 * 1. SIGKILL random agents mid-lease, repeatedly, while the others keep load on.
 *
 * The plan, not the agents' own clocks, ends the run: each agent is given a
 * run bounded well past the plan (PLAN_SLACK_MS), and once the last
 * replacement has had its 2.5 s the scenario stops every agent still
 * running (SIGTERM, a clean leave). With runs ending on their own after the
 * planned time, a loaded machine's slow spawns and waits used up the
 * originals' runs before the second kill, which then found no agent to kill.
 */
export async function killAgents(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const kills = options.short ? 2 : 5;
    // Each kill's share of the plan: a wait, the kill and its reclaim, a replacement; the last replacement runs this long before the end.
    const killEveryMs = 2500;
    const boundMs = VERIFIED_AFTER_MS + kills * killEveryMs + PLAN_SLACK_MS;
    return await runScenario('kill-agents', nats.url, options, 4, boundMs, async (fleet, random) => {
      /** Stops every agent still running, side by side; true when each left cleanly. */
      const stopRunning = async (): Promise<boolean> =>
        (await Promise.all(fleet.agents.filter((a) => isRunning(a.child)).map((a) => fleet.stopAgent(a)))).every(Boolean);
      let verified = true;
      let reclaim = 0;
      const from: number[] = [];
      const startedMs = new Map(fleet.agents.map((a) => [a, performance.now()]));
      await sleep(VERIFIED_AFTER_MS - 1500);
      for (let k = 0; k < kills; k += 1) {
        await sleep(1500);
        // The agents that have run VERIFIED_AFTER_MS (less a timer's early firing): the originals at the first kill.
        const seasoned = fleet.agents.filter(
          (a) => isRunning(a.child) && performance.now() - (startedMs.get(a) ?? Infinity) >= VERIFIED_AFTER_MS - 100,
        );
        const victim = seasoned[random.int(0, seasoned.length - 1)];
        if (victim === undefined) {
          await stopRunning();
          return { faultVerified: false, note: `no agent had run ${VERIFIED_AFTER_MS} ms before kill ${k + 1}` };
        }
        verified &&= await untilLease(fleet, victim.agentId, 2000);
        const killedAt = performance.now();
        from.push(nowUs());
        verified &&= await fleet.killAgent(victim);
        const ms = await untilNoLease(fleet, victim.agentId, killedAt, CHAOS_POOL.leaseTtlMs + 3000);
        verified &&= ms !== null;
        reclaim = Math.max(reclaim, ms ?? Infinity);
        const replacement = await fleet.addAgent(`replacement${k}`, STEADY, boundMs, random.int(0, 2 ** 31));
        startedMs.set(replacement, performance.now());
      }
      await sleep(killEveryMs);
      const cleanEnd = await stopRunning();
      return {
        faultVerified: verified,
        reclaimMs: reclaim,
        recoveryFromUs: from,
        note: `${kills} agents killed mid-lease; the rest stopped at the plan's end${cleanEnd ? '' : ', not every one cleanly'}`,
      };
    });
  });
}

/** 2. SIGSTOP an agent past its lease's expiry, then SIGCONT: it must not spend the expired lease. */
export async function pauseAgent(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const runMs = VERIFIED_AFTER_MS + (options.short ? 4500 : 8500);
    return await runScenario('pause-agent', nats.url, options, 3, runMs, async (fleet) => {
      await sleep(VERIFIED_AFTER_MS);
      const victim = fleet.agents[0] as AgentHandle;
      // On a busy machine the victim may take a while to hold tokens: wait on its status, bounded.
      const hadLease = await untilLease(fleet, victim.agentId, 5000);
      const pausedAt = performance.now();
      let reclaim: number | null = null;
      const pauseMs = CHAOS_POOL.leaseTtlMs * 2 + 500;
      const stopped = await fleet.pauseAgent(victim, pauseMs, async () => {
        reclaim = await untilNoLease(fleet, victim.agentId, pausedAt, pauseMs - 100);
      });
      const resumedUs = nowUs();
      return {
        faultVerified: hadLease && stopped && reclaim !== null,
        reclaimMs: reclaim,
        recoveryFromUs: [resumedUs],
        note: [
          `paused ${pauseMs} ms with a live lease (TTL ${CHAOS_POOL.leaseTtlMs} ms)`,
          ...(hadLease ? [] : ['no lease with tokens seen before the pause']),
          ...(stopped ? [] : ['the agent did not stop']),
          ...(reclaim !== null ? [] : ['the coordinator did not drop the lease during the pause']),
        ].join('; '),
      };
    });
  });
}

/** 3. Restart the NATS server: everyone reconnects; leases in hand keep working until expiry. */
export async function restartNats(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const runMs = options.short ? 6000 : 10_000;
    return await runScenario('restart-nats', nats.url, options, 3, runMs, async (fleet) => {
      await sleep(2000);
      await nats.kill();
      const killedUs = nowUs();
      await sleep(1000);
      await nats.start();
      const restartedUs = nowUs();
      await sleep(2000);
      const reconnected = fleet.agents.every((a) => agentReconnected(a.child));
      const coordinatorBack = fleet.coordinators.some(coordinatorReconnected);
      const spentDuring = fleet.admissions().filter((a) => a.tUs > killedUs && a.tUs < restartedUs).length;
      return {
        faultVerified: reconnected && coordinatorBack,
        reclaimMs: null,
        recoveryFromUs: [restartedUs],
        note: `NATS down 1 s; ${spentDuring} admissions from leases in hand while it was down`,
      };
    });
  });
}

/** 3b. Lose one node of a three-node NATS cluster: clients fail over to the others. */
export async function loseNatsNode(options: ScenarioOptions): Promise<ScenarioRow> {
  const cluster = await startNatsCluster(3);
  try {
    await sleep(1500); // routes form and the cluster's addresses reach clients
    const runMs = options.short ? 6000 : 10_000;
    return await runScenario('lose-nats-node', cluster.url, options, 3, runMs, async (fleet) => {
      await sleep(2000);
      const lostUs = nowUs();
      const dead = await cluster.kill(0);
      await sleep(2500);
      const reconnected = fleet.agents.every((a) => agentReconnected(a.child));
      return {
        faultVerified: dead && reconnected,
        reclaimMs: null,
        recoveryFromUs: [lostUs],
        note: 'node 0 of 3 killed; every client was connected to it',
      };
    });
  } finally {
    await cluster.stop();
  }
}

/** 4. Kill the coordinator (memory mode): a new one starts empty and grants nothing for one TTL. */
export async function killCoordinator(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const runMs = options.short ? 7000 : 10_000;
    return await runScenario('kill-coordinator', nats.url, options, 3, runMs, async (fleet) => {
      await sleep(2000);
      const killedUs = nowUs();
      const dead = await fleet.killCoordinator();
      await sleep(500);
      await fleet.startCoordinator();
      return {
        faultVerified: dead,
        reclaimMs: null,
        recoveryFromUs: [killedUs],
        note: 'memory mode: restarted after 0.5 s; quiet for one TTL, then refills from empty',
      };
    });
  });
}

/**
 * 4b. Kill the owning coordinator (durable mode on a private Redis): a
 * standby takes the pool over once the ownership record lapses, with the
 * kept leases live and no credit minted for the gap.
 */
export async function failoverCoordinator(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const redis = await startPrivateRedis();
    try {
      // Long enough after the takeover (ownership TTL, then the kept leases' TTL) for a
      // full second at 90% of r, even when the agents share a busy machine.
      const runMs = options.short ? 9000 : 10_000;
      return await runScenario(
        'failover-coordinator',
        nats.url,
        options,
        3,
        runMs,
        async (fleet) => {
          await fleet.startCoordinator(); // the standby
          await sleep(2000);
          const killedUs = nowUs();
          const dead = await fleet.killOwner();
          await sleep(OWNERSHIP_TTL_MS + CHAOS_POOL.leaseTtlMs + 500);
          const takenOver = fleet.owner() !== undefined;
          const firstUs = fleet.firstGrantAfterUs(killedUs);
          const takeoverMs = firstUs === null ? null : Math.round((firstUs - killedUs) / 1000);
          return {
            faultVerified: dead && takenOver,
            reclaimMs: null,
            takeoverMs,
            recoveryFromUs: [killedUs],
            note: `Redis mode, ownership TTL ${OWNERSHIP_TTL_MS} ms: owner SIGKILLed; first grant by the standby ${takeoverMs ?? 'never'} ms after the kill`,
          };
        },
        { redisUrl: redis.url },
      );
    } finally {
      await redis.stop();
    }
  });
}

/** 5. Agents join and leave at a high rate while two stay. */
export async function churnAgents(options: ScenarioOptions): Promise<ScenarioRow> {
  return withPrivateNats(async (nats) => {
    const runMs = options.short ? 6000 : 12_000;
    return await runScenario('churn-agents', nats.url, options, 2, runMs, async (fleet, random) => {
      const started = performance.now();
      let joins = 0;
      let leaves = 0;
      let cleanLeaves = true;
      const visitors: AgentHandle[] = [];
      while (performance.now() - started < runMs - 2500) {
        if (visitors.length < 3 || random.next() < 0.5) {
          visitors.push(await fleet.addAgent(`visitor${joins}`, { kind: 'steady', perSecond: 100 }, runMs, random.int(0, 2 ** 31)));
          joins += 1;
        } else {
          const leaving = visitors.splice(random.int(0, visitors.length - 1), 1)[0] as AgentHandle;
          cleanLeaves &&= await fleet.stopAgent(leaving);
          leaves += 1;
        }
        await sleep(150);
      }
      for (const v of visitors) cleanLeaves &&= await fleet.stopAgent(v);
      leaves += visitors.length;
      return {
        faultVerified: joins >= 5 && leaves >= 5 && cleanLeaves,
        reclaimMs: null,
        note: `${joins} joins, ${leaves} leaves (each returned its lease and exited 0)`,
      };
    });
  });
}

/** SCENARIOS — each scenario by the name its row prints. */
export const SCENARIOS: Readonly<Record<ScenarioName, (options: ScenarioOptions) => Promise<ScenarioRow>>> = {
  'kill-agents': killAgents,
  'pause-agent': pauseAgent,
  'restart-nats': restartNats,
  'lose-nats-node': loseNatsNode,
  'kill-coordinator': killCoordinator,
  'failover-coordinator': failoverCoordinator,
  'redis-primary-failover': redisPrimaryFailover,
  'redis-primary-failover-unconfirmed': redisPrimaryFailoverUnconfirmed,
  'churn-agents': churnAgents,
  'kill-relay': killRelay,
  'cut-coordinator-redis': cutCoordinatorRedis,
  'cut-coordinator-nats': cutCoordinatorNats,
  'one-way-coordinator-nats': oneWayCoordinatorNats,
  'cut-agent-nats': cutAgentNats,
  'one-way-agent-nats': oneWayAgentNats,
  'flap-agent-nats': flapAgentNats,
  'flap-coordinator-redis': flapCoordinatorRedis,
  'slow-agent-clock': slowAgentClock,
  'kill-nats-server': killNatsServer,
  'isolate-nats-server': isolateNatsServer,
  'cut-slot-holder': cutSlotHolder,
};
