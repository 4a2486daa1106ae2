/**
 * A child process running one agent that offers traffic to one pool.
 *
 *   NATS_URL=nats://… node agent-process.js '<json AgentProcessConfig without natsUrl>'
 *
 * It connects as Agent.connect does by default: NATS_URL and the other
 * NATS_* variables of its environment (logins, TLS, inbox prefix).
 *
 * stdout, one JSON object a line: {"type":"ready"}, then {"type":"stats",...}
 * every `statsEveryMs`, {"type":"event",...} for each NATS disconnect,
 * reconnect or failed request, then {"type":"done",...}. With `logPath`,
 * each admission is appended as "<host monotonic µs> <cost> <lease id>\n"
 * (flushed every 20 ms). SIGTERM ends the traffic, returns the lease and
 * exits 0.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { Agent, type KeeperOptions } from '@tokenlease/agent';
import { hostMonoNowUs } from '@tokenlease/shared';
import { driveTraffic } from './drive.js';
import { seededRandom } from './random.js';
import type { Traffic } from './traffic.js';

export interface AgentProcessConfig {
  /** Handed to the child as NATS_URL (startAgentProcess), with the other NATS_* settings of its environment. */
  readonly natsUrl: string;
  /** The identity token it sends under; its agent id is then `<identity>.<name>-<pid>`. */
  readonly identity?: string;
  readonly subjectPrefix?: string;
  readonly pool: string;
  readonly name: string;
  readonly seed: number;
  readonly durationMs: number;
  readonly traffic: Traffic;
  readonly logPath?: string;
  readonly statsEveryMs?: number;
  /** Lease keeper options (e.g. refreshMs, reportMs). */
  readonly keeper?: Partial<KeeperOptions>;
}

function print(obj: object): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as Omit<AgentProcessConfig, 'natsUrl'>;
  const agent = await Agent.connect({
    clock: hostMonoNowUs,
    agentId: `${config.identity === undefined ? '' : `${config.identity}.`}${config.name}-${process.pid}`,
    ...(config.identity === undefined ? {} : { identity: config.identity }),
    onEvent: (event) => print({ type: 'event', name: config.name, event: event.type, ...('code' in event ? { code: event.code } : {}) }),
    ...(config.subjectPrefix === undefined ? {} : { subjectPrefix: config.subjectPrefix }),
    ...(config.keeper === undefined ? {} : { keeper: config.keeper }),
  });
  const limiter = agent.limiter(config.pool);
  const fd = config.logPath === undefined ? null : openSync(config.logPath, 'a');
  let pending = '';
  const flush = (): void => {
    if (fd !== null && pending !== '') writeSync(fd, pending);
    pending = '';
  };
  const flushTimer = setInterval(flush, 20);
  const statsTimer = setInterval(() => print({ type: 'stats', name: config.name, ...limiter.stats() }), config.statsEveryMs ?? 1000);
  let stopping = false;
  process.once('SIGTERM', () => {
    stopping = true;
  });
  print({ type: 'ready', name: config.name, pid: process.pid, agentId: agent.agentId });
  const result = await driveTraffic({
    limiter,
    traffic: config.traffic,
    random: seededRandom(config.seed),
    clock: hostMonoNowUs,
    durationMs: config.durationMs,
    stopped: () => stopping,
    onAdmit: (tUs, cost) => {
      pending += `${tUs} ${cost} ${limiter.leaseId ?? '-'}\n`;
    },
  });
  clearInterval(flushTimer);
  clearInterval(statsTimer);
  flush();
  if (fd !== null) closeSync(fd);
  await agent.close();
  print({ type: 'done', name: config.name, ...result, ...limiter.stats() });
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`agent-process: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
