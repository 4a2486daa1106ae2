/**
 * npm run bench — the agent's fast path and one agent end to end.
 *
 * 1. tryTake: ns per call (median and p99 over batches of 1000) on a live
 *    lease with a large balance, for admissions and for denials; heap bytes
 *    allocated per call.
 * 2. End to end: one agent admitting as fast as it can from a pool whose
 *    refill is not the limit, with leases of `maxLeaseTokens` tokens; the
 *    lease keeper tops up over real NATS from a coordinator process.
 * 3. A rate lease's fast path: admissions from a slot whose balance
 *    accrues on every call (tryTakeAt, with a time that moves).
 * 4. The durable mode's write before reply (durable.ts).
 * 5. The coordinator core's acquires per second with 1k, 10k and 100k live
 *    leases on a rate pool and on a chunk pool, each count in a child
 *    process, the counts taking turns (turns.ts), beside the floor of a
 *    lease lookup at that count (lease-scaling.ts), and the same chunk
 *    renewal sketched on one off-heap row a lease at each count
 *    (row-sketch.ts).
 * 5b. The coordinator core at rest with 100,000 idle template pools: CPU
 *    per second, and a renewal's cost meanwhile (idle-pools.ts).
 * 6. Acquire latency on one pool of a coordinator process while another
 *    pool holds 50,000 waiting requests (crowded-pool.ts); its coordinator
 *    starts first, so its one-minute quiet period passes during the rest.
 * 6b. Renewal latency on one pool while one client floods another with
 *    25,000 requests/s: the flood's onset and after (flooded-pool.ts).
 * 7. Signed grants: µs to sign one on the coordinator and to check one on
 *    the agent (grant-signing.ts).
 * 8. Trace recording (recording.ts): tryTake's cost while its pool is
 *    recorded, and the cost of writing each recorded arrival to the file.
 * 9. Concurrency slots (slots.ts): ns per acquire+release pair through a
 *    limiter and on the slot alone, beside a Redis semaphore's pair of
 *    round-trips.
 * `--quick` runs every one of them at a small scale (args.ts QUICK_SCALE).
 * Prints readable lines, then one JSON line of the figures; with --json
 * (args.ts) only the JSON line goes to stdout, the readable lines to stderr.
 */
import { Agent, LeaseSlot, type Limiter } from '@tokenlease/agent';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats } from '@tokenlease/harness/nats';
import { spawnProcess, stop, stopAll } from '@tokenlease/harness/processes';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { BENCH_USAGE, BenchArgsError, FULL_SCALE, parseBenchArgs, QUICK_SCALE, type BenchArgs, type BenchScale } from './args.js';
import { crowdFigures, startCrowd } from './crowded-pool.js';
import { durableFigures } from './durable.js';
import { floodFigures } from './flooded-pool.js';
import { bytesPerCall, timeCalls } from './measure.js';
import {
  isLeaseCount,
  leaseScaling,
  type LeaseCount,
  type LeaseModeName,
  rowSketchScaling,
  scalingRound,
  scalingTurns,
} from './lease-scaling.js';
import { rowSketchRound, rowSketchTurns } from './row-sketch.js';
import { idlePools } from './idle-pools.js';
import { grantSigningFigures } from './grant-signing.js';
import { memoryFigures } from './memory.js';
import { adoptionFigures } from './adoption.js';
import { HOT_POOL, hotLimiter, waitForBalance } from './hot-limiter.js';
import { recordedBytesPerCall, recordingFigures } from './recording.js';
import { figuresJson, readableLines, type FastPathFigures, type ProbeFigures } from './report.js';
import { limiterPairs, redisPairs, slotPairs, SLOTS_POOL } from './slots.js';

const LEASE_TOKENS = 10_000;

