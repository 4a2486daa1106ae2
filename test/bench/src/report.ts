/**
 * What `npm run bench` prints, from the figures main.ts gathered: readable
 * lines, and one flat JSON object of the figures (each name carries its
 * unit), the same on every run so that a script can compare runs.
 */
import type { CrowdFigures, LatencyFigures } from './crowded-pool.js';
import { FLOOD_ONSET_MS, type FloodFigures } from './flooded-pool.js';
import type { DurableFigures, WriteFigures } from './durable.js';
import type { GrantSigningFigures } from './grant-signing.js';
import type { IdlePoolFigures } from './idle-pools.js';
import { LEASE_COUNTS, type LeaseCount, type LeaseModeName, type RowSketchFigure, type ScalingFigure } from './lease-scaling.js';
import type { Timing } from './measure.js';
import type { RecordingFigures } from './recording.js';
import type { SlotFigures } from './slots.js';

/** ProbeFigures — what the allocation probe (a child under --expose-gc) measured: heap bytes per call, and the coordinator's memory. */
export type ProbeFigures = Readonly<
  Record<
    'admit' | 'admitAt' | 'admitAll' | 'clock' | 'deny' | 'rateAt' | 'recorded' | 'bytesPerLease' | 'bytesPerEvictedPool' | 'poolsLeft',
    number
  >
>;

/** FastPathFigures — the agent's fast path and one agent end to end. */
export interface FastPathFigures {
  readonly admit: Timing;
  readonly all: Timing;
  readonly deny: Timing;
  readonly rate: Timing;
  readonly recording: RecordingFigures;
  readonly slots: SlotFigures;
  readonly e2e: { readonly admitsPerSecond: number; readonly roundTrips: number; readonly admitted: number };
  readonly e2eMs: number;
  readonly leaseTokens: number;
  readonly bytes: ProbeFigures;
}

export interface BenchFigures {
  readonly fastPath: FastPathFigures;
  readonly durable: DurableFigures;
  readonly scaling: readonly ScalingFigure[];
  /** The chunk renewal sketched on one off-heap row a lease (row-sketch.ts), at each count. */
  readonly rowSketch: readonly RowSketchFigure[];
  readonly idle: IdlePoolFigures;
  readonly crowded: CrowdFigures;
  readonly flooded: FloodFigures;
  readonly signing: GrantSigningFigures;
  /** The machine: its CPUs and its 1-minute load average when the bench started and ended (other work on it moves every figure). */
  readonly machine: { readonly cpus: number; readonly loadAverageStart: number; readonly loadAverageEnd: number };
  /** Where NATS came from, and its URL. */
  readonly nats: string;
  /** 'quick': every measurement at the small scale of `--quick`, figures not to quote. */
  readonly scale: 'full' | 'quick';
}

const COUNT_NAMES: Readonly<Record<LeaseCount, string>> = { 1000: '1k', 10000: '10k', 100000: '100k' };

function scalingOf(figures: BenchFigures, mode: LeaseModeName, leases: LeaseCount): ScalingFigure {
  const figure = figures.scaling.find((s) => s.mode === mode && s.leases === leases);
  if (figure === undefined) throw new Error(`no ${mode} figure at ${leases} leases`);
  return figure;
}

/**
 * countCells — a figure per second at each lease count over all its turns,
 * and beside each but 1k its share of 1k's: over all turns, and the middle
 * half of the passes' shares (each pass's counts measured back to back).
 */
function countCells(of: (n: LeaseCount) => { perSecond: number; perTurn: readonly number[] }): string[] {
  const base = of(1000);
  return LEASE_COUNTS.map((n) => {
    const { perSecond, perTurn } = of(n);
    const head = `${COUNT_NAMES[n]} leases ${perSecond.toLocaleString('en-US')}/s`;
    if (n === 1000) return head;
    const shares = perTurn.map((f, i) => f / (base.perTurn[i] ?? Number.NaN)).sort((a, b) => a - b);
    const quartile = (q: number): string => (shares[Math.round(q * (shares.length - 1))] ?? Number.NaN).toFixed(2);
    return `${head} (×${(perSecond / base.perSecond).toFixed(2)}; passes ×${quartile(0.25)}–×${quartile(0.75)})`;
  });
}

