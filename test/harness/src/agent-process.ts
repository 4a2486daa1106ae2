/**
 * A child process running one agent that offers traffic to one pool.
 *
 *   NATS_URL=nats://… node agent-process.js '<json AgentProcessConfig without natsUrl>'
 *
 * It connects as Agent.connect does by default: NATS_URL and the other
 * NATS_* variables of its environment (logins, TLS, inbox prefix).
 *
 * stdout, one JSON object a line: {"type":"ready"}, then {"type":"stats","tUs":<its
 * clock>,...} every `statsEveryMs`, {"type":"event",...} for each NATS disconnect,
 * reconnect or failed request, then {"type":"done",...}. With `logPath`,
 * each admission is appended as "<host monotonic µs> <cost> <lease id>\n",
 * with " fallback" or " shadow" after the lease id when the fallback bucket
 * or shadow mode admitted it (outside the envelope); with `denialLogPath`,
 * each denial as "<host monotonic µs> <cost>\n" (both flushed every 20 ms).
 * With `shadow`, the limiter is forced into shadow mode (Limiter.forceShadow). SIGTERM ends the traffic, returns the lease and
 * exits 0. With `metricsPort`, the agent's metrics (AgentMetrics, in a
 * registry of this process, as a service would) are served on
 * http://127.0.0.1:<port>/metrics, and the 'ready' line says so.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { createServer } from 'node:http';
import { Agent, AgentMetrics, type KeeperOptions } from '@tokenlease/agent';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { Registry } from 'prom-client';
import { driveTraffic } from './drive.js';
import { seededRandom } from '@tokenlease/shared/testing';
import type { Traffic } from './traffic.js';

export interface AgentProcessConfig {
  /** Handed to the child as NATS_URL (startAgentProcess), with the other NATS_* settings of its environment. */
  readonly natsUrl: string;
  /** The identity token it sends under; its agent id is then `<identity>.<name>-<pid>`. */
  readonly identity?: string;
  readonly subjectPrefix?: string;
  /** Prefixes to move to, in order, when nobody answers on `subjectPrefix` (relays, the root). */
  readonly failoverPrefixes?: readonly string[];
  readonly pool: string;
  readonly name: string;
  /** Its agent id, when not the default `[<identity>.]<name>-<pid>`: one a test can give an attacker before the agent starts. */
  readonly agentId?: string;
  readonly seed: number;
  readonly durationMs: number;
  readonly traffic: Traffic;
  readonly logPath?: string;
  /** Append each denial here ("<µs> <cost>" lines). */
  readonly denialLogPath?: string;
  /** Force shadow mode for the pool in this agent, whatever the coordinator says. */
  readonly shadow?: boolean;
  readonly statsEveryMs?: number;
  /** The coordinators' grant-signing public keys (PEM) the agent accepts grants from (AgentOptions.grantPublicKeys). */
  readonly grantPublicKeys?: readonly string[];
  /** Lease keeper options (e.g. refreshMs, reportMs). */
  readonly keeper?: Partial<KeeperOptions>;
  /** Serve the agent's metrics on this port (0: one the system picks)… */
  readonly metricsPort?: number;
  /** …of this address (default 127.0.0.1; the compose stack's agents serve 0.0.0.0). */
  readonly metricsHost?: string;
}

function print(obj: object): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as Omit<AgentProcessConfig, 'natsUrl'>;
  const agent = await Agent.connect({
    clock: hostMonoNowUs,
    agentId: config.agentId ?? `${config.identity === undefined ? '' : `${config.identity}.`}${config.name}-${process.pid}`,
    ...(config.identity === undefined ? {} : { identity: config.identity }),
    onEvent: (event) => print({ type: 'event', name: config.name, event: event.type, ...('code' in event ? { code: event.code } : {}) }),
    ...(config.subjectPrefix === undefined ? {} : { subjectPrefix: config.subjectPrefix }),
    ...(config.failoverPrefixes === undefined ? {} : { failoverPrefixes: config.failoverPrefixes }),
    ...(config.keeper === undefined ? {} : { keeper: config.keeper }),
    ...(config.grantPublicKeys === undefined ? {} : { grantPublicKeys: config.grantPublicKeys }),
  });
  const limiter = agent.limiter(config.pool, config.shadow === undefined ? undefined : { shadow: config.shadow });
  const metricsUrl =
    config.metricsPort === undefined ? null : await serveMetrics(config.metricsHost ?? '127.0.0.1', config.metricsPort, limiter);
  const fd = config.logPath === undefined ? null : openSync(config.logPath, 'a');
  const denialFd = config.denialLogPath === undefined ? null : openSync(config.denialLogPath, 'a');
  let pending = '';
  let pendingDenials = '';
  const flush = (): void => {
    if (fd !== null && pending !== '') writeSync(fd, pending);
    if (denialFd !== null && pendingDenials !== '') writeSync(denialFd, pendingDenials);
    pending = '';
    pendingDenials = '';
  };
  const flushTimer = setInterval(flush, 20);
  const statsTimer = setInterval(
    () => print({ type: 'stats', name: config.name, tUs: hostMonoNowUs(), ...limiter.stats() }),
    config.statsEveryMs ?? 1000,
  );
  let stopping = false;
  process.once('SIGTERM', () => {
    stopping = true;
  });
  print({ type: 'ready', name: config.name, pid: process.pid, agentId: agent.agentId, metricsUrl });
  const result = await driveTraffic({
    limiter,
    traffic: config.traffic,
    random: seededRandom(config.seed),
    clock: hostMonoNowUs,
    durationMs: config.durationMs,
    stopped: () => stopping,
    onAdmit: (tUs, cost, source) => {
      pending += `${tUs} ${cost} ${limiter.leaseId ?? '-'}${source === 'lease' ? '' : ` ${source}`}\n`;
    },
    ...(denialFd === null
      ? {}
      : {
          onDeny: (tUs: number, cost: number) => {
            pendingDenials += `${tUs} ${cost}\n`;
          },
        }),
  });
  clearInterval(flushTimer);
  clearInterval(statsTimer);
  flush();
  if (fd !== null) closeSync(fd);
  if (denialFd !== null) closeSync(denialFd);
  await agent.close();
  print({ type: 'done', name: config.name, ...result, ...limiter.stats() });
  process.exit(0);
}

/** serveMetrics — the agent's metrics on http://<host>:<port>/metrics; resolves with that URL. */
async function serveMetrics(host: string, port: number, limiter: ReturnType<Agent['limiter']>): Promise<string> {
  const registry = new Registry();
  new AgentMetrics(registry).track(limiter);
  const server = createServer((req, res) => {
    void registry.metrics().then((body) => {
      res.writeHead(req.url === '/metrics' ? 200 : 404, { 'Content-Type': registry.contentType });
      res.end(req.url === '/metrics' ? body : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  server.unref();
  const address = server.address();
  return `http://${host}:${typeof address === 'object' && address !== null ? address.port : port}/metrics`;
}

main().catch((error: unknown) => {
  process.stderr.write(`agent-process: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
