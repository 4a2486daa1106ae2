/**
 * The concurrency sweep (`--concurrency N/D --service S`): every lease size
 * × TTL × usage-report interval of a concurrency pool of N slots held at
 * most D, whose requests are served in S on average (exponential service
 * times), simulated on the same arrivals as two baselines:
 * - central-semaphore: one semaphore of N every request asks (a round-trip
 *   to acquire, another to release, as a Redis semaphore does): the
 *   yardstick of utilization. Its slot stays taken from the moment the
 *   semaphore grants it until the release reaches it.
 * - local-semaphores: each agent keeps N/agents of the slots (the
 *   remainder to the first agents), no coordination: the limit idles
 *   wherever demand is low.
 * Every request is a try (acquire or refuse, as the middleware does
 * without a wait queue) for one slot.
 *
 * Guarantees: every lease row comes from the simulator, which runs the
 * real coordinator and agent and judges the run with the in-flight check
 * (at no instant more than N in flight): runConcurrencySweep throws when a
 * row broke a check or its peak passed N. Utilization is what a row
 * admitted over what the central semaphore admitted; busy is the mean in
 * flight over N (slots doing work, each counted at most D).
 */
import { seededRandom } from '@tokenlease/shared/testing';
import { concurrencyPool, Network, runSimulation, type Arrival, type NetworkSpec, type SimConfig, type Workload } from '@tokenlease/sim';
import type { SweepConcurrency } from './concurrency-args.js';
import { jain } from './fairness.js';
import { columnTable, formatCount, formatFixed, formatPercent, type TableColumn } from './format.js';
import { reportsColumn, settingColumns } from './setting-columns.js';
import { arrivalsOf, type SweepInput } from './run-sweep.js';
import { tokenleaseSettings } from './settings.js';

/** ConcurrencyStrategy — tokenlease chunk leases, one central semaphore, or a semaphore per agent. */
export type ConcurrencyStrategy = 'lease' | 'central-semaphore' | 'local-semaphores';

/** ConcurrencyRow — one row of a concurrency sweep; ms and requests (null: does not apply to a baseline). */
export interface ConcurrencyRow {
  readonly strategy: ConcurrencyStrategy;
  readonly leaseSize: number | null;
  readonly ttlMs: number | null;
  /** Usage-report interval (keeper reportMs), ms, 0 = off; null for baselines. */
  readonly reportMs: number | null;
  /** Requests that got a slot. */
  readonly admitted: number;
  /** Requests the central semaphore admitted on the same arrivals. */
  readonly semaphoreAdmitted: number;
  /** admitted / semaphoreAdmitted (1 when the semaphore admitted nothing). */
  readonly utilization: number;
  /** Mean requests in flight over N. */
  readonly busy: number;
  /** The most requests in flight at once; at most N. */
  readonly peakInFlight: number;
  readonly limit: number;
  /** Round-trips per 1,000 admitted requests (a semaphore's: acquire and release). */
  readonly roundTripsPer1k: number;
  readonly reportsPer1k: number;
  readonly jain: number;
  readonly denialRate: number;
  readonly requests: number;
}

/** SERVICE_SEED_SALT — the baselines' service times come from a stream of their own. */
const SERVICE_SEED_SALT = 0x5e41ce;

/** Releases — instants at which held slots come free: a binary min-heap. */
class Releases {
  private readonly heap: number[] = [];

  get size(): number {
    return this.heap.length;
  }

  push(atUs: number): void {
    const h = this.heap;
    h.push(atUs);
    for (let i = h.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if ((h[parent] as number) <= atUs) break;
      h[i] = h[parent] as number;
      h[parent] = atUs;
      i = parent;
    }
  }

  /** freeUntil — drops every release at or before `nowUs` (half-open holds: a slot freed at t is free at t). */
  freeUntil(nowUs: number): void {
    const h = this.heap;
    while (h.length > 0 && (h[0] as number) <= nowUs) {
      const last = h.pop() as number;
      if (h.length === 0) break;
      h[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && (h[l] as number) < (h[m] as number)) m = l;
        if (r < h.length && (h[r] as number) < (h[m] as number)) m = r;
        if (m === i) break;
        const t = h[i] as number;
        h[i] = h[m] as number;
        h[m] = t;
        i = m;
      }
    }
  }
}

/** BaselineOutcome — what a semaphore baseline admitted, per agent, how long slots were held in all, and its round-trips. */
interface BaselineOutcome {
  readonly admitted: number;
  readonly perAgentAdmitted: readonly number[];
  readonly heldUs: number;
  readonly peakInFlight: number;
  readonly roundTrips: number;
}

