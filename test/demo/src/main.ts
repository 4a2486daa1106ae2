/**
 * npm start — a demo fleet: one coordinator and three agent processes with
 * different demand sharing one pool over NATS. Every second it prints what
 * each agent admitted and was denied, the fleet's total against the
 * B + r·T envelope, leases and round-trips. Ctrl-C (or --duration) stops it,
 * then every window of the logged admissions is checked against the envelope.
 * The coordinator serves its status page, metrics and health checks on
 * http://127.0.0.1:9464 (another free port when that one is taken, or
 * --http host:port); the demo prints the address.
 *
 *   npm start [-- --duration <seconds>] [-- --nats <url>] [-- --http <host:port>] [-- <any NATS flag of the coordinator CLI>]
 *
 * NATS logins and TLS come from the environment (NATS_URL, NATS_USER,
 * NATS_PASSWORD, NATS_TOKEN, NATS_NKEY, NATS_CREDS, NATS_CA, NATS_CERT,
 * NATS_KEY, …) or the same flags as the coordinator CLI's; the coordinator,
 * the agents and the status probe all use them. URLs are printed redacted.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeRate, redactUrlList, TokenleaseError } from '@tokenlease/shared';
import { NATS_FLAG_OPTIONS } from '@tokenlease/shared/nats';
import { checkEnvelope, seededRandom } from '@tokenlease/shared/testing';
import { readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { freePort, isListening } from '@tokenlease/harness/ports';
import { stop, stopAll, type Child } from '@tokenlease/harness/processes';
import type { Traffic } from '@tokenlease/harness/traffic';
import { findNats } from './find-nats.js';
import { natsFlagsIntoEnv } from './nats-env.js';
import { renderTable, type AgentRow } from './render.js';

/** DEMO_HTTP_PORT — where the demo coordinator serves its status page when the port is free. */
const DEMO_HTTP_PORT = 9464;
const POOL = { name: 'api', capacity: 100, refillPerSecond: 200, leaseTtlMs: 2000, maxLeaseTokens: 20 };
const AGENTS: ReadonlyArray<{ name: string; traffic: Traffic; about: string }> = [
  { name: 'checkout', traffic: { kind: 'steady', perSecond: 120 }, about: 'steady 120 req/s' },
  {
    name: 'search',
    traffic: { kind: 'bursty', perSecond: 400, onMs: 500, offMs: 1500 },
    about: 'bursts of 400 req/s, 0.5 s on / 1.5 s off',
  },
  {
    name: 'reports',
    traffic: { kind: 'random', perSecondMax: 200, changeEveryMs: 1000, costMin: 1, costMax: 5 },
    about: '0–200 req/s, cost 1–5',
  },
];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { duration: { type: 'string' }, seed: { type: 'string' }, http: { type: 'string' }, ...NATS_FLAG_OPTIONS },
  });
  const durationS = values.duration === undefined ? Infinity : Number(values.duration);
  if (!(durationS > 0)) throw new Error(`--duration must be a positive number of seconds, got ${values.duration}`);
  const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
  try {
    natsFlagsIntoEnv(values, process.env);
  } catch (error) {
    if (error instanceof TokenleaseError) throw new Error(error.message, { cause: error });
    throw error;
  }
  const nats = await findNats();
  console.log(`NATS: ${redactUrlList(nats.url)} (${nats.source})`);

  const dir = scratchDir();
  const prefix = `tokenlease-demo-${process.pid}`;
  const configPath = writeConfig(dir, {
    subjectPrefix: prefix,
    pools: {
      [POOL.name]: {
        capacity: POOL.capacity,
        refill: `${POOL.refillPerSecond}/s`,
        leaseTtlMs: POOL.leaseTtlMs,
        maxLeaseTokens: POOL.maxLeaseTokens,
      },
    },
  });
  const http = values.http ?? `127.0.0.1:${(await isListening('127.0.0.1', DEMO_HTTP_PORT)) ? await freePort() : DEMO_HTTP_PORT}`;
  const coordinator = await startCoordinator(nats.url, configPath, { http });
  console.log(`status page: http://${http}/  (metrics: /metrics, health: /healthz, /readyz)`);
  const startedMs = performance.now();
  const random = seededRandom(seed);
  const rows = new Map<string, AgentRow>();
  const children: Child[] = [];
  for (const a of AGENTS) {
    const child = await startAgentProcess({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: POOL.name,
      name: a.name,
      seed: random.int(0, 2 ** 31),
      durationMs: 7 * 86_400_000,
      traffic: a.traffic,
      logPath: join(dir, `${a.name}.log`),
      statsEveryMs: 1000,
    });
    child.onLine((line) => {
      if (!line.startsWith('{"type":"stats"')) return;
      const stats = JSON.parse(line) as AgentRow['stats'];
      const row = rows.get(a.name);
      rows.set(a.name, { name: a.name, about: a.about, previous: row?.stats ?? null, stats });
    });
    children.push(child);
  }
  console.log(
    `pool "${POOL.name}": capacity ${POOL.capacity}, refill ${POOL.refillPerSecond}/s, lease TTL ${POOL.leaseTtlMs} ms, at most ${POOL.maxLeaseTokens} tokens a lease`,
  );
  console.log(`the coordinator grants nothing for its quiet period (one TTL) after it starts; Ctrl-C stops the demo\n`);

  const probe = await StatusProbe.connect(nats.url);
  let stopping = false;
  process.once('SIGINT', () => {
    stopping = true;
  });
  process.once('SIGTERM', () => {
    stopping = true;
  });
  while (!stopping && (performance.now() - startedMs) / 1000 < durationS) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (coordinator.proc.exitCode !== null) throw new Error(`the coordinator exited: ${coordinator.stderr()}`);
    const status = await probe.status(POOL.name, prefix).catch(() => null);
    console.log(renderTable((performance.now() - startedMs) / 1000, POOL, [...rows.values()], status));
  }

  console.log('\nstopping: agents return their leases...');
  await Promise.all(children.map((child) => stop(child)));
  const admissions = AGENTS.flatMap((a) => readAdmissionLog(join(dir, `${a.name}.log`)));
  const report = checkEnvelope(admissions, POOL.capacity, makeRate(POOL.refillPerSecond, 1000));
  const worst = report.worstWindow;
  console.log(
    `envelope check over every window of ${report.admissions} admissions (${report.admittedTokens} tokens): ${report.ok ? 'held' : 'VIOLATED'}` +
      (worst === null
        ? ''
        : `; tightest window ${((worst.toUs - worst.fromUs) / 1000).toFixed(1)} ms with ${worst.admittedTokens} tokens, ${(-report.worstExcessTokens).toFixed(2)} below B + r·T`),
  );
  await probe.close();
  await stopAll();
  await nats.stop();
  process.exitCode = report.ok ? 0 : 1;
}

main().catch(async (error: unknown) => {
  console.error(`demo: ${error instanceof Error ? error.message : String(error)}`);
  await stopAll();
  process.exit(1);
});