function scalingLine(figures: BenchFigures, mode: LeaseModeName): string {
  const cells = countCells((n) => {
    const s = scalingOf(figures, mode, n);
    return { perSecond: s.acquiresPerSecond, perTurn: s.perTurn };
  });
  const gc = LEASE_COUNTS.map((n) => scalingOf(figures, mode, n).gcUsPerCall).join(' / ');
  const floor = LEASE_COUNTS.map((n) => scalingOf(figures, mode, n).floorNs.toLocaleString('en-US')).join(' / ');
  return (
    `coordinator core, ${mode} pool, acquires per CPU second by live leases (renewals by random agents, the core's calls only; ` +
    `counts taking turns of CPU time: all turns, and the middle half of the passes' shares of 1k): ${cells.join(', ')}; garbage collector ${gc} µs per renewal; ` +
    `floor (find a random agent's lease, check its secret) ${floor} ns`
  );
}

function rowSketchOf(figures: BenchFigures, leases: LeaseCount): RowSketchFigure {
  const figure = figures.rowSketch.find((s) => s.leases === leases);
  if (figure === undefined) throw new Error(`no row sketch figure at ${leases} leases`);
  return figure;
}

function rowSketchLine(figures: BenchFigures): string {
  const cells = countCells((n) => {
    const s = rowSketchOf(figures, n);
    return { perSecond: s.renewalsPerSecond, perTurn: s.perTurn };
  });
  return (
    `  beside it, the chunk renewal sketched on one off-heap row a lease (row-sketch.ts: what the core would still lose with ` +
    `every field of a lease in one row), renewals per CPU second: ${cells.join(', ')}`
  );
}

function ms(l: LatencyFigures): string {
  return `${l.p50Ms} / ${l.p99Ms} / ${l.maxMs}`;
}

function crowdLines(c: CrowdFigures): string[] {
  const n = c.requests.toLocaleString('en-US');
  return [
    `quiet pool acquire round-trip over NATS, ms, p50 / p99 / max of ${c.baseline.count} sequential renewals: baseline ${ms(c.baseline)}; with ${n} requests waiting on another pool ${ms(c.crowded)}`,
    `  while the ${n} were being taken in (${c.floodMs} ms until all waited; the client sent them in ${c.hostileSendMs} ms): ${ms(c.duringFlood)} over ${c.duringFlood.count} renewals; waiting after: ${c.waitingAfter}; hostile requests answered early: ${c.hostileAnswered}`,
  ];
}

function floodLine(f: FloodFigures): string {
  return (
    `quiet pool renewal round-trip over NATS while one client floods another pool (${f.floodPerSecond.toLocaleString('en-US')} requests/s), ms, p50 / p99 / max: ` +
    `baseline ${ms(f.baseline)}; the flood's first ${FLOOD_ONSET_MS} ms ${ms(f.onset)} (${f.onset.count} renewals); after ${ms(f.sustained)} (${f.sustained.count} renewals)`
  );
}

function writeLine(w: WriteFigures): string {
  return `median ${w.writeUsMedian} µs, p99 ${w.writeUsP99} µs per write; ${w.writesPerSecond16Pools} writes/s with 16 pools writing at once`;
}

/** slotsLine — a concurrency pool's acquire+release pair, beside a Redis semaphore's. */
function slotsLine(s: SlotFigures): string {
  const times = Math.round(s.redis.nsMedian / Math.max(1, s.limiter.nsMedian));
  return (
    `concurrency slots, acquire+release: median ${s.limiter.nsMedian} ns, p99 ${s.limiter.nsP99} ns per pair through a limiter (${s.limiter.calls} pairs), ` +
    `${s.slot.nsMedian} ns on the slot alone; a Redis semaphore (Lua acquire, ZREM release; Redis ${s.redisAt}): ` +
    `median ${(s.redis.nsMedian / 1000).toFixed(1)} µs, p99 ${(s.redis.nsP99 / 1000).toFixed(1)} µs per pair (${s.redis.calls} pairs), ${times}× the limiter's`
  );
}