/** serviceTimes — each arrival's service time, µs: exponential of mean `serviceMs`, at least 1 µs. */
function serviceTimes(workload: Workload, serviceMs: number, seed: number): Float64Array {
  const random = seededRandom((seed ^ SERVICE_SEED_SALT) >>> 0);
  const out = new Float64Array(workload.arrivals.length);
  for (let i = 0; i < out.length; i += 1) out[i] = Math.max(1, Math.round(random.exponential(serviceMs * 1000)));
  return out;
}

/** centralSemaphore — a round-trip per request to one semaphore of `limit` across a network of `spec` (decided one way later). */
export function centralSemaphore(
  workload: Workload,
  agents: number,
  limit: number,
  services: Float64Array,
  spec: NetworkSpec,
  seed: number,
): BaselineOutcome {
  const network = new Network({ ...spec, lossRate: 0, duplicateRate: 0 }, [], seededRandom(seed));
  const decided = workload.arrivals
    .map((a, i) => ({ a, i, atUs: network.arrivals(a.agent, a.tUs)[0] ?? a.tUs }))
    .sort((x, y) => x.atUs - y.atUs);
  const perAgentAdmitted = Array.from({ length: agents }, () => 0);
  const releases = new Releases();
  let admitted = 0;
  let heldUs = 0;
  let peak = 0;
  for (const { a, i, atUs } of decided) {
    releases.freeUntil(atUs);
    if (releases.size >= limit) continue;
    // Granted here, answered one way later, served, then released one way later again.
    const oneWayUs = atUs - a.tUs;
    const serviceUs = services[i] as number;
    releases.push(atUs + 2 * oneWayUs + serviceUs);
    peak = Math.max(peak, releases.size);
    admitted += 1;
    heldUs += serviceUs;
    perAgentAdmitted[a.agent] = (perAgentAdmitted[a.agent] ?? 0) + 1;
  }
  return { admitted, perAgentAdmitted, heldUs, peakInFlight: peak, roundTrips: workload.arrivals.length + admitted };
}

/** localSemaphores — a semaphore of N/agents slots (the remainder to the first agents) for each agent incarnation, no coordination. */
export function localSemaphores(workload: Workload, agents: number, limit: number, services: Float64Array): BaselineOutcome {
  const share = (agent: number): number => Math.floor(limit / agents) + (agent < limit % agents ? 1 : 0);
  const semaphores = new Map<string, Releases>();
  const perAgentAdmitted = Array.from({ length: agents }, () => 0);
  let admitted = 0;
  let heldUs = 0;
  let peak = 0;
  const all = new Releases();
  workload.arrivals.forEach((a: Arrival, i) => {
    const key = `${a.agent}.${a.incarnation}`;
    let own = semaphores.get(key);
    if (own === undefined) {
      own = new Releases();
      semaphores.set(key, own);
    }
    own.freeUntil(a.tUs);
    all.freeUntil(a.tUs);
    if (own.size >= share(a.agent)) return;
    const serviceUs = services[i] as number;
    own.push(a.tUs + serviceUs);
    all.push(a.tUs + serviceUs);
    peak = Math.max(peak, all.size);
    admitted += 1;
    heldUs += serviceUs;
    perAgentAdmitted[a.agent] = (perAgentAdmitted[a.agent] ?? 0) + 1;
  });
  return { admitted, perAgentAdmitted, heldUs, peakInFlight: peak, roundTrips: 0 };
}

