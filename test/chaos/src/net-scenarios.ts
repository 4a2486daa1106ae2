/**
 * Chaos by real network faults (the harness's NetLab, netns.ts): NATS,
 * Redis, each coordinator and each agent in a network namespace of its own
 * on one bridge, durable mode with two coordinators, and packets dropped
 * between two of them by nft while every process runs on.
 *
 * - `cut-coordinator-redis`: the pool's owner loses Redis and keeps NATS.
 *   Every reply waits on its write (write before reply), so it must grant
 *   nothing once its writes cannot land, and certainly nothing after its
 *   ownership could have lapsed (cut + one ownership TTL: `strayGrants`);
 *   the other coordinator claims the pool once the record lapses and
 *   grants within CUT_TAKEOVER_BOUND_MS. After the restore the cut one's
 *   old ownership is fenced.
 * - `cut-agent-nats`: one agent loses NATS while its process runs on. By
 *   its own clock it stops spending when its lease expires (every
 *   admission within grant + TTL on the coordinator's clock:
 *   `expiryViolations`; no grant reaches it once the cut is in force, so
 *   any admission later than the cut + TTL is one), the coordinator drops its lease within one TTL
 *   (`reclaimMs`), and after the restore it leases and spends again.
 *
 * Faults are verified from the kernel (the nft chain read back) and from
 * the processes' structured events: heartbeat failures of the cut owner, a
 * 'pool-owned' of a higher epoch by the other; failed requests of the cut
 * agent, then admissions again. Where namespaces are not permitted the row
 * says NOT RUN with the reason, which never passes (verdict.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { currentOwner, grantLines, waitForOwned } from '@tokenlease/harness/coordinator-log';
import { readAdmissionLog } from '@tokenlease/harness/fleet';
import type { Child } from '@tokenlease/harness/processes';
import { logEvents } from '@tokenlease/harness/log-events';
import { startHostNats, startHostRedis, type HostServer } from '@tokenlease/harness/net-servers';
import { NetLab, NetnsUnavailableError, type NetHost } from '@tokenlease/harness/netns';
import { waitUntil } from '@tokenlease/harness/wait';
import type { ScenarioName } from './args.js';
import { OWNERSHIP_TTL_MS, POOL, type ChaosFleet, type Placement } from './chaos-fleet.js';
import {
  CHAOS_POOL,
  notRunRow,
  nowUs,
  runScenario,
  untilLease,
  untilNoLease,
  VERIFIED_AFTER_MS,
  type Outcome,
  type ScenarioOptions,
  type ScenarioRow,
} from './run-scenario.js';

/** AGENT_HOSTS — agent hosts of a world; agent n runs in a(n mod AGENT_HOSTS). */
const AGENT_HOSTS = 4;
const COORDINATOR_HOSTS = 2;
/** SLOW — the cut agent's traffic: well under a lease's worth per TTL. */
const SLOW = { kind: 'steady', perSecond: 10 } as const;

/** NetWorld — a lab with NATS and Redis in hosts of their own, and hosts for coordinators and agents. */
interface NetWorld {
  readonly lab: NetLab;
  readonly nats: HostServer;
  readonly redis: HostServer;
  readonly coordinators: readonly NetHost[];
  readonly agents: readonly NetHost[];
  readonly placement: Placement;
}

/**
 * withLab — runs `body` in a fresh NetLab, destroyed whatever happens; a
 * NOT RUN row of `name` where namespaces are not permitted.
 */
export async function withLab(name: ScenarioName, body: (lab: NetLab) => Promise<ScenarioRow>): Promise<ScenarioRow> {
  let lab: NetLab;
  try {
    lab = await NetLab.create();
  } catch (error) {
    if (error instanceof NetnsUnavailableError) {
      console.error(`chaos ${name}: NOT RUN: ${error.message}`);
      return notRunRow(name, error.message);
    }
    throw error;
  }
  try {
    return await body(lab);
  } finally {
    await lab.destroy();
  }
}

/** withNetWorld — runs `body` in a fresh world, torn down whatever happens; a NOT RUN row where namespaces are not permitted. */
function withNetWorld(name: ScenarioName, body: (world: NetWorld) => Promise<ScenarioRow>): Promise<ScenarioRow> {
  return withLab(name, (lab) => populated(lab, body));
}

