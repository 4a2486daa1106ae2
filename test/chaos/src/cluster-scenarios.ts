/**
 * Chaos on a NATS cluster: three nats-servers joined by routes, each in a
 * network namespace of its own (NetLab, netns.ts), with Redis, two
 * coordinators (durable mode) and three agents in namespaces of theirs.
 * Processes are spread over the servers: coordinator n connects to server
 * n, agent n to server (n + 1) mod 3, each given its own server's URL only
 * (the others it learns from the cluster, as a client in production does).
 *
 * - `kill-nats-server`: the server the pool's owner is connected to is
 *   SIGKILLed mid-run. Its clients reconnect to the others; the owner keeps
 *   its ownership (it reaches Redis) and grants again once reconnected.
 *   Verified by the server's exit signal and a reconnect event from every
 *   client that was on it; the row's note gives when the last of them
 *   reconnected and the first grant after the kill.
 * - `isolate-nats-server`: the owner's server is cut off from its two
 *   peers (routes only: every client's link to it stays) for 3 s (5 s
 *   full). Requests from the other servers find no responder and fail;
 *   agents spend what they hold until it expires, by their own clock, and
 *   lease again once the routes are back. Verified from the kernel (the nft
 *   chains read back on both peers) and from the failed requests of agents
 *   on the other servers. The rate must come back after the restore.
 *
 * Verdicts as the other scenarios': the envelope over every window, every
 * admission within its lease's life, recovery of the full rate. Where
 * namespaces are not permitted the row says NOT RUN, which never passes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { currentOwner } from '@tokenlease/harness/coordinator-log';
import { logEvents } from '@tokenlease/harness/log-events';
import { startHostNatsCluster, startHostRedis, type HostCluster, type HostServer } from '@tokenlease/harness/net-servers';
import type { NetHost, NetLab } from '@tokenlease/harness/netns';
import type { Child } from '@tokenlease/harness/processes';
import { waitUntil } from '@tokenlease/harness/wait';
import type { ScenarioName } from './args.js';
import { POOL, type ChaosFleet, type Placement } from './chaos-fleet.js';
import { startStandby, withLab } from './net-scenarios.js';
import { nowUs, runScenario, VERIFIED_AFTER_MS, type Outcome, type ScenarioOptions, type ScenarioRow } from './run-scenario.js';

const SERVERS = 3;
const AGENTS = 3;
const COORDINATORS = 2;

/** ClusterWorld — a lab with a routed NATS cluster, Redis, and hosts for coordinators and agents, placed over the servers. */
interface ClusterWorld {
  readonly lab: NetLab;
  readonly cluster: HostCluster;
  readonly placement: Placement;
  readonly redis: HostServer;
  /** serverOfCoordinator / serverOfAgent — the index of the server process n connects to. */
  serverOfCoordinator(n: number): number;
  serverOfAgent(n: number): number;
}

const serverOfCoordinator = (n: number): number => n % SERVERS;
const serverOfAgent = (n: number): number => (n + 1) % SERVERS;

/** withClusterWorld — runs `body` in a fresh cluster world, torn down whatever happens; a NOT RUN row where namespaces are not permitted. */
function withClusterWorld(name: ScenarioName, body: (world: ClusterWorld) => Promise<ScenarioRow>): Promise<ScenarioRow> {
  return withLab(name, async (lab) => {
    let cluster: HostCluster | null = null;
    let redis: HostServer | null = null;
    try {
      const natsHosts: NetHost[] = [];
      for (let i = 0; i < SERVERS; i += 1) natsHosts.push(await lab.addHost(`n${i}`));
      cluster = await startHostNatsCluster(lab, natsHosts, 'tokenlease-chaos');
      redis = await startHostRedis(lab, await lab.addHost('redis'));
      const coordinators: NetHost[] = [];
      for (let i = 0; i < COORDINATORS; i += 1) coordinators.push(await lab.addHost(`c${i}`));
      const agents: NetHost[] = [];
      for (let i = 0; i < AGENTS; i += 1) agents.push(await lab.addHost(`a${i}`));
      const servers = cluster.servers;
      const urlOf = (index: number): string => (servers[index] as HostServer).url;
      const placement: Placement = {
        coordinator: (n) => lab.via(coordinators[n % COORDINATORS] as NetHost),
        agent: (n) => lab.via(agents[n % AGENTS] as NetHost),
        natsUrl: (role, n) => urlOf(role === 'coordinator' ? serverOfCoordinator(n) : serverOfAgent(n)),
      };
      return await body({ lab, cluster, placement, redis, serverOfCoordinator, serverOfAgent });
    } finally {
      await redis?.stop();
      await cluster?.stop();
    }
  });
}

/** clusterScenario — a scenario of `name` in a cluster world: a standby, AGENTS agents for `runMs`, `fault` once every agent's clock is verified. */
function clusterScenario(
  name: ScenarioName,
  options: ScenarioOptions,
  runMs: number,
  fault: (world: ClusterWorld, fleet: ChaosFleet, ownerServer: number) => Promise<Outcome>,
): Promise<ScenarioRow> {
  return withClusterWorld(name, (world) =>
    runScenario(
      name,
      world.cluster.servers[0]?.url ?? '',
      options,
      AGENTS,
      runMs,
      async (fleet) => {
        await sleep(VERIFIED_AFTER_MS);
        const owner = currentOwner(fleet.coordinators, POOL);
        if (owner === undefined) return { faultVerified: false, note: 'no owner of the pool before the fault' };
        return fault(world, fleet, world.serverOfCoordinator(fleet.coordinators.indexOf(owner.child)));
      },
      { redisUrl: world.redis.url, placement: world.placement, beforeAgents: startStandby },
    ),
  );
}

