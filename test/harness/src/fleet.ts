/**
 * Fleet helpers: a coordinator process from a pool configuration, child
 * agent processes, status queries and admission logs. Readiness is read
 * from the processes' JSON lines (log-events.ts), never from their words.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  decodeReply,
  encodeMessage,
  subjectFor,
  ANONYMOUS_IDENTITY,
  DEFAULT_SUBJECT_PREFIX,
  type PoolStatus,
  type Decoded,
  type Reply,
} from '@tokenlease/shared';
import { connectNats, natsEnvLayer, resolveNatsOptions, NATS_ENV, type Bus, type NatsSettings } from '@tokenlease/shared/nats';
import type { Admission } from '@tokenlease/shared/testing';
import type { AgentProcessConfig } from './agent-process.js';
import type { AdmissionSource } from './drive.js';
import type { HostileConfig } from './hostile-client.js';
import type { SlotHolderConfig } from './slot-holder.js';
import type { SlotServiceConfig } from './slot-service.js';
import { hasEvent, parseLogLine, waitForEvent, type LogFields } from './log-events.js';
import {
  agentProcessScript,
  coordinatorCliScript,
  hostileClientScript,
  relayCliScript,
  slotHolderScript,
  slotServiceScript,
} from './paths.js';
import { spawnNode, type Child } from './processes.js';

/** scratchDir — a fresh temporary folder for configs and logs. */
export function scratchDir(): string {
  return mkdtempSync(join(tmpdir(), 'tokenlease-'));
}

/** writeConfig — writes a coordinator configuration document as JSON; returns its path. */
export function writeConfig(dir: string, doc: object): string {
  const path = join(dir, 'pools.json');
  writeFileSync(path, JSON.stringify(doc, null, 2));
  return path;
}

/**
 * reloadBySighup — writes `next` to `configPath`, sends the coordinator
 * SIGHUP, and returns the fields of the first `reloaded` line applied after
 * `afterUs` (host µs; earlier reloads' lines are printed already).
 */
export async function reloadBySighup(coordinator: Child, configPath: string, next: object, afterUs: number): Promise<LogFields> {
  writeFileSync(configPath, JSON.stringify(next, null, 2));
  coordinator.proc.kill('SIGHUP');
  const line = await coordinator.waitForLine((text) => {
    const fields = parseLogLine(text);
    return fields !== null && fields['event'] === 'reloaded' && fields['outcome'] === 'applied' && Number(fields['tUs']) > afterUs;
  }, 5000);
  return parseLogLine(line) ?? {};
}

/** STARTUP_TIMEOUT_MS — how long a coordinator or agent process may take to say it is ready, ms. */
const STARTUP_TIMEOUT_MS = 15_000;

/**
 * CoordinatorOptions — how to run a coordinator process: in memory unless
 * `redisUrl` is given (durable mode), even when REDIS_URL is set in the
 * environment.
 */
export interface CoordinatorOptions {
  /** Run on this Redis (durable mode). */
  readonly redisUrl?: string;
  /** Durable mode: its name among its peers (default: chosen by the CLI). */
  readonly member?: string;
  readonly ownershipTtlMs?: number;
  /** Durable mode: key prefix (default the configuration's subject prefix). */
  readonly redisPrefix?: string;
  /** Log level (default info; debug logs every grant with its host time). */
  readonly logLevel?: string;
  /** The child's name in messages (default `coordinator`, or `coordinator:<member>`). */
  readonly name?: string;
  /** More flags (NATS logins and TLS, say). */
  readonly args?: readonly string[];
  /** More environment variables for the child (NATS_USER, …). */
  readonly env?: NodeJS.ProcessEnv;
  /** Serve HTTP (`--http`) on this `host:port`; startCoordinator then also waits for its 'http-listening' line. */
  readonly http?: string;
  /** A command prefix that runs it elsewhere (netns.ts: inside a host); default: here. */
  readonly via?: readonly string[];
}

/**
 * startCoordinator — the CLI in a child process (logs captured); resolves
 * once it serves ('serving' in memory mode, 'durable-started' in durable
 * mode). An exit without its 'stopped' or 'durable-stopped' line is
 * reported on stderr, unless a SIGKILL (a test's fault) ended it. The NATS
 * URL goes in the child's environment (NATS_URL), not on its command line,
 * where any credentials inside it would show in the process list; the rest
 * of the parent's NATS_* settings pass through.
 */
