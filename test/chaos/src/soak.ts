/**
 * The soak: a durable fleet run for a long time with churn, template pools
 * and faults at random, judged for the envelope and for growth.
 *
 * - Servers of its own: a nats-server with its monitoring port (for the
 *   server's subscription count) and a durable redis-server, on free ports.
 * - Two coordinators in durable mode, each serving HTTP (its metrics: heap
 *   used, active handles, active timers), on a configured pool `api` and a
 *   template `tenant:*` (pools made on first use, evicted once idle).
 * - Agents: two steady ones on `api` all along; churn: every few seconds
 *   one agent on a random `tenant:<k>` pool (k of TENANTS) starts, and the
 *   oldest churned one is SIGKILLed once more than CHURNED_LIVE run, so
 *   template pools are made, used, stranded and evicted all the time.
 * - Faults, one every FAULT_EVERY_MS on average, drawn from the seed:
 *   SIGKILL a churned agent, SIGSTOP one past its lease then SIGCONT,
 *   SIGKILL the pool's owner and start it again, SIGKILL NATS and start it
 *   again on its port. Every fault is verified (exit signal, /proc state).
 * - Figures at the start (after WARMUP_MS) and every minute: per
 *   coordinator its heap used, active handles and Timeout resources, Redis's
 *   key count, NATS's subscriptions; the end's against the start's.
 * - Verdict: every pool's admissions within its B + r·T over every window;
 *   no coordinator's heap beyond twice its start plus 32 MB, no handles or
 *   timers beyond 1.5 times their start plus 50, no more NATS
 *   subscriptions at the end than 1.5 times the start plus what the live
 *   processes explain (GROWTH_SLACK), and no more Redis keys per pool used
 *   than 1.5 times the start's plus one (template pools add their keys as
 *   they are first used, most of them after the start: an hour's run made
 *   41 pools, 11 of them by the start). A coordinator restarted by a fault
 *   is compared from its restart on.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeRate } from '@tokenlease/shared';
import { checkEnvelope, seededRandom, type Random } from '@tokenlease/shared/testing';
import { findNatsServerBinary } from '@tokenlease/harness/nats';
import { leaseAdmissions, readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { currentOwner } from '@tokenlease/harness/coordinator-log';
import { freePort } from '@tokenlease/harness/ports';
import { procState } from '@tokenlease/harness/proc-state';
import { stopAll, type Child } from '@tokenlease/harness/processes';
import { redisCommand } from '@tokenlease/harness/redis-raw';
import { startPrivateRedis } from '@tokenlease/harness/redis';
import { scrape, valueOf } from '@tokenlease/harness/scrape';
import { startBinaryServer, type PrivateServer } from '@tokenlease/harness/server-handle';

const POOL = 'api';
const TENANTS = 40;
const CHURN_EVERY_MS = 3000;
const CHURNED_LIVE = 6;
const FAULT_EVERY_MS = 20_000;
const WARMUP_MS = 30_000;
const SAMPLE_EVERY_MS = 60_000;
const TTL_MS = 1000;
const API_POOL = { capacity: 200, refill: '400/s', leaseTtlMs: TTL_MS, maxLeaseTokens: 40 } as const;
const TENANT_POOL = { capacity: 40, refill: '50/s', leaseTtlMs: TTL_MS, maxLeaseTokens: 10, idleEvictMs: 60_000 } as const;
/** Growth allowed beyond 1.5× the start: handles and timers, NATS subscriptions. */
const GROWTH_SLACK = 50;
/** Redis keys per pool used allowed beyond 1.5× the start's. */
const KEYS_PER_POOL_SLACK = 1;
const HEAP_SLACK_BYTES = 32 * 1024 * 1024;

/** SoakOptions — how long (ms) and from which seed. */
export interface SoakOptions {
  readonly durationMs: number;
  readonly seed: number;
  /** Progress lines go here (stderr by default); nothing else prints. */
  readonly log?: (line: string) => void;
}