/** readableLines — the figures in words, one subject a line. */
export function readableLines(figures: BenchFigures): string[] {
  const { admit, all, deny, rate, recording, e2e, bytes } = figures.fastPath;
  const { durable } = figures;
  return [
    `tryTake admit: median ${admit.nsMedian} ns, p99 ${admit.nsP99} ns per call (${admit.calls} calls in batches of 1000); ${bytes.admit} heap bytes per call`,
    `  of which the clock read: performance.now() alone allocates ${bytes.clock} bytes per call (V8 boxes its result); tryTakeAt with a time the caller read: ${bytes.admitAt} bytes per call`,
    `tryTakeAll over 2 pools: median ${all.nsMedian} ns, p99 ${all.nsP99} ns per call; ${bytes.admitAll} heap bytes per call`,
    `tryTake deny:  median ${deny.nsMedian} ns, p99 ${deny.nsP99} ns per call; ${bytes.deny} heap bytes per call`,
    `rate lease tryTakeAt (accrues every call): median ${rate.nsMedian} ns, p99 ${rate.nsP99} ns per call; ${bytes.rateAt} heap bytes per call`,
    `tryTake admit while its pool is recorded to a trace: median ${recording.take.nsMedian} ns, p99 ${recording.take.nsP99} ns per call (${admit.nsMedian} ns unrecorded, above); ${bytes.recorded} heap bytes per call; writing the trace off the request path: ${recording.writeNsPerArrival} ns and ${recording.bytesPerArrival} file bytes per arrival (${recording.arrivals} arrivals)`,
    slotsLine(figures.fastPath.slots),
    `durable write before reply (Redis ${durable.redis}): median ${durable.writeUsMedian} µs, p99 ${durable.writeUsP99} µs per write; ${durable.writesPerSecond16Pools} writes/s with 16 pools writing at once`,
    `  on a Redis Cluster (3 primaries, 1 replica each), each write confirmed by a replica (WAIT 1): ${writeLine(durable.clusterConfirmed)}`,
    `  on the same cluster without replica confirmation: ${writeLine(durable.clusterUnconfirmed)}`,
    `one agent end to end: ${e2e.admitsPerSecond} admissions/s over ${figures.fastPath.e2eMs} ms with ${figures.fastPath.leaseTokens}-token leases (${e2e.roundTrips} round-trips, ${e2e.admitted} admitted)`,
    `coordinator memory: ${bytes.bytesPerLease} heap bytes per live lease; ${bytes.bytesPerEvictedPool} per template pool after idle eviction (${bytes.poolsLeft} of 20,000 left)`,
    scalingLine(figures, 'rate'),
    scalingLine(figures, 'chunk'),
    rowSketchLine(figures),
    `coordinator at rest with ${figures.idle.pools} idle template pools: ${figures.idle.restCpuMsPerSecond} ms of CPU per second; a renewal meanwhile ${figures.idle.renewalUsMedian} µs median, ${figures.idle.renewalUsP99} µs p99`,
    ...crowdLines(figures.crowded),
    floodLine(figures.flooded),
    `signed grants: ${(figures.signing.sign.nsMedian / 1000).toFixed(1)} µs to sign one on the coordinator (p99 ${(figures.signing.sign.nsP99 / 1000).toFixed(1)} µs), ${(figures.signing.verify.nsMedian / 1000).toFixed(1)} µs to check one on the agent (p99 ${(figures.signing.verify.nsP99 / 1000).toFixed(1)} µs)`,
    `${figures.scale === 'quick' ? 'QUICK SCALE (--quick): a check that every measurement runs, not figures to quote; ' : ''}NATS: ${figures.nats}; node ${process.version}; ${figures.machine.cpus} CPUs, load average (1 min) ${figures.machine.loadAverageStart.toFixed(2)} at start, ${figures.machine.loadAverageEnd.toFixed(2)} at end`,
  ];
}