export async function startCoordinator(natsUrl: string, configPath: string, options: CoordinatorOptions = {}): Promise<Child> {
  const args = ['--config', configPath, '--log-level', options.logLevel ?? 'info', ...(options.args ?? [])];
  const durable = options.redisUrl !== undefined;
  if (options.redisUrl === undefined) args.push('--memory');
  else {
    args.push('--redis', options.redisUrl);
    if (options.member !== undefined) args.push('--member', options.member);
    if (options.ownershipTtlMs !== undefined) args.push('--ownership-ttl-ms', String(options.ownershipTtlMs));
    if (options.redisPrefix !== undefined) args.push('--redis-prefix', options.redisPrefix);
  }
  if (options.http !== undefined) args.push('--http', options.http);
  const name = options.name ?? (options.member === undefined ? 'coordinator' : `coordinator:${options.member}`);
  const child = spawnNode(name, coordinatorCliScript(), args, { [NATS_ENV.url]: natsUrl, ...options.env }, options.via);
  await waitForEvent(child, { event: durable ? 'durable-started' : 'serving' }, STARTUP_TIMEOUT_MS);
  if (options.http !== undefined) await waitForEvent(child, { event: 'http-listening' }, STARTUP_TIMEOUT_MS);
  void child.exited.then(({ code, signal }) => {
    const stopped = hasEvent(child, { event: durable ? 'durable-stopped' : 'stopped' });
    if (!stopped && signal !== 'SIGKILL')
      console.error(`${name} (pid ${child.pid}) exited unexpectedly (code ${code}, signal ${signal}): ${child.stderr().slice(-4000)}`);
  });
  return child;
}

/** RelayOptions — how to run a relay process beside its configuration. */
export interface RelayOptions {
  /** Log level (default debug: every upstream and downstream grant is logged). */
  readonly logLevel?: string;
  /** Serve HTTP (`--http`) on this `host:port`; startRelay then also waits for its 'http-listening' line. */
  readonly http?: string;
  /** More environment variables for the child (NATS_USER, …). */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * startRelay — a `tokenlease-relay` process of the relay configuration at
 * `configPath`, as `options` say; resolves once it serves. Its NATS URL
 * goes in its environment.
 */
export async function startRelay(natsUrl: string, configPath: string, relayId: string, options: RelayOptions = {}): Promise<Child> {
  const http = options.http === undefined ? [] : ['--http', options.http];
  const args = ['--config', configPath, '--relay-id', relayId, '--log-level', options.logLevel ?? 'debug', ...http];
  const child = spawnNode(`relay:${relayId}`, relayCliScript(), args, { [NATS_ENV.url]: natsUrl, ...options.env });
  await waitForEvent(child, { event: 'relay-serving' }, STARTUP_TIMEOUT_MS);
  if (options.http !== undefined) await waitForEvent(child, { event: 'http-listening' }, STARTUP_TIMEOUT_MS);
  return child;
}

/**
 * startAgentProcess — an agent in a child process; resolves once it is
 * connected (its 'ready' line names its agentId). Its NATS URL goes in its
 * environment, as for the coordinator, with `env` added; a non-empty `via`
 * runs it elsewhere (netns.ts: inside a host).
 */
export async function startAgentProcess(
  config: AgentProcessConfig,
  env: NodeJS.ProcessEnv = {},
  via: readonly string[] = [],
): Promise<Child> {
  const { natsUrl, ...rest } = config;
  const child = spawnNode(`agent:${config.name}`, agentProcessScript(), [JSON.stringify(rest)], { [NATS_ENV.url]: natsUrl, ...env }, via);
  await waitForEvent(child, { type: 'ready' }, STARTUP_TIMEOUT_MS);
  return child;
}

/** startSlotService — a service limited by a concurrency pool in a child process (slot-service.ts); resolves once it listens. */
export async function startSlotService(config: SlotServiceConfig): Promise<Child> {
  const { natsUrl, ...rest } = config;
  const child = spawnNode(`slots:${config.name}`, slotServiceScript(), [JSON.stringify(rest)], { [NATS_ENV.url]: natsUrl });
  await waitForEvent(child, { type: 'ready' }, STARTUP_TIMEOUT_MS);
  return child;
}

/** startSlotHolder — a process holding slots of a concurrency pool (slot-holder.ts), run through `via` (a NetLab host's prefix, say); resolves once it is connected. */
export async function startSlotHolder(config: SlotHolderConfig, via: readonly string[] = []): Promise<Child> {
  const { natsUrl, ...rest } = config;
  const child = spawnNode(`holder:${config.name}`, slotHolderScript(), [JSON.stringify(rest)], { [NATS_ENV.url]: natsUrl }, via);
  await waitForEvent(child, { type: 'ready' }, STARTUP_TIMEOUT_MS);
  return child;
}

/** SlotHold — one hold a slot holder logged: taken and given back, host monotonic µs, and the lease its agent held then. */
export interface SlotHold {
  readonly startUs: number;
  readonly endUs: number;
  readonly leaseId: string;
}

/** readSlotHolds — the holds a slot holder wrote ("<start µs> <end µs> <lease id>" lines); none when it wrote no file. */
export function readSlotHolds(path: string): SlotHold[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [start, end, leaseId] = line.split(' ');
      const startUs = Number(start);
      const endUs = Number(end);
      if (!Number.isSafeInteger(startUs) || !Number.isSafeInteger(endUs) || leaseId === undefined)
        throw new Error(`${path}: not a hold: ${JSON.stringify(line)}`);
      return { startUs, endUs, leaseId };
    });
}

