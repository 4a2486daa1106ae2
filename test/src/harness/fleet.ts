/**
 * Fleet helpers: a coordinator process from a pool configuration, child
 * agent processes, status queries and admission logs.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  connectBus,
  decodeReply,
  encodeMessage,
  subjectFor,
  DEFAULT_SUBJECT_PREFIX,
  type Bus,
  type PoolStatus,
  type Decoded,
  type Reply,
} from '@tokenlease/shared';
import type { Admission } from '@tokenlease/shared/testing';
import type { AgentProcessConfig } from './agent-process.js';
import { agentProcessScript, coordinatorCliScript } from './paths.js';
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

/** DurableOptions — run the coordinator on Redis (durable mode) instead of in memory. */
export interface DurableOptions {
  readonly redisUrl: string;
  /** Its name among its peers (default: chosen by the CLI). */
  readonly member?: string;
  readonly ownershipTtlMs?: number;
  /** Key prefix (default the configuration's subject prefix). */
  readonly redisPrefix?: string;
  /** Log level (default info; debug logs every grant with its host time). */
  readonly logLevel?: string;
}

/**
 * startCoordinator — the CLI in a child process (info logs, captured);
 * resolves once it serves. In memory mode unless `durable` is given, even
 * when REDIS_URL is set in the environment.
 */
export async function startCoordinator(natsUrl: string, configPath: string, durable?: DurableOptions): Promise<Child> {
  const args = ['--config', configPath, '--nats', natsUrl, '--log-level', durable?.logLevel ?? 'info'];
  if (durable === undefined) args.push('--memory');
  else {
    args.push('--redis', durable.redisUrl);
    if (durable.member !== undefined) args.push('--member', durable.member);
    if (durable.ownershipTtlMs !== undefined) args.push('--ownership-ttl-ms', String(durable.ownershipTtlMs));
    if (durable.redisPrefix !== undefined) args.push('--redis-prefix', durable.redisPrefix);
  }
  const child = spawnNode(durable?.member === undefined ? 'coordinator' : `coordinator:${durable.member}`, coordinatorCliScript(), args);
  await child.waitForLine((line) => line.includes('coordinator serving') || line.includes('durable coordinator started'), 15_000);
  void child.exited.then(({ code, signal }) => {
    const stopped = child.lines.some((line) => line.includes('"coordinator stopped"') || line.includes('"durable coordinator stopped"'));
    if (!stopped) console.error(`coordinator ${child.pid} exited unexpectedly (code ${code}, signal ${signal}): ${child.stderr().slice(-4000)}`);
  });
  return child;
}

/** startAgentProcess — an agent in a child process; resolves once it is connected. */
export async function startAgentProcess(config: AgentProcessConfig): Promise<Child> {
  const child = spawnNode(`agent:${config.name}`, agentProcessScript(), [JSON.stringify(config)]);
  await child.waitForLine((line) => line.includes('"type":"ready"'), 15_000);
  return child;
}

/** LoggedAdmission — an admission and the lease it spent from. */
export interface LoggedAdmission extends Admission {
  readonly leaseId: string;
}

/** readAdmissionLog — admissions written by an agent process ("<µs> <cost> <lease id>" lines). */
export function readAdmissionLog(path: string): LoggedAdmission[] {
  if (!existsSync(path)) return [];
  const admissions: LoggedAdmission[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    const [t, cost, leaseId] = line.split(' ');
    admissions.push({ tUs: Number(t), cost: Number(cost), leaseId: leaseId ?? '-' });
  }
  return admissions;
}

/** StatusProbe — asks the coordinator for a pool's status over NATS. */
export class StatusProbe {
  private constructor(private readonly bus: Bus) {}

  static async connect(natsUrl: string): Promise<StatusProbe> {
    return new StatusProbe(await connectBus(natsUrl, { name: 'tokenlease-test-probe' }));
  }

  async status(pool: string, prefix: string = DEFAULT_SUBJECT_PREFIX, agentId?: string): Promise<PoolStatus> {
    const query = agentId === undefined ? { v: 1 as const, op: 'status' as const, pool } : { v: 1 as const, op: 'status' as const, pool, agentId };
    const bytes = await this.bus.request(subjectFor(prefix, 'status', pool), encodeMessage(query), 2000);
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
