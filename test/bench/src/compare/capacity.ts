/**
 * The coordinator's capacity over NATS, for `npm run bench:compare`:
 * grants per second and grant latency of a coordinator process with 10,
 * 100, 1,000 and 10,000 live agents on a pool (simulated agents renewing
 * their own leases, simulated-agents.ts, over one connection), against the
 * request/reply rate of a trivial responder (echo-responder.ts) measured
 * the same way in the same run: CONCURRENCY requests in flight, each
 * agent's requests one after another.
 *
 * The coordinator starts first (startCapacity), so its quiet period, one
 * lease TTL, passes while the rest of the run is measured.
 */
import { fileURLToPath } from 'node:url';
import { decodeReply, subjectFor } from '@tokenlease/shared';
import { connectNats, resolveNatsOptions, NATS_ENV, type Bus } from '@tokenlease/shared/nats';
import { seededRandom } from '@tokenlease/shared/testing';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import { spawnNode, stop, type Child } from '@tokenlease/harness/processes';
import { SimulatedAgents } from '../simulated-agents.js';
import { LatencyHistogram } from './latency.js';
import { formatNumber, ratio, round } from './report.js';

/** AGENT_COUNTS — the numbers of live agents measured. */
export const AGENT_COUNTS = [10, 100, 1000, 10_000] as const;
const CONCURRENCY = 64;
/** MEASURE_MS_DEFAULT — how long each row is measured unless told, ms. */
export const MEASURE_MS_DEFAULT = 1500;
const TTL_MS = 10_000;
const REQUEST_TIMEOUT_MS = 2000;
const ECHO_SCRIPT = fileURLToPath(new URL('./echo-responder.js', import.meta.url));

/** CapacityRow — requests answered per second and their latency, by the echo responder or the coordinator at `agents` live agents. */
export interface CapacityRow {
  readonly table: 'capacity';
  readonly system: 'nats-echo' | 'coordinator';
  readonly agents: number | null;
  readonly repliesPerSecond: number;
  readonly latencyP50Us: number;
  readonly latencyP99Us: number;
  /** Requests that failed or were not granted. */
  readonly errors: number;
  readonly ratioToEcho: number | null;
}

/** Capacity — the coordinator started early, waiting for its quiet period to pass. */
export interface Capacity {
  readonly natsUrl: string;
  readonly prefix: string;
  readonly coordinator: Child;
  readonly grantsFromMs: number;
}

const poolName = (n: number): string => `cap${n}`;

/** startCapacity — the capacity coordinator, one pool per agent count, started now. */
export async function startCapacity(natsUrl: string): Promise<Capacity> {
  const prefix = `tlcomparecap${process.pid}`;
  const pool = { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: TTL_MS, maxLeaseTokens: 1000, minGrantTokens: 1 };
  const pools = Object.fromEntries(AGENT_COUNTS.map((n) => [poolName(n), pool]));
  const coordinator = await startCoordinator(natsUrl, writeConfig(scratchDir(), { subjectPrefix: prefix, pools }));
  return { natsUrl, prefix, coordinator, grantsFromMs: performance.now() + TTL_MS + 500 };
}

/**
 * drive — CONCURRENCY workers, worker w sending for agents w, w + C, …
 * in turn, until `untilMs` (performance.now()) or, with `once`, one pass.
 */
async function drive(
  n: number,
  send: (i: number) => Promise<boolean>,
  untilMs: number,
  once: boolean,
): Promise<Omit<CapacityRow, 'table' | 'system' | 'agents' | 'ratioToEcho'>> {
  const latency = new LatencyHistogram();
  let errors = 0;
  const startMs = performance.now();
  const worker = async (w: number): Promise<void> => {
    for (let i = w; performance.now() < untilMs; i += CONCURRENCY) {
      if (i >= n && once) return;
      const t0 = process.hrtime.bigint();
      const ok = await send(i % n);
      latency.record(Number(process.hrtime.bigint() - t0));
      if (!ok) errors += 1;
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, CONCURRENCY) }, (_, w) => worker(w)));
  const seconds = (performance.now() - startMs) / 1000;
  return {
    repliesPerSecond: round(latency.count / seconds),
    latencyP50Us: round(latency.quantileNs(0.5) / 1000),
    latencyP99Us: round(latency.quantileNs(0.99) / 1000),
    errors,
  };
}