/** populated — `body` given a world in `lab`: NATS and Redis in hosts of their own, hosts for coordinators and agents; servers stopped after. */
async function populated(lab: NetLab, body: (world: NetWorld) => Promise<ScenarioRow>): Promise<ScenarioRow> {
  const servers: HostServer[] = [];
  try {
    const nats = await startHostNats(lab, await lab.addHost('nats'));
    servers.push(nats);
    const redis = await startHostRedis(lab, await lab.addHost('redis'));
    servers.push(redis);
    const coordinators: NetHost[] = [];
    for (let i = 0; i < COORDINATOR_HOSTS; i += 1) coordinators.push(await lab.addHost(`c${i}`));
    const agents: NetHost[] = [];
    for (let i = 0; i < AGENT_HOSTS; i += 1) agents.push(await lab.addHost(`a${i}`));
    const placement: Placement = {
      coordinator: (n) => lab.via(coordinators[n % COORDINATOR_HOSTS] as NetHost),
      agent: (n) => lab.via(agents[n % AGENT_HOSTS] as NetHost),
    };
    return await body({ lab, nats, redis, coordinators, agents, placement });
  } finally {
    for (const server of servers.reverse()) await server.stop();
  }
}

/** startStandby — the second coordinator, then waits until one of the two owns the pool. */
export async function startStandby(fleet: ChaosFleet): Promise<void> {
  await fleet.startCoordinator();
  await waitUntil('an owner of the pool', 10_000, () => fleet.owner() !== undefined);
}

const msBetween = (fromUs: number, us: number | null): number | null => (us === null ? null : Math.round((us - fromUs) / 1000));

/** OwnerFault — the pool's owner about to be faulted, the other coordinator, and the owner's host. */
interface OwnerFault {
  readonly owner: { readonly child: Child; readonly epoch: number };
  readonly other: Child;
  readonly host: NetHost;
}

/**
 * ownerFault — a scenario of `name` whose fault strikes the pool's owner:
 * a fresh world with a standby coordinator, 3 agents for `runMs`, and two
 * seconds in, `fault` given the owner, the other coordinator and the
 * owner's host (a row saying so when there were not both).
 */
function ownerFault(
  name: ScenarioName,
  options: ScenarioOptions,
  runMs: number,
  fault: (world: NetWorld, picked: OwnerFault) => Promise<Outcome>,
): Promise<ScenarioRow> {
  return withNetWorld(name, (world) =>
    runScenario(
      name,
      world.nats.url,
      options,
      3,
      runMs,
      async (fleet) => {
        await sleep(2000);
        const owner = currentOwner(fleet.coordinators, POOL);
        const other = fleet.coordinators.find((c) => c !== owner?.child);
        if (owner === undefined || other === undefined) return { faultVerified: false, note: 'no owner and standby before the fault' };
        return fault(world, { owner, other, host: world.coordinators[fleet.coordinators.indexOf(owner.child)] as NetHost });
      },
      { redisUrl: world.redis.url, placement: world.placement, beforeAgents: startStandby },
    ),
  );
}

/** N1. Cut the pool's owner off Redis (it keeps NATS): it stops granting, the other takes over. */
export async function cutCoordinatorRedis(options: ScenarioOptions): Promise<ScenarioRow> {
  const cutMs = options.short ? 4000 : 6000;
  return ownerFault('cut-coordinator-redis', options, cutMs + 7000, async (world, { owner, other, host: cutHost }) => {
    const failedBefore = logEvents(owner.child.lines, { event: 'heartbeat-failed' }).length;
    const issuedUs = nowUs();
    await world.lab.cut(cutHost, world.redis.host);
    // From here the drop is in the kernel: a write answered before it may still be granted.
    const cutUs = nowUs();
    const blocked = (await world.lab.blockedFrom(world.redis.host)).includes(cutHost.name);
    const natsKept = !(await world.lab.blockedFrom(world.nats.host)).includes(cutHost.name);
    const successor = await waitForOwned(other, POOL, owner.epoch, cutMs).catch(() => null);
    await sleep(Math.max(0, cutMs - (nowUs() - cutUs) / 1000));
    const heartbeatsFailed = logEvents(owner.child.lines, { event: 'heartbeat-failed' }).length - failedBefore;
    const restoreUs = nowUs();
    await world.lab.restore(cutHost, world.redis.host);
    // Back on the store, the cut one finds its old ownership fenced or lapsed.
    const lapsedUs = cutUs + OWNERSHIP_TTL_MS * 1000;
    const grantsInCut = grantLines(owner.child).filter((g) => g.tUs >= cutUs && g.tUs < restoreUs);
    const stray = grantLines(owner.child).filter((g) => g.tUs > lapsedUs && (g.tUs < restoreUs || g.epoch <= owner.epoch));
    const successorFirstUs = grantLines(other).find((g) => g.tUs >= cutUs)?.tUs ?? null;
    const takeoverMs = msBetween(cutUs, successorFirstUs);
    const lastCutGrantMs = msBetween(cutUs, grantsInCut.at(-1)?.tUs ?? null);
    return {
      faultVerified: blocked && natsKept && heartbeatsFailed > 0 && successor !== null,
      takeoverMs,
      strayGrants: stray.length,
      recoveryFromUs: [cutUs],
      note:
        `owner ${owner.child.name} (epoch ${owner.epoch}) cut from Redis for ${cutMs} ms (in force ${msBetween(issuedUs, cutUs)} ms after the command), NATS kept; ` +
        `${heartbeatsFailed} failed-heartbeat lines; ${grantsInCut.length} grants by it during the cut` +
        `${lastCutGrantMs === null ? '' : `, the last ${lastCutGrantMs} ms after the cut`}; ` +
        `${successor === null ? 'no takeover' : `${other.name} owned epoch ${successor.epoch}`}, its first grant ${takeoverMs ?? 'never'} ms after the cut` +
        (blocked ? '' : '; the nft drop was not found in the kernel') +
        (natsKept ? '' : '; NATS was cut too'),
    };
  });
}

