/**
 * ChaosFleet: real processes for chaos scenarios. A coordinator process
 * (debug logs, so every grant is logged with the host monotonic clock), agent
 * processes logging each admission with the lease it spent from, a status
 * probe, and the faults: SIGKILL and SIGSTOP/SIGCONT of processes this fleet
 * started, each verified (exit signal, /proc state). It never signals a
 * process it did not start. Given a Redis URL its coordinators run in
 * durable mode (members c0, c1, …), and the owner of the pool can be found
 * from their logs. Relay processes (tokenlease-relay, debug logs, so their
 * grants count too) serve the pool on prefixes of their own, and agents may
 * be started on those. Processes are started and read by the test harness
 * (fleet.ts, coordinator-log.ts, log-events.ts), as the integration suites
 * do.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PoolStatus } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { currentOwner, freshGrants, type GrantLine } from '@tokenlease/harness/coordinator-log';
import {
  readAdmissionLog,
  startAgentProcess,
  startCoordinator,
  startRelay,
  StatusProbe,
  writeConfig,
  type LoggedAdmission,
} from '@tokenlease/harness/fleet';
import { ClockMap, clockRateEnv } from '@tokenlease/harness/clock-rate';
import { logEvents } from '@tokenlease/harness/log-events';
import { procState } from '@tokenlease/harness/proc-state';
import { stop, type Child } from '@tokenlease/harness/processes';
import type { Traffic } from '@tokenlease/harness/traffic';

export interface ChaosPool {
  readonly capacity: number;
  readonly refillPerSecond: number;
  readonly leaseTtlMs: number;
  readonly maxLeaseTokens: number;
  /** The root's relay classes: class → the most fleet weight a relay asking under it may claim. */
  readonly relayClasses?: Readonly<Record<string, number>>;
  /** The pool's clockDriftLimit (absent: the coordinator's default; 0: clocks unchecked). */
  readonly clockDriftLimit?: number;
}

export interface AgentHandle {
  readonly name: string;
  readonly child: Child;
  readonly agentId: string;
  readonly logPath: string;
  /** Maps its logged instants to the host's clock when its clock runs at another rate (clock-rate.ts); null: it runs on the host's. */
  readonly clock: ClockMap | null;
}

/** AgentSetup — how an agent process differs from the fleet's default: a clock that runs at `clockRate` times the host's (libfaketime). */
export interface AgentSetup {
  readonly clockRate?: number;
}

/**
 * Placement — where each process of a fleet runs: a command prefix per
 * coordinator (by start order) and per agent (by start order), such as a
 * NetLab host's (`ip netns exec <ns>`); empty: here, as a plain child.
 */
export interface Placement {
  coordinator(n: number): readonly string[];
  agent(n: number): readonly string[];
  /** The NATS URL each process connects to, where not the fleet's (a server of a cluster of its own, say). */
  natsUrl?(role: 'coordinator' | 'agent', n: number): string;
}

/** HERE — every process a plain child of the test process. */
export const HERE: Placement = { coordinator: () => [], agent: () => [] };

/** Grant — a fresh grant as the coordinator logged it. */
export type Grant = Pick<GrantLine, 'leaseId' | 'tUs' | 'ttlMs'>;

/** POOL — the one pool of a chaos fleet. */
export const POOL = 'api';
/** Ownership TTL of durable coordinators: a standby takes over within about this long. */
export const OWNERSHIP_TTL_MS = 1000;
/** How long after SIGSTOP or SIGCONT the kernel is asked for the process's state, ms. */
const SIGNAL_SETTLE_MS = 50;
/** How long a process's state may take to follow a SIGSTOP or SIGCONT on a busy machine, ms. */
const SIGNAL_STATE_WITHIN_MS = 2000;

/** untilState — whether `pid`'s state (procState) satisfies `ok` within SIGNAL_STATE_WITHIN_MS, read every SIGNAL_SETTLE_MS. */
async function untilState(pid: number, ok: (state: string | null) => boolean): Promise<boolean> {
  const deadline = performance.now() + SIGNAL_STATE_WITHIN_MS;
  for (;;) {
    if (ok(procState(pid))) return true;
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, SIGNAL_SETTLE_MS));
  }
}