/** figuresJson — every figure under a name that carries its unit, and `quick` (true: the figures of `--quick`, not to quote). */
export function figuresJson(figures: BenchFigures): Record<string, number | boolean> {
  const { admit, all, deny, rate, recording, e2e, bytes, leaseTokens } = figures.fastPath;
  const { durable, crowded: c, machine } = figures;
  const scaling: Record<string, number> = {};
  for (const mode of ['rate', 'chunk'] as const)
    for (const n of LEASE_COUNTS) {
      scaling[`${mode}AcquiresPerSecond${COUNT_NAMES[n]}`] = scalingOf(figures, mode, n).acquiresPerSecond;
      scaling[`${mode}GcUsPerAcquire${COUNT_NAMES[n]}`] = scalingOf(figures, mode, n).gcUsPerCall;
      scaling[`${mode}LookupFloorNs${COUNT_NAMES[n]}`] = scalingOf(figures, mode, n).floorNs;
    }
  for (const n of LEASE_COUNTS) scaling[`rowSketchRenewalsPerSecond${COUNT_NAMES[n]}`] = rowSketchOf(figures, n).renewalsPerSecond;
  return {
    tryTakeNsMedian: admit.nsMedian,
    tryTakeNsP99: admit.nsP99,
    tryTakeBytesPerCall: bytes.admit,
    tryTakeAtBytesPerCall: bytes.admitAt,
    clockReadBytesPerCall: bytes.clock,
    tryTakeAllNsMedian: all.nsMedian,
    tryTakeAllBytesPerCall: bytes.admitAll,
    tryTakeDenyNsMedian: deny.nsMedian,
    tryTakeDenyNsP99: deny.nsP99,
    tryTakeDenyBytesPerCall: bytes.deny,
    rateTakeAtNsMedian: rate.nsMedian,
    rateTakeAtBytesPerCall: bytes.rateAt,
    recordedTryTakeNsMedian: recording.take.nsMedian,
    recordedTryTakeNsP99: recording.take.nsP99,
    recordedTryTakeBytesPerCall: bytes.recorded,
    recordingWriteNsPerArrival: recording.writeNsPerArrival,
    recordingFileBytesPerArrival: recording.bytesPerArrival,
    slotPairNsMedian: figures.fastPath.slots.limiter.nsMedian,
    slotPairNsP99: figures.fastPath.slots.limiter.nsP99,
    slotPairOnSlotNsMedian: figures.fastPath.slots.slot.nsMedian,
    redisSemaphorePairUsMedian: Math.round(figures.fastPath.slots.redis.nsMedian / 100) / 10,
    redisSemaphorePairUsP99: Math.round(figures.fastPath.slots.redis.nsP99 / 100) / 10,
    durableWriteUsMedian: durable.writeUsMedian,
    durableWriteUsP99: durable.writeUsP99,
    durableWritesPerSecond16Pools: durable.writesPerSecond16Pools,
    clusterConfirmedWriteUsMedian: durable.clusterConfirmed.writeUsMedian,
    clusterConfirmedWriteUsP99: durable.clusterConfirmed.writeUsP99,
    clusterConfirmedWritesPerSecond16Pools: durable.clusterConfirmed.writesPerSecond16Pools,
    clusterUnconfirmedWriteUsMedian: durable.clusterUnconfirmed.writeUsMedian,
    clusterUnconfirmedWriteUsP99: durable.clusterUnconfirmed.writeUsP99,
    clusterUnconfirmedWritesPerSecond16Pools: durable.clusterUnconfirmed.writesPerSecond16Pools,
    agentAdmitsPerSecond: e2e.admitsPerSecond,
    agentRoundTrips: e2e.roundTrips,
    coordinatorBytesPerLease: bytes.bytesPerLease,
    coordinatorBytesPerEvictedPool: bytes.bytesPerEvictedPool,
    leaseTokens,
    ...scaling,
    idlePools: figures.idle.pools,
    idleRestCpuMsPerSecond: figures.idle.restCpuMsPerSecond,
    idleRenewalUsMedian: figures.idle.renewalUsMedian,
    idleRenewalUsP99: figures.idle.renewalUsP99,
    grantSignNsMedian: figures.signing.sign.nsMedian,
    grantSignNsP99: figures.signing.sign.nsP99,
    grantVerifyNsMedian: figures.signing.verify.nsMedian,
    grantVerifyNsP99: figures.signing.verify.nsP99,
    quietAcquireMsP50Baseline: c.baseline.p50Ms,
    quietAcquireMsP99Baseline: c.baseline.p99Ms,
    quietAcquireMsMaxBaseline: c.baseline.maxMs,
    quick: figures.scale === 'quick',
    crowdRequests: c.requests,
    quietAcquireMsP50Busy50k: c.crowded.p50Ms,
    quietAcquireMsP99Busy50k: c.crowded.p99Ms,
    quietAcquireMsMaxBusy50k: c.crowded.maxMs,
    floodRequestsPerSecond: figures.flooded.floodPerSecond,
    floodedQuietRenewMsP50Baseline: figures.flooded.baseline.p50Ms,
    floodedQuietRenewMsP99Baseline: figures.flooded.baseline.p99Ms,
    floodedQuietRenewMsP50Onset: figures.flooded.onset.p50Ms,
    floodedQuietRenewMsP99Onset: figures.flooded.onset.p99Ms,
    floodedQuietRenewMsMaxOnset: figures.flooded.onset.maxMs,
    floodedQuietRenewMsP50: figures.flooded.sustained.p50Ms,
    floodedQuietRenewMsP99: figures.flooded.sustained.p99Ms,
    floodedQuietRenewMsMax: figures.flooded.sustained.maxMs,
    quietAcquireMsP50DuringFlood: c.duringFlood.p50Ms,
    quietAcquireMsP99DuringFlood: c.duringFlood.p99Ms,
    quietAcquireMsMaxDuringFlood: c.duringFlood.maxMs,
    quietAcquiresDuringFlood: c.duringFlood.count,
    busyFloodMs: c.floodMs,
    hostileSendMs: c.hostileSendMs,
    busyWaitingAfter: c.waitingAfter,
    hostileAnsweredEarly: c.hostileAnswered,
    cpus: machine.cpus,
    loadAverage1mStart: round2(machine.loadAverageStart),
    loadAverage1mEnd: round2(machine.loadAverageEnd),
  };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