/** CoordinatorLinkFault — what happens to the owner's link to NATS: cut both ways, or its own packets lost (requests still reach it). */
type CoordinatorLinkFault = 'cut' | 'one-way';

/**
 * N5–N6. The pool's owner loses NATS while it keeps Redis:
 * - `cut`: both ways, it hears nothing;
 * - `one-way`: its own packets are dropped, so requests still reach it but
 *   no reply (and no ping of its probe) reaches NATS: it grants into the
 *   void, written in the store first, so those tokens stay counted.
 * Either way it must not keep renewing pools nobody is answered through:
 * within an ownership TTL (over two heartbeats) of its bus's silence it
 * logs 'bus-lost', releases its ownerships and drops its member record;
 * the other coordinator owns the pool and grants within
 * NATS_CUT_TAKEOVER_BOUND_MS; none of its grants may come after the other's
 * first (`strayGrants`: two owners granting at once); after the restore it
 * says 'bus-back' and takes part again. NATS may keep its subscription for
 * as long as it goes on writing to it (nats-server counts its own
 * deliveries as the client's activity, and never pings it); the pool is
 * served in a queue group per ownership, so every request reaches the new
 * owner as well.
 */
async function coordinatorLinkFault(name: ScenarioName, fault: CoordinatorLinkFault, options: ScenarioOptions): Promise<ScenarioRow> {
  const cutMs = options.short ? 4000 : 6000;
  const what = fault === 'cut' ? 'cut from NATS' : 'its packets to NATS dropped (requests still reach it)';
  return ownerFault(name, options, cutMs + 7000, async (world, { owner, other, host }) => {
    const issuedUs = nowUs();
    await (fault === 'cut' ? world.lab.cut(host, world.nats.host) : world.lab.drop(host, world.nats.host));
    const cutUs = nowUs();
    const dropped = (await world.lab.blockedFrom(world.nats.host)).includes(host.name);
    const shaped =
      fault === 'cut'
        ? (await world.lab.blockedFrom(host)).includes(world.nats.host.name)
        : !(await world.lab.blockedFrom(host)).includes(world.nats.host.name);
    const redisKept = !(await world.lab.blockedFrom(world.redis.host)).includes(host.name);
    const successor = await waitForOwned(other, POOL, owner.epoch, cutMs).catch(() => null);
    await sleep(Math.max(0, cutMs - (nowUs() - cutUs) / 1000));
    const lost = logEvents(owner.child.lines, { event: 'bus-lost' });
    const restoreUs = nowUs();
    await world.lab.restore(host, world.nats.host);
    const back = await waitUntil(
      'the faulted coordinator hearing its bus again',
      15_000,
      () => logEvents(owner.child.lines, { event: 'bus-back' }).length > 0,
    ).then(
      () => true,
      () => false,
    );
    const backMs = msBetween(restoreUs, back ? nowUs() : null);
    const grantsInFault = grantLines(owner.child).filter((g) => g.tUs >= cutUs && g.tUs < restoreUs);
    const successorFirstUs = grantLines(other).find((g) => g.tUs >= cutUs)?.tUs ?? null;
    const stray = successorFirstUs === null ? [] : grantsInFault.filter((g) => g.tUs >= successorFirstUs);
    const takeoverMs = msBetween(cutUs, successorFirstUs);
    const lostFields = lost[0]?.fields as { silentMs?: number } | undefined;
    return {
      faultVerified: dropped && shaped && redisKept && lost.length > 0 && successor !== null && back,
      takeoverMs,
      strayGrants: stray.length,
      recoveryFromUs: [cutUs],
      note:
        `owner ${owner.child.name} (epoch ${owner.epoch}) ${what} for ${cutMs} ms (in force ${msBetween(issuedUs, cutUs)} ms after the command), Redis kept; ` +
        `${lost.length === 0 ? 'no bus-lost line' : `bus-lost after ${lostFields?.silentMs ?? '?'} ms of silence`}; ${grantsInFault.length} grants logged by it during the fault; ` +
        `${successor === null ? 'no takeover' : `${other.name} owned epoch ${successor.epoch}`}, its first grant ${takeoverMs ?? 'never'} ms after the fault; ` +
        `bus-back ${backMs ?? 'never (within 15 s)'} ms after the restore` +
        (dropped && shaped ? '' : '; the nft drop was not found in the kernel as asked') +
        (redisKept ? '' : '; Redis was cut too'),
    };
  });
}

