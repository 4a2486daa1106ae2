/**
 * A flat fleet against a tree, for `npm run bench:compare -- --parts tree`:
 * n simulated agents (`--tree-agents`, default 10,000) (simulated-agents.ts), each renewing its own
 * lease once per RENEW_MS, their renewals spread evenly over the period,
 * over CONNECTIONS NATS connections; first straight to a root coordinator
 * process, then split evenly under TREE_RELAYS relay processes
 * (tokenlease-relay) of the same pool, each a fresh root on the same
 * private NATS.
 *
 * Counted over MEASURE_MS_DEFAULT (or as told), after one warm-up period in which every agent
 * opens its lease: the requests that reach the root (a plain subscriber on
 * its subject prefix sees every one while it keeps up; on a saturated
 * machine NATS drops a slow subscriber's messages, and the root's grants
 * are the figure to read), the root's grants
 * (`tokenlease_grants_total` from its metrics, before and after), and at
 * the agents the grants they got, the tokens in them, the renewals that
 * failed (a refusal or no reply) or could not leave on time (the previous
 * one still in flight), and the agents served: those granted every renewal
 * in the window. The pool is wide (B and r of 10^9), so what is measured is
 * how many renewals each layer answers, not how tokens are shared. Every
 * process shares one machine: the tree's relays take CPU the flat root does
 * not need, so the figure is the load on the root, not a speed-up.
 */
import { decodeReply, subjectFor } from '@tokenlease/shared';
import { connectNats, resolveNatsOptions, NATS_ENV, type Bus } from '@tokenlease/shared/nats';
import { seededRandom } from '@tokenlease/shared/testing';
import { scratchDir, startCoordinator, startRelay, writeConfig } from '@tokenlease/harness/fleet';
import { freePort } from '@tokenlease/harness/ports';
import { stop, type Child } from '@tokenlease/harness/processes';
import { scrape, sumOf } from '@tokenlease/harness/scrape';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedAgents } from '../simulated-agents.js';
import { LatencyHistogram } from './latency.js';
import { formatNumber, round } from './report.js';

/** TREE_RELAYS — how many relays the tree splits the fleet under. */
export const TREE_RELAYS = 4;
const CONNECTIONS = 4;
const RENEW_MS = 1000;
/** MEASURE_MS_DEFAULT — how long each layout is counted unless told, ms. */
export const MEASURE_MS_DEFAULT = 5000;
const TTL_MS = 3000;
const REQUEST_TIMEOUT_MS = 2000;
const POOL = 'tree';
const LIMITS = { capacity: 1_000_000_000, refill: '1000000000/s' };

/** TreeRow — one layout's figures. */
export interface TreeRow {
  readonly table: 'tree';
  readonly layout: 'flat' | 'tree';
  readonly agents: number;
  readonly relays: number;
  /** Renewals the agents sent per second. */
  readonly sentPerSecond: number;
  readonly rootRequestsPerSecond: number;
  readonly rootGrantsPerSecond: number;
  readonly agentGrantsPerSecond: number;
  readonly agentTokensPerSecond: number;
  readonly agentsServed: number;
  /** Renewals refused or unanswered in the window. */
  readonly failed: number;
  /** Renewals not sent on time: the agent's previous one was still in flight. */
  readonly late: number;
  readonly latencyP50Us: number;
  readonly latencyP99Us: number;
}

/** Counts — what the agents saw in the measured window. */
class Counts {
  sent = 0;
  grants = 0;
  tokens = 0;
  failed = 0;
  late = 0;
  readonly latency = new LatencyHistogram();
  readonly missed: Uint8Array;
  readonly granted: Uint8Array;
  constructor(n: number) {
    this.missed = new Uint8Array(n);
    this.granted = new Uint8Array(n);
  }
  served(): number {
    let served = 0;
    for (let i = 0; i < this.granted.length; i += 1) if (this.granted[i] === 1 && this.missed[i] === 0) served += 1;
    return served;
  }
}