async function endToEnd(agent: Agent, e2eMs: number): Promise<{ admitsPerSecond: number; roundTrips: number; admitted: number }> {
  const limiter = agent.limiter('e2e');
  await waitForBalance(limiter, 1, 5000);
  const startMs = performance.now();
  let admitted = 0;
  while (performance.now() - startMs < e2eMs) {
    for (let i = 0; i < 5000; i += 1) if (limiter.tryTake()) admitted += 1;
    await new Promise((resolve) => setImmediate(resolve));
  }
  const seconds = (performance.now() - startMs) / 1000;
  return { admitsPerSecond: Math.round(admitted / seconds), roundTrips: limiter.stats().attempts, admitted };
}

/** The fast-path loops measured, over a limiter with a large live lease. */
function loops(
  agent: Agent,
  hot: Limiter,
  hot2: Limiter,
): Record<'admit' | 'admitAt' | 'admitAll' | 'clock' | 'deny' | 'rateAt', (n: number) => void> {
  // Written by every loop so that the work it measures has a result; never read.
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- a write-only benchmark sink
  let sink = 0;
  // A rate lease of 1e9 tokens/s with a cap it never reaches: every call accrues.
  const rate = new LeaseSlot('rate');
  Object.assign(rate, { balanceTokens: 0, expiresAtUs: Number.MAX_SAFE_INTEGER, hasLease: true });
  rate.startRate(1_000_000_000, 1_000_000, 2 ** 40, 0);
  let rateUs = 0;
  const empty = agent.limiter('e2e-denials-only');
  const both = [
    { limiter: hot, cost: 1 },
    { limiter: hot2, cost: 1 },
  ];
  const clockBaseUs = Math.floor(performance.now() * 1000);
  return {
    admit: (n) => {
      for (let i = 0; i < n; i += 1) if (hot.tryTake()) sink += 1;
    },
    // The same admissions at a time the caller read: what the admission
    // logic itself allocates, without the clock read.
    admitAt: (n) => {
      for (let i = 0; i < n; i += 1) if (hot.tryTakeAt(1, clockBaseUs + (i & 1023))) sink += 1;
    },
    admitAll: (n) => {
      for (let i = 0; i < n; i += 1) if (agent.tryTakeAll(both)) sink += 1;
    },
    clock: (n) => {
      for (let i = 0; i < n; i += 1) if (performance.now() > 0) sink += 1;
    },
    deny: (n) => {
      for (let i = 0; i < n; i += 1) if (!empty.tryTake(2 ** 40)) sink += 1;
    },
    rateAt: (n) => {
      for (let i = 0; i < n; i += 1) if (rate.takeAt(1, (rateUs += 1))) sink += 1;
    },
  };
}

/**
 * allocationProbe — run in a child under --expose-gc and a large young
 * generation (which keeps collections out of a measurement but slows the
 * allocation of the clock's boxed result, so timings are taken elsewhere).
 */
async function allocationProbe(natsUrl: string, prefix: string, calls: number): Promise<void> {
  const { agent, hot, hot2 } = await hotLimiter(natsUrl, prefix);
  const l = loops(agent, hot, hot2);
  const half = Math.floor(calls / 2);
  const bytes = {
    admit: await bytesPerCall(l.admit, calls),
    admitAll: await bytesPerCall(l.admitAll, half),
    admitAt: await bytesPerCall(l.admitAt, calls),
    clock: await bytesPerCall(l.clock, calls),
    deny: await bytesPerCall(l.deny, half),
    rateAt: await bytesPerCall(l.rateAt, calls),
    // Last: recording 'hot' from here on.
    recorded: await recordedBytesPerCall(agent, l.admit, calls),
  };
  await agent.close();
  process.stdout.write(`${JSON.stringify({ ...bytes, ...memoryFigures() })}\n`);
}

/** parse — the validated command line, or null after printing the usage (--help); exits 2 with one line for a bad flag. */
function parse(): BenchArgs | null {
  try {
    const args = parseBenchArgs(process.argv.slice(2));
    if (!args.help) return args;
    console.log(BENCH_USAGE);
    return null;
  } catch (error) {
    if (!(error instanceof BenchArgsError)) throw error;
    console.error(`bench: ${error.message}`);
    process.exit(2);
  }
}