/** N5. Cut the pool's owner off NATS (it keeps Redis): it steps out and hands its pools over, the other takes over. */
export function cutCoordinatorNats(options: ScenarioOptions): Promise<ScenarioRow> {
  return coordinatorLinkFault('cut-coordinator-nats', 'cut', options);
}

/** N6. The pool's owner's packets to NATS are lost while requests still reach it: it steps out all the same, the other takes over. */
export function oneWayCoordinatorNats(options: ScenarioOptions): Promise<ScenarioRow> {
  return coordinatorLinkFault('one-way-coordinator-nats', 'one-way', options);
}

/** AgentLinkFault — what happens to one agent's link to NATS: cut both ways, replies lost (its requests still arrive), or cut and restored every FLAP_MS. */
type AgentLinkFault = 'cut' | 'one-way' | 'flap';

/** FLAP_MS — how long each cut, and each restore between them, lasts in a flapping partition. */
const FLAP_MS = 300;
/**
 * REDIS_FLAP_MS — the same for an owner's link to Redis: longer than a Redis
 * command's timeout (1 s) and the chaos ownership TTL, so that renewals go
 * unanswered and ownership moves; 300 ms cuts are only delays there (TCP
 * retransmits the commands within each).
 */
const REDIS_FLAP_MS = 1500;

/**
 * applyFault — puts the fault between `host` and the server's host `nats`
 * (NATS, or Redis) in force for `forMs`; how many times it was found in the
 * kernel, and when it was first in force.
 */
async function applyFault(
  lab: NetLab,
  fault: AgentLinkFault,
  host: NetHost,
  nats: NetHost,
  forMs: number,
  flapMs = FLAP_MS,
): Promise<{ inForceUs: number; seen: number; applied: number }> {
  const seenIn = async (): Promise<boolean> =>
    fault === 'one-way'
      ? (await lab.blockedFrom(host)).includes(nats.name) && !(await lab.blockedFrom(nats)).includes(host.name)
      : (await lab.blockedFrom(nats)).includes(host.name);
  const put = (): Promise<void> => (fault === 'one-way' ? lab.drop(nats, host) : lab.cut(host, nats));
  const started = performance.now();
  await put();
  const inForceUs = nowUs();
  let seen = (await seenIn()) ? 1 : 0;
  let applied = 1;
  if (fault !== 'flap') {
    await sleep(Math.max(0, forMs - (performance.now() - started)));
    return { inForceUs, seen, applied };
  }
  // Bounded: one cut and one restore per 2 × flapMs until `forMs` has passed.
  for (let i = 0; i < Math.ceil(forMs / (2 * flapMs)); i += 1) {
    await sleep(flapMs);
    await lab.restore(host, nats);
    await sleep(flapMs);
    if (performance.now() - started >= forMs) break;
    await put();
    applied += 1;
    if (await seenIn()) seen += 1;
  }
  return { inForceUs, seen, applied };
}