/** ReconnectWatch — when (host clock, µs) each of `clients` first printed a NATS reconnect after it was made. */
function watchReconnects(clients: readonly Child[]): Map<Child, number> {
  const at = new Map<Child, number>();
  for (const child of clients) {
    child.onLine((line) => {
      if (at.has(child)) return;
      // An agent process prints {"type":"event","event":"reconnect"}; a coordinator logs nats-connection {type: reconnect}.
      if (/"event":"reconnect"|"connection":\{"type":"reconnect"/.test(line)) at.set(child, nowUs());
    });
  }
  return at;
}

/** clientsOn — the fleet's processes connected to server `index`. */
function clientsOn(world: ClusterWorld, fleet: ChaosFleet, index: number): Child[] {
  return [
    ...fleet.coordinators.filter((_, n) => world.serverOfCoordinator(n) === index),
    ...fleet.agents.filter((_, n) => world.serverOfAgent(n) === index).map((a) => a.child),
  ];
}

/** C1. SIGKILL the server the pool's owner is connected to: its clients reconnect to the others, and grants go on. */
export function killNatsServer(options: ScenarioOptions): Promise<ScenarioRow> {
  const runMs = VERIFIED_AFTER_MS + (options.short ? 6000 : 9000);
  return clusterScenario('kill-nats-server', options, runMs, async (world, fleet, target) => {
    const server = world.cluster.servers[target] as HostServer;
    const affected = clientsOn(world, fleet, target);
    const reconnects = watchReconnects(affected);
    const killedUs = nowUs();
    server.child.proc.kill('SIGKILL');
    const dead = (await server.child.exited).signal === 'SIGKILL';
    const allBack = await waitUntil(
      'every client of the killed server reconnected',
      10_000,
      () => reconnects.size === affected.length,
    ).then(
      () => true,
      () => false,
    );
    const lastBackUs = Math.max(...reconnects.values());
    const firstGrantUs = fleet.firstGrantAfterUs(killedUs);
    const ms = (us: number | null): string => (us === null || !Number.isFinite(us) ? 'never' : `${Math.round((us - killedUs) / 1000)} ms`);
    return {
      faultVerified: dead && allBack && affected.length > 0,
      recoveryFromUs: [killedUs],
      note:
        `server ${target} of ${SERVERS} (the owner's) SIGKILLed; ${reconnects.size} of its ${affected.length} clients reconnected, ` +
        `the last ${ms(lastBackUs)} after the kill; first grant ${ms(firstGrantUs)} after it`,
    };
  });
}

/** C2. Cut the owner's server off its peers (routes only) while every client stays on it: the envelope holds, the rate comes back after. */
export function isolateNatsServer(options: ScenarioOptions): Promise<ScenarioRow> {
  const cutMs = options.short ? 3000 : 5000;
  const runMs = VERIFIED_AFTER_MS + cutMs + 6000;
  return clusterScenario('isolate-nats-server', options, runMs, async (world, fleet, target) => {
    const hosts = world.cluster.servers.map((s) => s.host);
    const isolated = hosts[target] as NetHost;
    const peers = hosts.filter((_, i) => i !== target);
    const elsewhere = fleet.agents.filter((_, n) => world.serverOfAgent(n) !== target);
    const failedBefore = elsewhere.map((a) => logEvents(a.child.lines, { type: 'event', event: 'request-failed' }).length);
    for (const peer of peers) await world.lab.cut(isolated, peer);
    const blocked = await Promise.all(peers.map((peer) => world.lab.blockedFrom(peer)));
    const inKernel = blocked.every((names) => names.includes(isolated.name));
    await sleep(cutMs);
    const failedDuring = elsewhere.reduce(
      (n, a, i) => n + logEvents(a.child.lines, { type: 'event', event: 'request-failed' }).length - (failedBefore[i] ?? 0),
      0,
    );
    const restoreUs = nowUs();
    for (const peer of peers) await world.lab.restore(isolated, peer);
    const routed = await waitUntil('the isolated server routed again', 15_000, async () => {
      const routes = await world.cluster.routesOf(target);
      return routes !== null && routes >= peers.length;
    }).then(
      () => true,
      () => false,
    );
    const routedUs = nowUs();
    await waitUntil('a grant after the restore', 10_000, () => fleet.firstGrantAfterUs(restoreUs) !== null).catch(() => undefined);
    const firstGrantUs = fleet.firstGrantAfterUs(restoreUs);
    const ms = (fromUs: number, us: number | null): string => (us === null ? 'never' : `${Math.round((us - fromUs) / 1000)} ms`);
    return {
      faultVerified: inKernel && failedDuring > 0 && routed,
      recoveryFromUs: [restoreUs],
      note:
        `server ${target} (the owner's) cut off its ${peers.length} peers for ${cutMs} ms, every client kept on it ` +
        `(${inKernel ? 'drops read back from the kernel' : 'the drops were not found in the kernel'}); ` +
        `${failedDuring} failed requests of the ${elsewhere.length} agents on other servers meanwhile; ` +
        `routes back ${ms(restoreUs, routedUs)} after the restore, first grant after it ${ms(restoreUs, firstGrantUs)}`,
    };
  });
}