/** Figures — one sample of what should not grow. */
export interface Figures {
  readonly atMs: number;
  /** Per coordinator member: heap used (bytes), active handles, active Timeout resources; null where it did not answer. */
  readonly coordinators: Readonly<Record<string, { heapBytes: number; handles: number; timers: number } | null>>;
  readonly redisKeys: number | null;
  readonly natsSubscriptions: number | null;
  /** Pools used by an agent so far (the configured one and each tenant touched). */
  readonly poolsUsed: number;
}

/** SoakReport — what a soak found. */
export interface SoakReport {
  readonly seed: number;
  readonly durationMs: number;
  readonly admitted: number;
  readonly envelopeViolations: number;
  readonly poolsJudged: number;
  readonly faults: Readonly<Record<string, number>>;
  readonly faultsUnverified: number;
  readonly agentsStarted: number;
  readonly start: Figures;
  readonly samples: readonly Figures[];
  readonly end: Figures;
  /** Why the soak failed, one line each (empty: it passed). */
  readonly problems: readonly string[];
}

interface SoakAgent {
  readonly child: Child;
  readonly pool: string;
  readonly logPath: string;
}

type FaultKind = 'kill-agent' | 'pause-agent' | 'kill-owner' | 'restart-nats';
const FAULT_KINDS: readonly FaultKind[] = ['kill-agent', 'pause-agent', 'kill-owner', 'restart-nats'];

/** startMonitoredNats — a private nats-server with its monitoring endpoint; `monitorUrl` answers /varz. */
async function startMonitoredNats(): Promise<{ server: PrivateServer; monitorUrl: string }> {
  const binary = findNatsServerBinary();
  if (binary === null) throw new Error('the soak needs the nats-server binary (Debian: apt-get install nats-server)');
  const port = await freePort();
  const monitorPort = await freePort();
  const server = await startBinaryServer(
    { scheme: 'nats', binary, args: ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort)] },
    port,
  );
  return { server, monitorUrl: `http://127.0.0.1:${monitorPort}` };
}

async function natsSubscriptions(monitorUrl: string): Promise<number | null> {
  try {
    const response = await fetch(`${monitorUrl}/varz`, { signal: AbortSignal.timeout(2000) });
    const body = (await response.json()) as { subscriptions?: unknown };
    return typeof body.subscriptions === 'number' ? body.subscriptions : null;
  } catch {
    return null;
  }
}