/** startHostileClient — a hostile client in a child process (hostile-client.ts); resolves once it is connected. */
export async function startHostileClient(config: HostileConfig): Promise<Child> {
  const child = spawnNode(`hostile:${config.attack.kind}`, hostileClientScript(), [JSON.stringify(config)]);
  await waitForEvent(child, { type: 'ready' }, STARTUP_TIMEOUT_MS);
  return child;
}

/** HostileOutcome — what a finished hostile client sent, the replies it got by code or kind, and how long they took (p50, max). */
export interface HostileOutcome {
  readonly sent: number;
  readonly replies: Record<string, number>;
  readonly latencyMs: { readonly p50: number; readonly max: number };
  /** Tokens granted to a greedy attack (`false-class`); 0 for the others. */
  readonly spentTokens: number;
}

/** hostileOutcome — a finished hostile client's HostileOutcome. */
export function hostileOutcome(child: Child): HostileOutcome {
  const done = [...child.lines].reverse().find((line) => line.startsWith('{"type":"done"'));
  if (done === undefined) throw new Error(`${child.name} did not finish: ${child.stderr().slice(-2000)}`);
  return JSON.parse(done) as HostileOutcome;
}

/** LoggedAdmission — an admission, the lease it spent from, and what admitted it (drive.ts's AdmissionSource). */
export interface LoggedAdmission extends Admission {
  readonly leaseId: string;
  readonly source: AdmissionSource;
}

/**
 * readAdmissionLog — admissions written by an agent process ("<µs> <cost>
 * <lease id>[ fallback| shadow]" lines). Fallback and shadow admissions are
 * outside the envelope: check `leaseAdmissions` of it.
 */
export function readAdmissionLog(path: string): LoggedAdmission[] {
  if (!existsSync(path)) return [];
  const admissions: LoggedAdmission[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    const [t, cost, leaseId, source] = line.split(' ');
    admissions.push({
      tUs: Number(t),
      cost: Number(cost),
      leaseId: leaseId ?? '-',
      source: source === 'fallback' || source === 'shadow' ? source : 'lease',
    });
  }
  return admissions;
}

/** leaseAdmissions — the admissions spent from leases: what the envelope covers (fallback and shadow ones left out). */
export function leaseAdmissions<A extends LoggedAdmission>(admissions: readonly A[]): A[] {
  return admissions.filter((a) => a.source === 'lease');
}

/** readDenialLog — denials written by an agent process with `denialLogPath` ("<µs> <cost>" lines). */
export function readDenialLog(path: string): Admission[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [t, cost] = line.split(' ');
      return { tUs: Number(t), cost: Number(cost) };
    });
}

/** ProbeOptions — how a StatusProbe logs in (over the NATS_* environment) and the identity it asks under. */
export interface ProbeOptions {
  readonly nats?: NatsSettings;
  /** The identity token of its status subjects (an operator's); default ANONYMOUS_IDENTITY. */
  readonly identity?: string;
}

/** StatusProbe — asks the coordinator for a pool's status over NATS: what an operator's tool does. */
export class StatusProbe {
  private constructor(
    private readonly bus: Bus,
    private readonly identity: string,
  ) {}

  /** connect — a probe on `natsUrl`, logged in by `options.nats` or else the NATS_* environment. */
  static async connect(natsUrl: string, options: ProbeOptions = {}): Promise<StatusProbe> {
    const given = { settings: { ...options.nats, url: natsUrl }, names: NATS_ENV };
    const resolved = resolveNatsOptions([given, natsEnvLayer(process.env)]);
    return new StatusProbe(await connectNats(resolved, { name: 'tokenlease-test-probe' }), options.identity ?? ANONYMOUS_IDENTITY);
  }

  /** status — the pool's status op, answered within `timeoutMs` (default 2 s) or rejected. */
  async status(pool: string, prefix: string = DEFAULT_SUBJECT_PREFIX, agentId?: string, timeoutMs = 2000): Promise<PoolStatus> {
    const query =
      agentId === undefined ? { v: 2 as const, op: 'status' as const, pool } : { v: 2 as const, op: 'status' as const, pool, agentId };
    const bytes = await this.bus.request(subjectFor(prefix, 'status', pool, this.identity), encodeMessage(query), timeoutMs);
    const decoded = decodeReply(bytes);
    if (!decoded.ok || decoded.value.kind !== 'status') throw new Error(`unexpected status reply: ${new TextDecoder().decode(bytes)}`);
    return decoded.value;
  }

  /** raw — sends arbitrary bytes on a subject and decodes the reply. */
  async raw(subject: string, payload: Uint8Array): Promise<Decoded<Reply>> {
    return decodeReply(await this.bus.request(subject, payload, 2000));
  }

  close(): Promise<void> {
    return this.bus.close();
  }
}
