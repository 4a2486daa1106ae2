/**
 * One system through the comparison's fleet workload (systems.ts): its
 * servers' and clients' CPU time from /proc over exactly the traffic's
 * time, the clients' figures, and the merged admission logs checked
 * against the envelope and against N per W (WINDOW) with the checkers every
 * test uses.
 *
 * Every server it charges is one the run started itself (private NATS and
 * Redis, a coordinator process per tokenlease row), so their CPU is the
 * system's alone; a row that does not use a server is not charged for it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readAdmissionLog, scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import type { PrivateNats } from '@tokenlease/harness/nats';
import { procCpuSeconds } from '@tokenlease/harness/proc-state';
import { spawnNode, stop, type Child } from '@tokenlease/harness/processes';
import type { PrivateRedis } from '@tokenlease/harness/redis';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, checkWindows, type EnvelopeReport, type WindowReport } from '@tokenlease/shared/testing';
import type { ClientConfig } from './decider.js';
import type { ClientDone } from './client.js';
import { LatencyHistogram } from './latency.js';
import { FLEET, WINDOW, type System } from './systems.js';

/** Time the clients get to start and connect before the traffic starts, ms. */
const SPAWN_MS = 2500;
/** Past the coordinator's quiet period (one lease TTL) before the traffic starts, ms. */
const QUIET_MARGIN_MS = 500;
/** How long after its traffic a client may take to report, ms. */
const REPORT_MS = 20_000;
const POOL = 'fleet';
const CLIENT_SCRIPT = fileURLToPath(new URL('./client.js', import.meta.url));

/** FleetServers — the private servers of the run. */
export interface FleetServers {
  readonly nats: PrivateNats;
  readonly redis: PrivateRedis;
}

/** SystemRun — what one system did with the workload. */
export interface SystemRun {
  readonly system: System;
  readonly durationMs: number;
  readonly decisions: number;
  readonly admittedTokens: number;
  readonly shed: number;
  readonly errors: number;
  readonly roundTrips: number;
  readonly latency: LatencyHistogram;
  /** CPU time of the clients and of the servers the system uses, over the traffic, s. */
  readonly cpuSecondsClients: number;
  readonly cpuSecondsServers: number;
  /** The merged admissions against B + r·T, every window. */
  readonly envelope: EnvelopeReport;
  /** The same against the system's own promise, B + A + r·T (the envelope again when A = 0). */
  readonly promise: EnvelopeReport;
  /** The merged admissions against N per W (WINDOW), every window: what a window row is judged by. */
  readonly windows: WindowReport;
}

function cpuSeconds(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (procCpuSeconds(pid) ?? 0), 0);
}

async function startClient(config: ClientConfig): Promise<Child> {
  const child = spawnNode(`compare:${config.name}`, CLIENT_SCRIPT, [JSON.stringify(config)]);
  await waitForEvent(child, { type: 'ready' }, SPAWN_MS * 6);
  return child;
}

/**
 * runSystem — `system` through the fleet workload for `durationMs`; `tag`
 * keeps its subjects and keys apart from other runs'. Given `inFlight`, the
 * clients decide in a closed loop instead (client.ts, driveClosedLoop).
 */
export async function runSystem(
  system: System,
  servers: FleetServers,
  durationMs: number,
  tag: string,
  inFlight?: number,
): Promise<SystemRun> {
  const dir = scratchDir();
  const prefix = `tlcompare${tag}`;
  const n = FLEET.demandsPerSecond.length;
  let coordinator: Child | null = null;
  let startAtUs = hostMonoNowUs() + SPAWN_MS * 1000;
  const window = system.window === true;
  if (system.kind === 'tokenlease') {
    const limit = window
      ? { window: { limit: WINDOW.limitTokens, windowMs: WINDOW.windowMs } }
      : { capacity: FLEET.capacityTokens, refill: `${FLEET.refillPerSecond}/s` };
    const pool = { ...limit, ...system.pool };
    coordinator = await startCoordinator(servers.nats.url, writeConfig(dir, { subjectPrefix: prefix, pools: { [POOL]: pool } }));
    // A window pool's tokens all cool for one window after the quiet period.
    const emptyMs = FLEET.leaseTtlMs + (window ? WINDOW.windowMs : 0);
    startAtUs = Math.max(startAtUs, hostMonoNowUs() + (emptyMs + QUIET_MARGIN_MS) * 1000);
  }
  const local = system.kind === 'local';
  const configs = FLEET.demandsPerSecond.map<ClientConfig>((perSecond, i) => ({
    kind: system.kind,
    name: `${system.name}-${i}`,
    natsUrl: servers.nats.url,
    subjectPrefix: prefix,
    pool: POOL,
    redisUrl: servers.redis.url,
    redisKey: `${prefix}:${system.name}`,
    capacityTokens: window ? WINDOW.limitTokens : local ? Math.floor(FLEET.capacityTokens / n) : FLEET.capacityTokens,
    refillPerSecond: local ? FLEET.refillPerSecond / n : FLEET.refillPerSecond,
    windowMs: WINDOW.windowMs,
    ...(system.reportMs === undefined ? {} : { reportMs: system.reportMs }),
    ...(inFlight === undefined ? {} : { inFlight }),
    perSecond,
    seed: 2026 + i,
    startAtUs,
    durationMs,
    logPath: join(dir, `admissions-${i}.log`),
  }));
  const clients = await Promise.all(configs.map(startClient));
  try {
    const serverPids = system.kind === 'tokenlease' ? [servers.nats.pid(), coordinator?.pid] : local ? [] : [servers.redis.pid()];
    const serverPidsKnown = serverPids.filter((pid): pid is number => typeof pid === 'number');
    const clientPids = clients.map((c) => c.pid);
    await sleep(Math.max(0, (startAtUs - hostMonoNowUs()) / 1000));
    const clients0 = cpuSeconds(clientPids);
    const servers0 = cpuSeconds(serverPidsKnown);
    const lines = await Promise.all(clients.map((c) => c.waitForLine((l) => l.startsWith('{"type":"done"'), durationMs + REPORT_MS)));
    const cpuSecondsClients = cpuSeconds(clientPids) - clients0;
    const cpuSecondsServers = cpuSeconds(serverPidsKnown) - servers0;
    const dones = lines.map((l) => JSON.parse(l) as ClientDone);
    const latency = new LatencyHistogram();
    for (const done of dones) latency.add(done.latency);
    const admissions = configs.flatMap((c) => readAdmissionLog(c.logPath));
    const rate = makeRate(FLEET.refillPerSecond, 1000);
    const envelope = checkEnvelope(admissions, FLEET.capacityTokens, rate);
    const sum = (f: (d: ClientDone) => number): number => dones.reduce((s, d) => s + f(d), 0);
    return {
      system,
      durationMs,
      decisions: sum((d) => d.decisions),
      admittedTokens: sum((d) => d.admittedTokens),
      shed: sum((d) => d.shed),
      errors: sum((d) => d.errors),
      roundTrips: sum((d) => d.roundTrips),
      latency,
      cpuSecondsClients,
      cpuSecondsServers,
      envelope,
      promise: system.allowanceTokens === 0 ? envelope : checkEnvelope(admissions, FLEET.capacityTokens + system.allowanceTokens, rate),
      windows: checkWindows(admissions, WINDOW.limitTokens, WINDOW.windowMs * 1000),
    };
  } finally {
    await Promise.all(clients.map((c) => stop(c)));
    if (coordinator !== null) await stop(coordinator);
  }
}