export class ChaosFleet {
  readonly coordinators: Child[] = [];
  /** Relay processes, with the subject prefix each serves its agents on. */
  readonly relays: Array<{ readonly child: Child; readonly prefix: string }> = [];
  readonly agents: AgentHandle[] = [];
  private agentCount = 0;

  private constructor(
    readonly natsUrl: string,
    readonly pool: ChaosPool,
    readonly dir: string,
    readonly prefix: string,
    private readonly configPath: string,
    readonly probe: StatusProbe,
    readonly redisUrl: string | null,
    /** More environment variables for every coordinator (REDIS_REPLICAS, say). */
    private readonly coordinatorEnv: NodeJS.ProcessEnv,
    private readonly placement: Placement,
  ) {}

  static async start(
    natsUrl: string,
    pool: ChaosPool,
    dir: string,
    prefix: string,
    redisUrl: string | null = null,
    coordinatorEnv: NodeJS.ProcessEnv = {},
    placement: Placement = HERE,
  ): Promise<ChaosFleet> {
    const configPath = writeConfig(dir, {
      subjectPrefix: prefix,
      pools: {
        [POOL]: {
          capacity: pool.capacity,
          refill: `${pool.refillPerSecond}/s`,
          leaseTtlMs: pool.leaseTtlMs,
          maxLeaseTokens: pool.maxLeaseTokens,
          ...(pool.relayClasses === undefined ? {} : { relayClasses: pool.relayClasses }),
          ...(pool.clockDriftLimit === undefined ? {} : { clockDriftLimit: pool.clockDriftLimit }),
        },
      },
    });
    const fleet = new ChaosFleet(
      natsUrl,
      pool,
      dir,
      prefix,
      configPath,
      await StatusProbe.connect(natsUrl),
      redisUrl,
      coordinatorEnv,
      placement,
    );
    await fleet.startCoordinator();
    return fleet;
  }

  /** startCoordinator — a coordinator process; resolves once it serves (durable: once it has started). */
  async startCoordinator(): Promise<Child> {
    const n = this.coordinators.length;
    const durable = this.redisUrl === null ? {} : { redisUrl: this.redisUrl, member: `c${n}`, ownershipTtlMs: OWNERSHIP_TTL_MS };
    const child = await startCoordinator(this.placement.natsUrl?.('coordinator', n) ?? this.natsUrl, this.configPath, {
      ...durable,
      logLevel: 'debug',
      name: `coordinator-${n}`,
      env: this.coordinatorEnv,
      via: this.placement.coordinator(n),
    });
    this.coordinators.push(child);
    return child;
  }

  /** owner — (durable mode) the live coordinator whose last word on the pool was 'pool-owned', if any. */
  owner(): Child | undefined {
    return currentOwner(this.coordinators, POOL)?.child;
  }

  /** firstGrantAfterUs — the host time of the first grant any coordinator (or relay) logged at or after `tUs`, or null. */
  firstGrantAfterUs(tUs: number): number | null {
    const times = this.grants()
      .map((g) => g.tUs)
      .filter((t) => t >= tUs);
    return times.length === 0 ? null : Math.min(...times);
  }

  /** killOwner — (durable mode) SIGKILLs the pool's owner; true when verified dead by its exit signal. */
  async killOwner(): Promise<boolean> {
    const child = this.owner();
    if (child === undefined) return false;
    child.proc.kill('SIGKILL');
    return (await child.exited).signal === 'SIGKILL';
  }

  /** killCoordinator — SIGKILLs the running coordinator; true when verified dead by its exit signal. */
  async killCoordinator(): Promise<boolean> {
    const child = this.coordinators[this.coordinators.length - 1];
    if (child === undefined) return false;
    child.proc.kill('SIGKILL');
    return (await child.exited).signal === 'SIGKILL';
  }

  /**
   * startRelay — a relay process serving the pool on `<prefix>r<n>`, leasing
   * from this fleet's coordinators; `pool` (the root's capacity and refill,
   * its own TTL and lease size) and `uplink` as its configuration file says.
   * Resolves once it serves.
   */
  async startRelay(pool: ChaosPool, uplink: object): Promise<{ readonly child: Child; readonly prefix: string }> {
    const n = this.relays.length;
    const prefix = `${this.prefix}r${n}`;
    const doc = {
      upstreamPrefix: this.prefix,
      subjectPrefix: prefix,
      pools: {
        [POOL]: {
          capacity: pool.capacity,
          refill: `${pool.refillPerSecond}/s`,
          leaseTtlMs: pool.leaseTtlMs,
          maxLeaseTokens: pool.maxLeaseTokens,
        },
      },
      uplink,
    };
    const configPath = join(this.dir, `relay-${n}.json`);
    writeFileSync(configPath, JSON.stringify(doc, null, 2));
    const relay = { child: await startRelay(this.natsUrl, configPath, `${this.prefix}-r${n}`), prefix };
    this.relays.push(relay);
    return relay;
  }

