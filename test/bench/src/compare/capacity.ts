/**
 * The coordinator's capacity over NATS, for `npm run bench:compare`: its
 * replies per second and latency with 10, 100, 2,000 and 10,000 live
 * agents on a pool, side by side in the same run with two reference
 * responders (reference-responder.ts): a trivial one that answers every
 * request with a fixed grant, and one that decodes each request with the
 * protocol's codec and encodes its grant.
 *
 * One load client (this process) drives every row alike: CONCURRENCY
 * requests in flight, each simulated agent's requests one after another
 * (simulated-agents.ts: each request a well-formed renewal of the agent's
 * own lease), each reply decoded and checked. The reference responders
 * are driven by REFERENCE_AGENTS agents, as is the coordinator in the
 * headline row, the three in turn for ROUNDS rounds. So those rows differ
 * only in the responder, and `/ trivial` is the coordinator's rate as a
 * share of what the bus and the client allow on this machine.
 *
 * On two cores the client, nats-server and the responder share the CPUs,
 * so replies per second also carry the client's cost. Each row therefore
 * also charges each process its own CPU time per reply (/proc): the
 * responder's, nats-server's (a server private to the run) and the
 * client's.
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
import type { PrivateNats } from '@tokenlease/harness/nats';
import { procCpuSeconds } from '@tokenlease/harness/proc-state';
import { spawnNode, stop, type Child } from '@tokenlease/harness/processes';
import { SimulatedAgents } from '../simulated-agents.js';
import { LatencyHistogram } from './latency.js';
import { formatNumber, ratio, round } from './report.js';

/** AGENT_COUNTS — the numbers of live agents the coordinator is measured with. */
export const AGENT_COUNTS = [10, 100, 2000, 10_000] as const;
/** REFERENCE_AGENTS — the agents whose requests drive the reference responders (and the headline coordinator row). */
export const REFERENCE_AGENTS = 2000;
const CONCURRENCY = 256;
/** ROUNDS — rounds of the reference responders and the coordinator with REFERENCE_AGENTS agents, one after another. */
const ROUNDS = 3;
/** MEASURE_MS_DEFAULT — how long each row is measured unless told, ms. */
export const MEASURE_MS_DEFAULT = 3000;
/** Leases outlive a round of the other two contenders (2 × MEASURE_MS_DEFAULT) unrenewed. */
const TTL_MS = 20_000;
const REQUEST_TIMEOUT_MS = 2000;
const RESPONDER_SCRIPT = fileURLToPath(new URL('./reference-responder.js', import.meta.url));

/** CapacitySystem — who answers: the trivial responder, the JSON-parsing one, or the coordinator. */
export type CapacitySystem = 'trivial' | 'json-parse' | 'coordinator';

/** CapacityRow — requests answered per second, their latency, and each process's CPU per reply, of one responder at `agents` live agents. */
export interface CapacityRow {
  readonly table: 'capacity';
  readonly system: CapacitySystem;
  readonly agents: number;
  readonly repliesPerSecond: number;
  readonly latencyP50Us: number;
  readonly latencyP99Us: number;
  /** Requests that failed or were not answered as they should be (in every round, for a row of rounds). */
  readonly errors: number;
  /** CPU time per reply over the measurement, µs: the responder's process, nats-server's, the load client's (null: not readable). */
  readonly responderCpuUsPerReply: number | null;
  readonly natsCpuUsPerReply: number | null;
  readonly clientCpuUsPerReply: number;
  /** replies per second of each round measured (the row is the round of median replies per second). */
  readonly rounds: readonly number[];
  /** repliesPerSecond over the trivial responder's. */
  readonly ratioToTrivial: number | null;
}

/** Capacity — the coordinator started early, waiting for its quiet period to pass. */
export interface Capacity {
  readonly nats: PrivateNats;
  readonly prefix: string;
  readonly coordinator: Child;
  readonly grantsFromMs: number;
}

const poolName = (n: number): string => `cap${n}`;

/** startCapacity — the capacity coordinator, one pool per agent count, started now on `nats`. */
export async function startCapacity(nats: PrivateNats): Promise<Capacity> {
  const prefix = `tlcomparecap${process.pid}`;
  const pool = { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: TTL_MS, maxLeaseTokens: 1000, minGrantTokens: 1 };
  const pools = Object.fromEntries(AGENT_COUNTS.map((n) => [poolName(n), pool]));
  const coordinator = await startCoordinator(nats.url, writeConfig(scratchDir(), { subjectPrefix: prefix, pools }));
  return { nats, prefix, coordinator, grantsFromMs: performance.now() + TTL_MS + 500 };
}

type Driven = Pick<CapacityRow, 'repliesPerSecond' | 'latencyP50Us' | 'latencyP99Us' | 'errors'> & { readonly replies: number };