/**
 * N7. The pool's owner's link to Redis is cut and restored every
 * REDIS_FLAP_MS for the fault's length, while it keeps NATS: its renewals
 * go unanswered for an ownership TTL, it steps down, the other claims, and
 * it may be handed the pool back between cuts. Whoever owns it, no two owners may grant at once (its
 * grants logged after the other's first grant under a higher epoch are
 * stray), the envelope must hold, and the full rate must come back after
 * the last restore.
 */
export async function flapCoordinatorRedis(options: ScenarioOptions): Promise<ScenarioRow> {
  const flapForMs = options.short ? 6000 : 9000;
  return ownerFault('flap-coordinator-redis', options, flapForMs + 7000, async (world, { owner, other, host }) => {
    const failedBefore = logEvents(owner.child.lines, { event: 'heartbeat-failed' }).length;
    const { inForceUs, seen, applied } = await applyFault(world.lab, 'flap', host, world.redis.host, flapForMs, REDIS_FLAP_MS);
    const restoreUs = nowUs();
    await world.lab.restore(host, world.redis.host);
    const heartbeatsFailed = logEvents(owner.child.lines, { event: 'heartbeat-failed' }).length - failedBefore;
    const successor = grantLines(other).find((g) => g.tUs >= inForceUs && g.epoch > owner.epoch);
    const stray = successor === undefined ? [] : grantLines(owner.child).filter((g) => g.tUs >= successor.tUs && g.epoch <= owner.epoch);
    const ownerGrants = grantLines(owner.child).filter((g) => g.tUs >= inForceUs && g.tUs < restoreUs).length;
    const otherGrants = grantLines(other).filter((g) => g.tUs >= inForceUs && g.tUs < restoreUs).length;
    return {
      faultVerified: seen >= 2 && heartbeatsFailed > 0,
      strayGrants: stray.length,
      recoveryFromUs: [restoreUs],
      note:
        `owner ${owner.child.name} (epoch ${owner.epoch}) cut from Redis and restored every ${REDIS_FLAP_MS} ms for ${flapForMs} ms, NATS kept: ` +
        `${applied} cuts, ${seen} found in the kernel; ${heartbeatsFailed} failed-heartbeat lines; grants during the flapping: ${ownerGrants} by it, ${otherGrants} by ${other.name}` +
        (successor === undefined
          ? '; the other never owned a higher epoch'
          : `; ${other.name} granted under epoch ${successor.epoch} ${msBetween(inForceUs, successor.tUs)} ms in`),
    };
  });
}

/**
 * N2–N4. One agent's host loses its link to NATS while its process runs on:
 * - `cut`: both ways. It stops at its lease's expiry, the coordinator drops
 *   the lease within a TTL, and it spends again after the restore.
 * - `one-way`: NATS's packets to it are dropped, its own still arrive: the
 *   coordinator hears its requests and may grant, but no reply reaches it,
 *   so it must spend nothing later than the drop + one TTL (`lateAdmissions`,
 *   counted with the expiry violations), and the tokens granted into the
 *   void stay counted (the envelope).
 * - `flap`: cut and restored every FLAP_MS for the fault's length. Grants
 *   get through between flaps; each admission must lie within its lease's
 *   life (the expiry check) and the envelope must hold.
 */