/** runConcurrencySweep — a row per chunk setting of `input` (tokenleaseSettings' order, allowance 0), then central-semaphore and local-semaphores. */
export function runConcurrencySweep(
  input: SweepInput,
  pool: SweepConcurrency,
  onRow: (row: ConcurrencyRow) => void = () => {},
): ConcurrencyRow[] {
  const workload = arrivalsOf(input);
  const spanUs = input.durationMs * 1000;
  const perAgentOffered = Array.from({ length: input.agents }, () => 0);
  for (const a of workload.arrivals) perAgentOffered[a.agent] = (perAgentOffered[a.agent] ?? 0) + 1;
  const requests = workload.arrivals.length;
  const network = { latencyUs: input.latencyUs, lossRate: 0, duplicateRate: 0 };
  const services = serviceTimes(workload, pool.serviceMs, input.seed);
  const central = centralSemaphore(workload, input.agents, pool.limit, services, network, input.seed);
  const rowOf = (
    strategy: ConcurrencyStrategy,
    setting: Pick<ConcurrencyRow, 'leaseSize' | 'ttlMs' | 'reportMs'>,
    m: BaselineOutcome & { readonly reports: number; readonly meanInFlight: number },
  ): ConcurrencyRow => ({
    strategy,
    ...setting,
    admitted: m.admitted,
    semaphoreAdmitted: central.admitted,
    utilization: central.admitted === 0 ? 1 : m.admitted / central.admitted,
    busy: m.meanInFlight / pool.limit,
    peakInFlight: m.peakInFlight,
    limit: pool.limit,
    roundTripsPer1k: m.admitted === 0 ? 0 : (1000 * m.roundTrips) / m.admitted,
    reportsPer1k: m.admitted === 0 ? 0 : (1000 * m.reports) / m.admitted,
    jain: jain(m.perAgentAdmitted, perAgentOffered),
    denialRate: requests === 0 ? 0 : (requests - m.admitted) / requests,
    requests,
  });
  const rows: ConcurrencyRow[] = [];
  const add = (row: ConcurrencyRow): void => {
    rows.push(row);
    onRow(row);
  };
  const chunk = { ...input, leaseModes: ['chunk' as const], allowancesTokens: [0] };
  for (const setting of tokenleaseSettings(chunk)) {
    const reportMs = setting.reportMs ?? 0;
    const config: SimConfig = {
      seed: input.seed,
      agents: input.agents,
      durationUs: spanUs,
      pool: concurrencyPool(
        pool.limit,
        { maxHoldMs: pool.maxHoldMs, serviceMs: pool.serviceMs, hangShare: 0 },
        { leaseTtlMs: setting.ttlMs, maxLeaseTokens: setting.leaseSize ?? 1 },
      ),
      workload: input.workload,
      network,
      partitions: [],
      faults: [],
      driftMax: 0,
      keeper: reportMs > 0 ? { reportMs } : {},
    };
    const r = runSimulation(config);
    const what = `lease ${setting.leaseSize}, TTL ${setting.ttlMs} ms, reports every ${reportMs} ms`;
    if (r.violations.length > 0) throw new Error(`${what} broke a check: ${r.violations[0]}`);
    const peak = r.peakInFlight ?? 0;
    if (peak > pool.limit) throw new Error(`${what} had ${peak} in flight at once, over ${pool.limit}`);
    add(
      rowOf(
        'lease',
        { leaseSize: setting.leaseSize, ttlMs: setting.ttlMs, reportMs },
        {
          admitted: r.admittedCount,
          perAgentAdmitted: r.perAgentAdmitted,
          heldUs: 0,
          peakInFlight: peak,
          roundTrips: r.roundTrips,
          reports: r.reports,
          meanInFlight: r.meanInFlight ?? 0,
        },
      ),
    );
  }
  const baseline = { leaseSize: null, ttlMs: null, reportMs: null };
  const measured = (o: BaselineOutcome): BaselineOutcome & { reports: number; meanInFlight: number } => ({
    ...o,
    reports: 0,
    meanInFlight: spanUs === 0 ? 0 : o.heldUs / spanUs,
  });
  add(rowOf('central-semaphore', baseline, measured(central)));
  add(rowOf('local-semaphores', baseline, measured(localSemaphores(workload, input.agents, pool.limit, services))));
  return rows;
}

/** concurrencyRecommendation — the lease row with the fewest round-trips per 1,000 requests among those reaching `target` utilization, or null. */
export function concurrencyRecommendation(rows: readonly ConcurrencyRow[], target: number): ConcurrencyRow | null {
  let best: ConcurrencyRow | null = null;
  for (const row of rows) {
    if (row.strategy !== 'lease' || row.utilization < target) continue;
    if (best === null || row.roundTripsPer1k < best.roundTripsPer1k) best = row;
  }
  return best;
}

const COLUMNS: readonly TableColumn<ConcurrencyRow>[] = [
  ...settingColumns<ConcurrencyRow>(),
  { header: 'admitted', cell: (r) => formatCount(r.admitted) },
  { header: 'semaphore', cell: (r) => formatCount(r.semaphoreAdmitted) },
  { header: 'util %', cell: (r) => formatPercent(r.utilization) },
  { header: 'busy %', cell: (r) => formatPercent(r.busy) },
  { header: 'peak/N', cell: (r) => `${formatCount(r.peakInFlight)}/${formatCount(r.limit)}` },
  { header: 'RT/1k', cell: (r) => formatFixed(r.roundTripsPer1k, 1) },
  reportsColumn<ConcurrencyRow>(),
  { header: 'Jain', cell: (r) => formatFixed(r.jain, 3) },
  { header: 'denied %', cell: (r) => formatPercent(r.denialRate) },
];

/** renderConcurrencyTable — the rows as an aligned plain-text table, in the order given, with a footnote on the columns. */
export function renderConcurrencyTable(rows: readonly ConcurrencyRow[]): string {
  return [
    ...columnTable(COLUMNS, rows),
    'util %: requests admitted / what one central semaphore admits on the same arrivals (semaphore); busy %: mean in flight / N;',
    'peak/N: the most requests in flight at once (the in-flight check over every hold); RT/1k: round-trips per 1,000 admitted requests.',
  ].join('\n');
}