/**
 * fastPathFigures — the fast-path loops and one agent end to end, against a
 * coordinator process of their own (stopped when done), and the allocation
 * probe's figures.
 */
async function fastPathFigures(natsUrl: string, scale: BenchScale): Promise<FastPathFigures> {
  const prefix = `tlbench${process.pid}`;
  const configPath = writeConfig(scratchDir(), {
    subjectPrefix: prefix,
    pools: {
      hot: HOT_POOL,
      hot2: HOT_POOL,
      e2e: { capacity: 1_000_000, refill: '100000000/s', leaseTtlMs: 2000, maxLeaseTokens: LEASE_TOKENS },
      slots: SLOTS_POOL,
    },
  });
  const coordinator = await startCoordinator(natsUrl, configPath);
  const { agent, hot, hot2 } = await hotLimiter(natsUrl, prefix);
  const l = loops(agent, hot, hot2);
  const batches = scale.fastPathBatches;
  const fewer = Math.ceil((2 * batches) / 5);
  const admit = timeCalls(l.admit, batches, 1000);
  const all = timeCalls(l.admitAll, fewer, 1000);
  const deny = timeCalls(l.deny, fewer, 1000);
  const rate = timeCalls(l.rateAt, batches, 1000);
  const recording = await recordingFigures(agent, l.admit, Math.min(batches, 1000));
  const slotsThroughLimiter = await limiterPairs(agent.limiter('slots'), batches);
  const semaphore = await redisPairs(Math.max(20, Math.ceil(batches / 25)), 50);
  const slots = { limiter: slotsThroughLimiter, slot: slotPairs(batches), redis: semaphore.timing, redisAt: semaphore.redisAt };
  const e2e = await endToEnd(agent, scale.endToEndMs);
  await agent.close();

  const probe = spawnProcess('allocation-probe', process.execPath, [
    '--expose-gc',
    '--min-semi-space-size=64',
    '--max-semi-space-size=128',
    fileURLToPath(import.meta.url),
    '--allocation-probe',
    natsUrl,
    prefix,
    String(scale.probeCalls),
  ]);
  const { code } = await probe.exited;
  if (code !== 0) throw new Error(`allocation probe failed: ${probe.stderr()}`);
  const bytes = JSON.parse(probe.lines[probe.lines.length - 1] ?? '{}') as ProbeFigures;
  await stop(coordinator);
  return { admit, all, deny, rate, recording, slots, e2e, e2eMs: scale.endToEndMs, leaseTokens: LEASE_TOKENS, bytes };
}

/** countArgs — a lease count, then `numbers` positive integers, or throws saying what `flag` takes. */
function countArgs(flag: string, takes: string, [n, ...rest]: readonly string[], numbers: number): [LeaseCount, ...number[]] {
  const leases = Number(n);
  const values = rest.map(Number);
  if (!isLeaseCount(leases) || values.length !== numbers || !values.every((v) => Number.isInteger(v) && v > 0))
    throw new Error(`${flag} takes ${takes}, got ${[n, ...rest].join(' ')}`);
  return [leases, ...values];
}

/** modeArgs — a lease mode, then what countArgs reads, or throws saying what `flag` takes. */
function modeArgs(
  flag: string,
  takes: string,
  [mode, ...rest]: readonly string[],
  numbers: number,
): [LeaseModeName, LeaseCount, ...number[]] {
  if (mode !== 'rate' && mode !== 'chunk') throw new Error(`${flag} takes ${takes}, got ${mode}`);
  return [mode, ...countArgs(flag, takes, rest, numbers)];
}

/** leaseScalingProbe — one round of lease-scaling.ts (`mode n measureMs`), run by hand: prints its figure as JSON. */
function leaseScalingProbe(args: readonly string[]): void {
  const [mode, leases, ms] = modeArgs('--lease-scaling-probe', 'rate|chunk, a lease count and a time in ms', args, 1);
  process.stdout.write(`${JSON.stringify(scalingRound(mode, leases, ms as number))}\n`);
}