  /**
   * addAgent — an agent process offering `traffic` for `durationMs` (on its
   * own clock), on `subjectPrefix` (default the coordinators'), set up as
   * `setup` says.
   */
  async addAgent(
    name: string,
    traffic: Traffic,
    durationMs: number,
    seed: number,
    subjectPrefix = this.prefix,
    setup: AgentSetup = {},
  ): Promise<AgentHandle> {
    const via = this.placement.agent(this.agentCount);
    const natsUrl = this.placement.natsUrl?.('agent', this.agentCount) ?? this.natsUrl;
    const rate = setup.clockRate;
    this.agentCount += 1;
    const logPath = join(this.dir, `${name}-${this.agentCount}.log`);
    const child = await startAgentProcess(
      {
        natsUrl,
        subjectPrefix,
        pool: POOL,
        name,
        seed,
        durationMs,
        traffic,
        logPath,
        // A clock line (stats with `tUs`) every 50 ms of its own clock, to map its admissions to the host's.
        ...(rate === undefined ? {} : { statsEveryMs: 50 }),
      },
      rate === undefined ? {} : clockRateEnv(rate),
      via,
    );
    const clock = rate === undefined ? null : ClockMap.watch(child, rate, hostMonoNowUs);
    const agentId = logEvents(child.lines, { type: 'ready' })[0]?.fields['agentId'];
    const handle = { name, child, agentId: typeof agentId === 'string' ? agentId : '', logPath, clock };
    this.agents.push(handle);
    return handle;
  }

  /** killAgent — SIGKILL; true when verified dead by its exit signal. */
  async killAgent(agent: AgentHandle): Promise<boolean> {
    agent.child.proc.kill('SIGKILL');
    return (await agent.child.exited).signal === 'SIGKILL';
  }

  /** pauseAgent — SIGSTOP for `forMs`, then SIGCONT; true when /proc showed it stopped, then running again. */
  async pauseAgent(agent: AgentHandle, forMs: number, during: () => Promise<void> = async () => {}): Promise<boolean> {
    const startedMs = performance.now();
    agent.child.proc.kill('SIGSTOP');
    // A busy machine can take a while to stop a process: its state is read until it says stopped, bounded.
    const stopped = await untilState(agent.child.pid, (state) => state === 'T');
    const waitedMs = performance.now() - startedMs;
    await Promise.all([during(), new Promise((resolve) => setTimeout(resolve, Math.max(0, forMs - waitedMs)))]);
    agent.child.proc.kill('SIGCONT');
    const resumed = await untilState(agent.child.pid, (state) => state !== null && state !== 'T');
    return stopped && resumed;
  }

  /** stopAgent — SIGTERM: the agent returns its lease and exits; true when it exited with 0. */
  async stopAgent(agent: AgentHandle): Promise<boolean> {
    await stop(agent.child);
    return agent.child.proc.exitCode === 0;
  }

  status(agentId?: string): Promise<PoolStatus> {
    return this.probe.status(POOL, this.prefix, agentId);
  }

  /** admissions — every admission logged by every agent process, on the host's clock, in time order. */
  admissions(): Array<LoggedAdmission & { readonly agent: string }> {
    return this.agents
      .flatMap((a) => {
        const clock = a.clock;
        return readAdmissionLog(a.logPath).map((x) => ({ ...x, tUs: clock === null ? x.tUs : clock.toHostUs(x.tUs), agent: a.agentId }));
      })
      .sort((x, y) => x.tUs - y.tUs);
  }

  /** grants — the fresh grants every coordinator and relay logged (a retry's repeated reply counts once, at first). */
  grants(): Grant[] {
    return freshGrants([...this.coordinators, ...this.relays.map((r) => r.child)]);
  }

  async close(): Promise<void> {
    await this.probe.close();
  }
}