async function coordinatorRow(bus: Bus, capacity: Capacity, n: number, measureMs: number): Promise<CapacityRow> {
  const agents = new SimulatedAgents(n, seededRandom(2026 + n), poolName(n), 100);
  const subject = subjectFor(capacity.prefix, 'acquire', poolName(n));
  const send = async (i: number): Promise<boolean> => {
    try {
      const decoded = decodeReply(await bus.request(subject, agents.request(i), REQUEST_TIMEOUT_MS));
      agents.settle(i, decoded.ok ? decoded.value : undefined, `capacity at ${n} agents`);
      return true;
    } catch {
      return false;
    }
  };
  await drive(n, send, performance.now() + TTL_MS / 2, true);
  if (agents.opened !== n) throw new Error(`capacity: ${agents.opened} of ${n} agents got a lease`);
  return {
    table: 'capacity',
    system: 'coordinator',
    agents: n,
    ...(await drive(n, send, performance.now() + measureMs, false)),
    ratioToEcho: null,
  };
}

async function echoRow(bus: Bus, natsUrl: string, prefix: string, measureMs: number): Promise<CapacityRow> {
  const subject = `${prefix}.echo`;
  const echo = spawnNode('echo-responder', ECHO_SCRIPT, [subject], { [NATS_ENV.url]: natsUrl });
  try {
    await waitForEvent(echo, { type: 'ready' }, 15_000);
    const payload = new SimulatedAgents(1, seededRandom(1), poolName(10), 100).request(0);
    const send = (): Promise<boolean> =>
      bus.request(subject, payload, REQUEST_TIMEOUT_MS).then(
        () => true,
        () => false,
      );
    return {
      table: 'capacity',
      system: 'nats-echo',
      agents: null,
      ...(await drive(CONCURRENCY, send, performance.now() + measureMs, false)),
      ratioToEcho: 1,
    };
  } finally {
    await stop(echo);
  }
}

/** capacityRows — the echo responder's row, then the coordinator's at each agent count, each measured `measureMs`; stops the coordinator. */
export async function capacityRows(capacity: Capacity, measureMs = MEASURE_MS_DEFAULT): Promise<CapacityRow[]> {
  const bus = await connectNats(resolveNatsOptions([{ settings: { url: capacity.natsUrl }, names: NATS_ENV }]), {
    name: 'tokenlease-bench-capacity',
  });
  try {
    const echo = await echoRow(bus, capacity.natsUrl, capacity.prefix, measureMs);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, capacity.grantsFromMs - performance.now())));
    const rows = [echo];
    for (const n of AGENT_COUNTS) rows.push(await coordinatorRow(bus, capacity, n, measureMs));
    return rows.map((r) => ({ ...r, ratioToEcho: ratio(r.repliesPerSecond, echo.repliesPerSecond) }));
  } finally {
    await bus.close();
    await stop(capacity.coordinator);
  }
}

/** capacityTable — the rows as a Markdown table. */
export function capacityTable(rows: readonly CapacityRow[]): string[] {
  return [
    `| over NATS, ${CONCURRENCY} requests in flight (at most one per agent) | live agents | replies/s | / echo | p50 µs | p99 µs | errors |`,
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.system === 'nats-echo' ? 'trivial responder (echo)' : 'coordinator grants'} | ${r.agents === null ? '–' : formatNumber(r.agents)} | ${formatNumber(r.repliesPerSecond)} | ×${formatNumber(r.ratioToEcho)} | ${formatNumber(r.latencyP50Us)} | ${formatNumber(r.latencyP99Us)} | ${r.errors} |`,
    ),
  ];
}