/** runSoak — the soak of the module comment; resolves with its report (never throws for a failed verdict: `problems` says). */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const random = seededRandom(options.seed);
  const dir = scratchDir();
  const prefix = `tlsoak${options.seed}`;
  const configPath = writeConfig(dir, { subjectPrefix: prefix, pools: { [POOL]: API_POOL }, templates: { 'tenant:*': TENANT_POOL } });
  const nats = await startMonitoredNats();
  const redis = await startPrivateRedis();
  const members = ['s0', 's1'];
  const httpPorts = new Map<string, number>();
  const coordinators = new Map<string, Child>();
  const startMember = async (member: string): Promise<void> => {
    const port = httpPorts.get(member) ?? (await freePort());
    httpPorts.set(member, port);
    const child = await startCoordinator(nats.server.url, configPath, {
      redisUrl: redis.url,
      member,
      ownershipTtlMs: 1000,
      logLevel: 'info',
      http: `127.0.0.1:${port}`,
    });
    coordinators.set(member, child);
  };
  const agents: SoakAgent[] = [];
  const churned: SoakAgent[] = [];
  const faults: Record<string, number> = {};
  let faultsUnverified = 0;
  const samples: Figures[] = [];
  const startedMs = performance.now();
  const elapsedMs = (): number => Math.round(performance.now() - startedMs);
  const figures = async (): Promise<Figures> => {
    const perMember: Record<string, { heapBytes: number; handles: number; timers: number } | null> = {};
    for (const member of members) {
      try {
        const s = await scrape(`http://127.0.0.1:${httpPorts.get(member)}/metrics`);
        perMember[member] = {
          heapBytes: valueOf(s, 'nodejs_heap_size_used_bytes') ?? NaN,
          handles: valueOf(s, 'nodejs_active_handles_total') ?? NaN,
          timers: valueOf(s, 'nodejs_active_resources', { type: 'Timeout' }) ?? 0,
        };
      } catch {
        perMember[member] = null;
      }
    }
    const keys = await redisCommand(redis.url, 'DBSIZE').catch(() => null);
    return {
      atMs: elapsedMs(),
      coordinators: perMember,
      redisKeys: typeof keys === 'number' ? keys : null,
      natsSubscriptions: await natsSubscriptions(nats.monitorUrl),
      poolsUsed: new Set(agents.map((a) => a.pool)).size,
    };
  };
  const addAgent = async (pool: string, durationMs: number, churn: boolean): Promise<void> => {
    const logPath = join(dir, `agent-${agents.length}.log`);
    const child = await startAgentProcess({
      natsUrl: nats.server.url,
      subjectPrefix: prefix,
      pool,
      name: `soak${agents.length}`,
      seed: random.int(0, 2 ** 31),
      durationMs,
      traffic: pool === POOL ? { kind: 'steady', perSecond: 300 } : { kind: 'steady', perSecond: 40 },
      logPath,
    });
    const agent = { child, pool, logPath };
    agents.push(agent);
    if (churn) churned.push(agent);
  };
  const restartedAt = new Map<string, Figures>();
  try {
    await startMember('s0');
    await startMember('s1');
    for (let i = 0; i < 2; i += 1) await addAgent(POOL, options.durationMs, false);
    log(`soak: SEED=${options.seed}, ${Math.round(options.durationMs / 1000)} s`);
    let nextChurnMs = 0;
    let nextFaultMs = exponential(random, FAULT_EVERY_MS);
    let nextSampleMs = WARMUP_MS;
    let start: Figures | null = null;
    while (elapsedMs() < options.durationMs) {
      const now = elapsedMs();
      if (now >= nextChurnMs) {
        nextChurnMs = now + CHURN_EVERY_MS;
        const live = churned.filter((a) => procState(a.child.pid) !== null);
        if (live.length >= CHURNED_LIVE) {
          const oldest = live[0] as SoakAgent;
          oldest.child.proc.kill('SIGKILL');
          await oldest.child.exited;
        }
        await addAgent(`tenant:${random.int(0, TENANTS - 1)}`, Math.max(5000, options.durationMs - now - 5000), true);
      }
      if (now >= nextFaultMs && now < options.durationMs - 10_000) {
        nextFaultMs = now + exponential(random, FAULT_EVERY_MS);
        const kind = FAULT_KINDS[random.int(0, FAULT_KINDS.length - 1)] as FaultKind;
        faults[kind] = (faults[kind] ?? 0) + 1;
        const verified = await fault(kind);
        if (!verified) faultsUnverified += 1;
        log(`soak: ${Math.round(now / 1000)} s: ${kind}${verified ? '' : ' (NOT verified)'}`);
      }
      if (now >= nextSampleMs) {
        nextSampleMs = now + SAMPLE_EVERY_MS;
        const sample = await figures();
        if (start === null) start = sample;
        else samples.push(sample);
        log(`soak: ${Math.round(now / 1000)} s: ${JSON.stringify(sample)}`);
      }
      await sleep(100);
    }
    const end = await figures();
    for (const a of agents) if (procState(a.child.pid) !== null) a.child.proc.kill('SIGTERM');
    await Promise.all(agents.map((a) => a.child.exited));
    return judge(start ?? end, end);
  } finally {
    await stopAll();
    await nats.server.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  async function fault(kind: FaultKind): Promise<boolean> {
    const live = churned.filter((a) => procState(a.child.pid) !== null);
    switch (kind) {
      case 'kill-agent': {
        const victim = live[random.int(0, Math.max(0, live.length - 1))];
        if (victim === undefined) return false;
        victim.child.proc.kill('SIGKILL');
        return (await victim.child.exited).signal === 'SIGKILL';
      }
      case 'pause-agent': {
        const victim = live[random.int(0, Math.max(0, live.length - 1))];
        if (victim === undefined) return false;
        victim.child.proc.kill('SIGSTOP');
        await sleep(50);
        const stopped = procState(victim.child.pid) === 'T';
        await sleep(TTL_MS * 2 + 500);
        victim.child.proc.kill('SIGCONT');
        await sleep(50);
        return stopped && procState(victim.child.pid) !== 'T';
      }
      case 'kill-owner': {
        const owner = currentOwner([...coordinators.values()], POOL);
        const member = [...coordinators.entries()].find(([, child]) => child === owner?.child)?.[0];
        if (owner === undefined || member === undefined) return false;
        owner.child.proc.kill('SIGKILL');
        const dead = (await owner.child.exited).signal === 'SIGKILL';
        await sleep(500);
        await startMember(member);
        restartedAt.set(member, await figures());
        return dead;
      }
      case 'restart-nats': {
        await nats.server.kill();
        await sleep(1000);
        await nats.server.start();
        return true;
      }
    }
  }

  function judge(start: Figures, end: Figures): SoakReport {
    const problems: string[] = [];
    let admitted = 0;
    let envelopeViolations = 0;
    const byPool = new Map<string, SoakAgent[]>();
    for (const a of agents) byPool.set(a.pool, [...(byPool.get(a.pool) ?? []), a]);
    for (const [pool, of] of byPool) {
      const fields = pool === POOL ? API_POOL : TENANT_POOL;
      const admissions = leaseAdmissions(of.flatMap((a) => readAdmissionLog(a.logPath)));
      const report = checkEnvelope(admissions, fields.capacity, makeRate(Number(fields.refill.split('/')[0]), 1000));
      admitted += report.admittedTokens;
      envelopeViolations += report.violations;
      if (report.violations > 0) problems.push(`pool ${pool}: ${report.violations} admissions over B + r·T`);
    }
    if (faultsUnverified > 0) problems.push(`${faultsUnverified} faults were not verified`);
    for (const member of members) {
      const from = restartedAt.get(member)?.coordinators[member] ?? start.coordinators[member];
      const to = end.coordinators[member];
      if (from === null || from === undefined || to === null || to === undefined) {
        problems.push(`coordinator ${member}: no figures (${from === null ? 'start' : 'end'})`);
        continue;
      }
      if (to.heapBytes > 2 * from.heapBytes + HEAP_SLACK_BYTES)
        problems.push(`coordinator ${member}: heap ${from.heapBytes} → ${to.heapBytes} bytes`);
      if (to.handles > 1.5 * from.handles + GROWTH_SLACK) problems.push(`coordinator ${member}: handles ${from.handles} → ${to.handles}`);
      if (to.timers > 1.5 * from.timers + GROWTH_SLACK) problems.push(`coordinator ${member}: timers ${from.timers} → ${to.timers}`);
    }
    const grew = (what: string, from: number | null, to: number | null): void => {
      if (from === null || to === null) problems.push(`${what}: no figures`);
      else if (to > 1.5 * from + GROWTH_SLACK) problems.push(`${what}: ${from} → ${to}`);
    };
    // Template pools add their keys as they are first used (most of them after the start): keys are judged per pool used.
    const perPool = (f: Figures): number | null => (f.redisKeys === null || f.poolsUsed === 0 ? null : f.redisKeys / f.poolsUsed);
    const keysFrom = perPool(start);
    const keysTo = perPool(end);
    if (keysFrom === null || keysTo === null) problems.push('Redis keys: no figures');
    else if (keysTo > 1.5 * keysFrom + KEYS_PER_POOL_SLACK)
      problems.push(
        `Redis keys per pool used: ${keysFrom.toFixed(1)} → ${keysTo.toFixed(1)} (${start.redisKeys} keys on ${start.poolsUsed} pools → ${end.redisKeys} on ${end.poolsUsed})`,
      );
    grew('NATS subscriptions', start.natsSubscriptions, end.natsSubscriptions);
    return {
      seed: options.seed,
      durationMs: options.durationMs,
      admitted,
      envelopeViolations,
      poolsJudged: byPool.size,
      faults,
      faultsUnverified,
      agentsStarted: agents.length,
      start,
      samples,
      end,
      problems,
    };
  }
}

/** exponential — a draw of an exponential delay with mean `meanMs`, at least a tenth of it. */
function exponential(random: Random, meanMs: number): number {
  return Math.max(meanMs / 10, Math.round(-Math.log(1 - random.next()) * meanMs));
}