async function agentLinkFault(name: ScenarioName, fault: AgentLinkFault, options: ScenarioOptions): Promise<ScenarioRow> {
  const cutMs = options.short ? 3000 : 5000;
  const runMs = cutMs + 7000 + VERIFIED_AFTER_MS;
  const what = { cut: 'cut from NATS', 'one-way': "NATS's replies to it dropped", flap: `cut and restored every ${FLAP_MS} ms` }[fault];
  return withNetWorld(name, (world) =>
    runScenario(
      name,
      world.nats.url,
      options,
      3,
      runMs,
      async (fleet) => {
        await sleep(VERIFIED_AFTER_MS);
        const victim = fleet.agents[0];
        if (victim === undefined) return { faultVerified: false, note: 'no agent' };
        const host = world.agents[0] as NetHost;
        const hadLease = await untilLease(fleet, victim.agentId, 5000);
        const failedBefore = logEvents(victim.child.lines, { type: 'event', event: 'request-failed' }).length;
        const cutAt = performance.now();
        const reclaim = fault === 'cut' ? untilNoLease(fleet, victim.agentId, cutAt, cutMs) : Promise.resolve(null);
        const { inForceUs: cutUs, seen, applied } = await applyFault(world.lab, fault, host, world.nats.host, cutMs);
        const gone = await reclaim;
        const failed = logEvents(victim.child.lines, { type: 'event', event: 'request-failed' }).length - failedBefore;
        const restoreUs = nowUs();
        await world.lab.restore(host, world.nats.host);
        // The lease is reclaimed one TTL after its last grant, which may have crossed as the cut came into force.
        const leaseIds = new Set(readAdmissionLog(victim.logPath).map((a) => a.leaseId));
        const victimGrants = fleet.grants().filter((g) => leaseIds.has(g.leaseId));
        const lastGrantUs = victimGrants.filter((g) => g.tUs < restoreUs).reduce((latest, g) => Math.max(latest, g.tUs), 0);
        const reclaimMs = gone === null || lastGrantUs === 0 ? null : (cutUs + gone * 1000 - lastGrantUs) / 1000;
        const grantsInLoss = victimGrants.filter((g) => g.tUs >= cutUs && g.tUs < restoreUs).length;
        const spentAfter = (): number => readAdmissionLog(victim.logPath).filter((a) => a.tUs > restoreUs).length;
        const resumed = await waitUntil('the faulted agent spending again', 7000, () => spentAfter() > 0).then(
          () => true,
          () => false,
        );
        const during = readAdmissionLog(victim.logPath).filter((a) => a.tUs >= cutUs && a.tUs < restoreUs);
        const late = fault === 'flap' ? 0 : during.filter((a) => a.tUs >= cutUs + CHAOS_POOL.leaseTtlMs * 1000).length;
        const lastMs = msBetween(cutUs, during.at(-1)?.tUs ?? null);
        const before = readAdmissionLog(victim.logPath).filter((a) => a.tUs < cutUs);
        const lastBeforeMs = msBetween(before.at(-1)?.tUs ?? cutUs, cutUs);
        const resumedMs = msBetween(restoreUs, readAdmissionLog(victim.logPath).find((a) => a.tUs > restoreUs)?.tUs ?? null);
        // One-way: its requests still arrive, so the coordinator must be seen answering them (into the void).
        const shapeSeen = fault === 'one-way' ? grantsInLoss > 0 : fault === 'flap' ? seen >= 2 : failed > 0;
        return {
          faultVerified: hadLease && seen > 0 && shapeSeen && resumed,
          reclaimMs,
          lateAdmissions: late,
          recoveryFromUs: [cutUs],
          note:
            `agent ${victim.name} ${what} for ${cutMs} ms (lease TTL ${CHAOS_POOL.leaseTtlMs} ms), its process running on; ` +
            (fault === 'flap' ? `${applied} cuts, ${seen} found in the kernel; ` : '') +
            `${failed} failed requests; ${grantsInLoss} grants to it during the fault; ` +
            `${before.length} admissions before, the last ${lastBeforeMs} ms before it; ${during.length} during, the last ${lastMs ?? '-'} ms after it` +
            (late > 0 ? ` (${late} later than the fault + TTL)` : '') +
            `; spending again ${resumedMs ?? 'never'} ms after the restore` +
            (hadLease ? '' : '; no lease with tokens seen before the fault') +
            (seen > 0 ? '' : '; the nft drop was not found in the kernel'),
        };
      },
      {
        redisUrl: world.redis.url,
        placement: world.placement,
        beforeAgents: async (fleet) => {
          await startStandby(fleet);
          // The victim spends slowly, so its lease ends by its clock (TTL), not by running out of tokens.
          await fleet.addAgent('slow', SLOW, runMs, options.seed);
        },
      },
    ),
  );
}

/** N2. Cut one agent's host off NATS while its process runs on: it stops at its lease's expiry, and spends again after the restore. */
export function cutAgentNats(options: ScenarioOptions): Promise<ScenarioRow> {
  return agentLinkFault('cut-agent-nats', 'cut', options);
}

/** N3. One agent hears nothing from NATS while its requests still arrive: it spends nothing past the drop + TTL. */
export function oneWayAgentNats(options: ScenarioOptions): Promise<ScenarioRow> {
  return agentLinkFault('one-way-agent-nats', 'one-way', options);
}

/** N4. One agent's link to NATS flaps every FLAP_MS: every admission within its lease's life, envelope kept, spending after. */
export function flapAgentNats(options: ScenarioOptions): Promise<ScenarioRow> {
  return agentLinkFault('flap-agent-nats', 'flap', options);
}