const connect = (natsUrl: string, name: string): Promise<Bus> =>
  connectNats(resolveNatsOptions([{ settings: { url: natsUrl }, names: NATS_ENV }]), { name });

/**
 * pace — agent renewals from `startMs` to `untilMs`, renewal k of the run
 * (agent k mod n) due at startMs + k·RENEW_MS/n; one in flight per agent.
 */
async function pace(
  n: number,
  send: (i: number) => Promise<{ ok: boolean; tokens: number }>,
  startMs: number,
  untilMs: number,
  counts: Counts,
): Promise<void> {
  const inFlight = new Uint8Array(n);
  let outstanding = 0;
  let k = 0;
  while (performance.now() < untilMs) {
    const due = Math.floor(((performance.now() - startMs) * n) / RENEW_MS);
    for (; k < due; k += 1) {
      const i = k % n;
      if (inFlight[i] === 1) {
        counts.late += 1;
        counts.missed[i] = 1;
        continue;
      }
      inFlight[i] = 1;
      counts.sent += 1;
      outstanding += 1;
      const t0 = process.hrtime.bigint();
      void send(i).then(({ ok, tokens }) => {
        inFlight[i] = 0;
        outstanding -= 1;
        counts.latency.record(Number(process.hrtime.bigint() - t0));
        if (ok) {
          counts.grants += 1;
          counts.tokens += tokens;
          counts.granted[i] = 1;
        } else {
          counts.failed += 1;
          counts.missed[i] = 1;
        }
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  // Every request ends within its timeout: wait for the last replies, bounded.
  const deadline = performance.now() + REQUEST_TIMEOUT_MS + 1000;
  while (outstanding > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

async function startRelays(natsUrl: string, rootPrefix: string, dir: string): Promise<{ children: Child[]; prefixes: string[] }> {
  const children: Child[] = [];
  const prefixes: string[] = [];
  for (let r = 0; r < TREE_RELAYS; r += 1) {
    const prefix = `${rootPrefix}r${r}`;
    const path = join(dir, `relay-${r}.json`);
    const doc = {
      upstreamPrefix: rootPrefix,
      subjectPrefix: prefix,
      pools: { [POOL]: { ...LIMITS, leaseTtlMs: TTL_MS, maxLeaseTokens: 1000 } },
    };
    writeFileSync(path, JSON.stringify(doc));
    children.push(await startRelay(natsUrl, path, `bench-r${r}`, { logLevel: 'info' }));
    prefixes.push(prefix);
  }
  return { children, prefixes };
}

/** treeRun — one layout on `natsUrl`: a fresh root (and relays), the warm-up, then the measured window; stops what it started. */
async function treeRun(natsUrl: string, n: number, layout: 'flat' | 'tree', measureMs: number): Promise<TreeRow> {
  const dir = scratchDir();
  const rootPrefix = `tlcomparetree${process.pid}${layout}`;
  const port = await freePort();
  const pool = { ...LIMITS, leaseTtlMs: TTL_MS, maxLeaseTokens: 1_000_000, minGrantTokens: 1 };
  const root = await startCoordinator(natsUrl, writeConfig(dir, { subjectPrefix: rootPrefix, pools: { [POOL]: pool } }), {
    http: `127.0.0.1:${port}`,
  });
  const children: Child[] = [root];
  const buses: Bus[] = [];
  try {
    await new Promise((resolve) => setTimeout(resolve, TTL_MS + 500)); // the root's quiet period
    const relays = layout === 'tree' ? await startRelays(natsUrl, rootPrefix, dir) : { children: [], prefixes: [rootPrefix] };
    children.push(...relays.children);
    for (let c = 0; c < CONNECTIONS; c += 1) buses.push(await connect(natsUrl, `tokenlease-bench-tree-${c}`));
    const counter = await connect(natsUrl, 'tokenlease-bench-tree-counter');
    buses.push(counter);
    let arrived = 0;
    counter.serve(`${rootPrefix}.>`, null, () => {
      arrived += 1;
    });
    await counter.flush();
    const agents = new SimulatedAgents(n, seededRandom(2026), POOL, 100);
    const subjects = relays.prefixes.map((p) => subjectFor(p, 'acquire', POOL));
    const send = async (i: number): Promise<{ ok: boolean; tokens: number }> => {
      try {
        const bus = buses[i % CONNECTIONS] as Bus;
        const bytes = await bus.request(
          subjects[i % subjects.length] as string,
          agents.request(i, Math.floor(performance.now())),
          REQUEST_TIMEOUT_MS,
        );
        const decoded = decodeReply(bytes);
        const reply = decoded.ok ? decoded.value : undefined;
        agents.settle(i, reply, `tree (${layout})`);
        return { ok: true, tokens: reply?.kind === 'grant' ? reply.tokensGranted : 0 };
      } catch {
        return { ok: false, tokens: 0 };
      }
    };
    const metrics = `http://127.0.0.1:${port}/metrics`;
    const warmStart = performance.now();
    await pace(n, send, warmStart, warmStart + RENEW_MS, new Counts(n));
    const counts = new Counts(n);
    const grantsBefore = sumOf(await scrape(metrics), 'tokenlease_grants_total');
    const arrivedBefore = arrived;
    const startMs = performance.now();
    await pace(n, send, startMs, startMs + measureMs, counts);
    const seconds = measureMs / 1000; // renewals leave until then; the wait for the last replies is not part of it
    const grants = sumOf(await scrape(metrics), 'tokenlease_grants_total') - grantsBefore;
    return {
      table: 'tree',
      layout,
      agents: n,
      relays: layout === 'tree' ? TREE_RELAYS : 0,
      sentPerSecond: round(counts.sent / seconds),
      rootRequestsPerSecond: round((arrived - arrivedBefore) / seconds),
      rootGrantsPerSecond: round(grants / seconds),
      agentGrantsPerSecond: round(counts.grants / seconds),
      agentTokensPerSecond: round(counts.tokens / seconds),
      agentsServed: counts.served(),
      failed: counts.failed,
      late: counts.late,
      latencyP50Us: round(counts.latency.quantileNs(0.5) / 1000),
      latencyP99Us: round(counts.latency.quantileNs(0.99) / 1000),
    };
  } finally {
    await Promise.all(buses.map((b) => b.close()));
    for (const child of children.reverse()) await stop(child);
  }
}

/** treeRows — the flat fleet's row, then the tree's, each counted over `measureMs`. */
export async function treeRows(natsUrl: string, n: number, measureMs = MEASURE_MS_DEFAULT): Promise<TreeRow[]> {
  return [await treeRun(natsUrl, n, 'flat', measureMs), await treeRun(natsUrl, n, 'tree', measureMs)];
}

/** treeTable — the rows as a Markdown table. */
export function treeTable(rows: readonly TreeRow[]): string[] {
  return [
    `| ${formatNumber(rows[0]?.agents ?? 0)} simulated agents renewing every ${RENEW_MS} ms over ${CONNECTIONS} connections | requests/s at the root | root grants/s | agent renewals/s sent | granted | tokens granted/s | agents served | failed | late | p50 µs | p99 µs |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.layout === 'flat' ? 'flat: every agent on the root' : `tree: ${r.relays} relays under the root`} | ${formatNumber(r.rootRequestsPerSecond)} | ${formatNumber(r.rootGrantsPerSecond)} | ${formatNumber(r.sentPerSecond)} | ${formatNumber(r.agentGrantsPerSecond)} | ${formatNumber(r.agentTokensPerSecond)} | ${formatNumber(r.agentsServed)} | ${r.failed} | ${r.late} | ${formatNumber(r.latencyP50Us)} | ${formatNumber(r.latencyP99Us)} |`,
    ),
  ];
}