/** rowSketchProbe — one round of row-sketch.ts (`n measureMs`), run by hand: prints its figure as JSON. */
function rowSketchProbe(args: readonly string[]): void {
  const [leases, ms] = countArgs('--row-sketch-probe', 'a lease count and a time in ms', args, 1);
  process.stdout.write(`${JSON.stringify(rowSketchRound(leases, ms as number))}\n`);
}

/** leaseScalingTurns — a child of lease-scaling.ts's `leaseScaling` (`mode n turnMs turns`). */
function leaseScalingTurns(args: readonly string[]): Promise<void> {
  const takes = 'rate|chunk, a lease count, a turn in ms and a number of turns';
  const [mode, leases, turnMs, turns] = modeArgs('--lease-scaling-turns', takes, args, 2);
  return scalingTurns(mode, leases, turnMs as number, turns as number);
}

/** rowSketchTurnsChild — a child of lease-scaling.ts's `rowSketchScaling` (`n turnMs turns`). */
function rowSketchTurnsChild(args: readonly string[]): Promise<void> {
  const [leases, turnMs, turns] = countArgs('--row-sketch-turns', 'a lease count, a turn in ms and a number of turns', args, 2);
  return rowSketchTurns(leases, turnMs as number, turns as number);
}

async function main(): Promise<void> {
  // The allocation probe is this file run again as a child (above), not a flag for people.
  if (process.argv[2] === '--allocation-probe')
    return allocationProbe(process.argv[3] as string, process.argv[4] as string, Number(process.argv[5]));
  if (process.argv[2] === '--lease-scaling-probe') return leaseScalingProbe(process.argv.slice(3));
  if (process.argv[2] === '--row-sketch-probe') return rowSketchProbe(process.argv.slice(3));
  if (process.argv[2] === '--lease-scaling-turns') return leaseScalingTurns(process.argv.slice(3));
  if (process.argv[2] === '--row-sketch-turns') return rowSketchTurnsChild(process.argv.slice(3));
  const args = parse();
  if (args === null) return;
  const scale = args.quick ? QUICK_SCALE : FULL_SCALE;
  const loadAverageStart = loadavg()[0] ?? Number.NaN;
  const nats = await provideNats();
  try {
    const crowd = await startCrowd(nats.url, scale);
    const fastPath = await fastPathFigures(nats.url, scale);
    const durable = await durableFigures(scale.durableWrites);
    const script = fileURLToPath(import.meta.url);
    const scaling = [
      ...(await leaseScaling(script, 'rate', scale.scalingTurnMs, scale.scalingTurns)),
      ...(await leaseScaling(script, 'chunk', scale.scalingTurnMs, scale.scalingTurns)),
    ];
    const rowSketch = await rowSketchScaling(script, scale.scalingTurnMs, scale.scalingTurns);
    const idle = idlePools(scale.idlePools, scale.idleRestMs);
    const signing = grantSigningFigures(Math.ceil(scale.fastPathBatches / 10));
    const say = args.json ? console.error : console.log;
    // The service's view (per-key limiters, the HTTP middleware) prints its own lines: to stderr under --json.
    const log = console.log;
    if (args.json) console.log = console.error;
    const adoption = await adoptionFigures(nats.url, scale).finally(() => {
      console.log = log;
    });
    const crowded = await crowdFigures(crowd);
    const flooded = await floodFigures(nats.url, scale);
    const machine = { cpus: availableParallelism(), loadAverageStart, loadAverageEnd: loadavg()[0] ?? Number.NaN };
    const figures = {
      fastPath,
      durable,
      scaling,
      rowSketch,
      idle,
      crowded,
      flooded,
      signing,
      machine,
      nats: `${nats.source} ${nats.url}`,
      scale: args.quick ? ('quick' as const) : ('full' as const),
    };
    for (const line of readableLines(figures)) say(line);
    process.stdout.write(`${JSON.stringify({ ...figuresJson(figures), ...adoption })}\n`);
  } finally {
    await stopAll();
    await nats.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