/**
 * drive — min(n, CONCURRENCY) = W workers; worker w owns agents w, w + W,
 * w + 2W, … below n and sends for them in turn (so no agent ever has two
 * requests in flight), until `untilMs` (performance.now()) or, with
 * `once`, one pass over its agents.
 */
async function drive(n: number, send: (i: number) => Promise<boolean>, untilMs: number, once: boolean): Promise<Driven> {
  const latency = new LatencyHistogram();
  let errors = 0;
  const startMs = performance.now();
  const workers = Math.min(n, CONCURRENCY);
  const worker = async (w: number): Promise<void> => {
    const owned = Math.ceil((n - w) / workers);
    for (let k = 0; performance.now() < untilMs; k += 1) {
      if (k >= owned && once) return;
      const t0 = process.hrtime.bigint();
      const ok = await send(w + (k % owned) * workers);
      latency.record(Number(process.hrtime.bigint() - t0));
      if (!ok) errors += 1;
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  const seconds = (performance.now() - startMs) / 1000;
  return {
    replies: latency.count,
    repliesPerSecond: round(latency.count / seconds),
    latencyP50Us: round(latency.quantileNs(0.5) / 1000),
    latencyP99Us: round(latency.quantileNs(0.99) / 1000),
    errors,
  };
}

/** measured — `drive` for `measureMs`, with the CPU time the responder (`pid`), nats-server and this client spent over it, per reply. */
async function measured(
  nats: PrivateNats,
  pid: number | undefined,
  n: number,
  send: (i: number) => Promise<boolean>,
  measureMs: number,
): Promise<Omit<CapacityRow, 'table' | 'system' | 'agents' | 'rounds' | 'ratioToTrivial'>> {
  const cpu = (p: number | null | undefined): number | null => (typeof p === 'number' ? procCpuSeconds(p) : null);
  const natsPid = nats.pid();
  const [responder0, nats0, client0] = [cpu(pid), cpu(natsPid), process.cpuUsage()];
  const { replies, ...figures } = await drive(n, send, performance.now() + measureMs, false);
  const [responder1, nats1, client1] = [cpu(pid), cpu(natsPid), process.cpuUsage(client0)];
  const perReplyUs = (before: number | null, after: number | null): number | null =>
    before === null || after === null || replies === 0 ? null : round(((after - before) * 1e6) / replies);
  return {
    ...figures,
    responderCpuUsPerReply: perReplyUs(responder0, responder1),
    natsCpuUsPerReply: perReplyUs(nats0, nats1),
    clientCpuUsPerReply: round((client1.user + client1.system) / Math.max(1, replies)),
  };
}

/** sender — one request of agent `i` over `bus`, its reply decoded and `check`ed; false when it failed or was not the grant it should be. */
function sender(bus: Bus, subject: string, check: (i: number, reply: ReturnType<typeof decodeReply>) => void, agents: SimulatedAgents) {
  return async (i: number): Promise<boolean> => {
    try {
      check(i, decodeReply(await bus.request(subject, agents.request(i, Math.floor(performance.now())), REQUEST_TIMEOUT_MS)));
      return true;
    } catch {
      return false;
    }
  };
}

/** Contender — one responder as the load client drives it: who answers, for how many agents, its process, and one request of agent i. */
interface Contender {
  readonly system: CapacitySystem;
  readonly agents: number;
  readonly pid: number | undefined;
  readonly send: (i: number) => Promise<boolean>;
}

/** coordinatorContender — `n` agents of the coordinator's pool for n, each holding a lease. */
async function coordinatorContender(bus: Bus, capacity: Capacity, n: number): Promise<Contender> {
  const agents = new SimulatedAgents(n, seededRandom(2026 + n), poolName(n), 100);
  const subject = subjectFor(capacity.prefix, 'acquire', poolName(n));
  const send = sender(bus, subject, (i, d) => agents.settle(i, d.ok ? d.value : undefined, `capacity at ${n} agents`), agents);
  await drive(n, send, performance.now() + TTL_MS / 2, true);
  if (agents.opened !== n) throw new Error(`capacity: ${agents.opened} of ${n} agents got a lease`);
  return { system: 'coordinator', agents: n, pid: capacity.coordinator.pid, send };
}

/** referenceContender — a reference responder (`mode` of reference-responder.ts) in its own process, for REFERENCE_AGENTS agents. */
async function referenceContender(bus: Bus, capacity: Capacity, mode: 'fixed' | 'parse'): Promise<Contender & { readonly child: Child }> {
  const subject = `${capacity.prefix}.${mode}`;
  const child = spawnNode(`responder-${mode}`, RESPONDER_SCRIPT, [subject, mode], { [NATS_ENV.url]: capacity.nats.url });
  await waitForEvent(child, { type: 'ready' }, 15_000);
  const n = REFERENCE_AGENTS;
  const agents = new SimulatedAgents(n, seededRandom(2026 + n), poolName(n), 100);
  // The fixed grant names no request: it is checked to be a grant. The parsing responder's grant is its request's, settled as the coordinator's.
  const check =
    mode === 'fixed'
      ? (_i: number, d: ReturnType<typeof decodeReply>): void => {
          if (!d.ok || d.value.kind !== 'grant') throw new Error('the trivial responder answered no grant');
        }
      : (i: number, d: ReturnType<typeof decodeReply>): void => agents.settle(i, d.ok ? d.value : undefined, 'json-parsing responder');
  return {
    system: mode === 'fixed' ? 'trivial' : 'json-parse',
    agents: n,
    pid: child.pid,
    send: sender(bus, subject, check, agents),
    child,
  };
}

/** row — `contender` measured for `measureMs`. */
async function row(capacity: Capacity, contender: Contender, measureMs: number): Promise<CapacityRow> {
  const figures = await measured(capacity.nats, contender.pid, contender.agents, contender.send, measureMs);
  return {
    table: 'capacity',
    system: contender.system,
    agents: contender.agents,
    ...figures,
    rounds: [figures.repliesPerSecond],
    ratioToTrivial: null,
  };
}

/** medianRound — the round of median replies per second, carrying every round's figure and the errors of all of them. */
function medianRound(rounds: readonly CapacityRow[]): CapacityRow {
  const sorted = [...rounds].sort((a, b) => a.repliesPerSecond - b.repliesPerSecond);
  const median = sorted[Math.floor(sorted.length / 2)];
  if (median === undefined) throw new Error('capacity: no round measured');
  return { ...median, errors: rounds.reduce((sum, r) => sum + r.errors, 0), rounds: rounds.map((r) => r.repliesPerSecond) };
}

/**
 * capacityRows — ROUNDS rounds of the trivial responder, the JSON-parsing
 * one and the coordinator with REFERENCE_AGENTS agents, one after another
 * (each row the round of median replies per second, so that a change of
 * the machine's load during the run weighs on all three alike); then the
 * coordinator at each other agent count, once. Each measured `measureMs`;
 * stops the coordinator.
 */
export async function capacityRows(capacity: Capacity, measureMs = MEASURE_MS_DEFAULT): Promise<CapacityRow[]> {
  const bus = await connectNats(resolveNatsOptions([{ settings: { url: capacity.nats.url }, names: NATS_ENV }]), {
    name: 'tokenlease-bench-capacity',
  });
  const references: Array<Contender & { readonly child: Child }> = [];
  try {
    references.push(await referenceContender(bus, capacity, 'fixed'), await referenceContender(bus, capacity, 'parse'));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, capacity.grantsFromMs - performance.now())));
    const contenders = [...references, await coordinatorContender(bus, capacity, REFERENCE_AGENTS)];
    const rounds: CapacityRow[][] = contenders.map(() => []);
    for (let r = 0; r < ROUNDS; r += 1) for (const [k, c] of contenders.entries()) rounds[k]?.push(await row(capacity, c, measureMs));
    const rows = rounds.map(medianRound);
    for (const n of AGENT_COUNTS)
      if (n !== REFERENCE_AGENTS) rows.push(await row(capacity, await coordinatorContender(bus, capacity, n), measureMs));
    const trivial = rows[0]?.repliesPerSecond ?? 0;
    const ordered = [...rows.slice(0, 2), ...rows.slice(2).sort((a, b) => a.agents - b.agents)];
    return ordered.map((r) => ({ ...r, ratioToTrivial: ratio(r.repliesPerSecond, trivial) }));
  } finally {
    await bus.close();
    await Promise.all(references.map((c) => stop(c.child)));
    await stop(capacity.coordinator);
  }
}

const LABELS: Record<CapacitySystem, string> = {
  trivial: 'trivial responder (a fixed grant)',
  'json-parse': 'JSON-parsing responder (the codec, no pool)',
  coordinator: 'coordinator grants',
};

/** capacityTable — the rows as a Markdown table. */
export function capacityTable(rows: readonly CapacityRow[]): string[] {
  return [
    `| over NATS, one load client, ${CONCURRENCY} requests in flight (at most one per agent) | live agents | replies/s | rounds | / trivial | p50 µs | p99 µs | responder CPU µs per reply | nats-server | client | errors |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${LABELS[r.system]} | ${formatNumber(r.agents)} | ${formatNumber(r.repliesPerSecond)} | ${r.rounds.length > 1 ? r.rounds.map(formatNumber).join(', ') : '–'} | ×${formatNumber(r.ratioToTrivial)} | ${formatNumber(r.latencyP50Us)} | ${formatNumber(r.latencyP99Us)} | ${formatNumber(r.responderCpuUsPerReply)} | ${formatNumber(r.natsCpuUsPerReply)} | ${formatNumber(r.clientCpuUsPerReply)} | ${r.errors} |`,
    ),
  ];
}
