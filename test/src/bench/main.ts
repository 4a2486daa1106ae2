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
 * Prints readable lines, then one JSON line of the figures.
 */
import { Agent, LeaseSlot, type Limiter } from '@tokenlease/agent';
import { scratchDir, startCoordinator, writeConfig } from '../harness/fleet.js';
import { provideNats } from '../harness/nats.js';
import { spawnProcess, stopAll } from '../harness/processes.js';
import { fileURLToPath } from 'node:url';
import { durableFigures } from './durable.js';
import { bytesPerCall, timeCalls } from './measure.js';
import { memoryFigures } from './memory.js';
import { benchOutput } from './output.js';
import { adoptionFigures } from './adoption.js';

const LEASE_TOKENS = 10_000;
const E2E_MS = 3000;

async function waitForBalance(limiter: Limiter, tokens: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (limiter.stats().balanceTokens < tokens) {
    if (Date.now() > deadline) throw new Error(`no lease of ${tokens} tokens within ${timeoutMs} ms: ${JSON.stringify(limiter.stats())}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function endToEnd(agent: Agent): Promise<{ admitsPerSecond: number; roundTrips: number; admitted: number }> {
  const limiter = agent.limiter('e2e');
  await waitForBalance(limiter, 1, 5000);
  const startMs = performance.now();
  let admitted = 0;
  while (performance.now() - startMs < E2E_MS) {
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

async function hotLimiter(natsUrl: string, prefix: string): Promise<{ agent: Agent; hot: Limiter; hot2: Limiter }> {
  const agent = await Agent.connect({ natsUrl, subjectPrefix: prefix, keeper: { initialTokens: 400_000_000 } });
  const hot = agent.limiter('hot');
  const hot2 = agent.limiter('hot2');
  await waitForBalance(hot, 100_000_000, 10_000);
  await waitForBalance(hot2, 100_000_000, 10_000);
  return { agent, hot, hot2 };
}

/**
 * allocationProbe — run in a child under --expose-gc and a large young
 * generation (which keeps collections out of a measurement but slows the
 * allocation of the clock's boxed result, so timings are taken elsewhere).
 */
async function allocationProbe(natsUrl: string, prefix: string): Promise<void> {
  const { agent, hot, hot2 } = await hotLimiter(natsUrl, prefix);
  const l = loops(agent, hot, hot2);
  const bytes = {
    admit: await bytesPerCall(l.admit, 2_000_000),
    admitAll: await bytesPerCall(l.admitAll, 1_000_000),
    admitAt: await bytesPerCall(l.admitAt, 2_000_000),
    clock: await bytesPerCall(l.clock, 2_000_000),
    deny: await bytesPerCall(l.deny, 1_000_000),
    rateAt: await bytesPerCall(l.rateAt, 2_000_000),
  };
  await agent.close();
  process.stdout.write(`${JSON.stringify({ ...bytes, ...memoryFigures() })}\n`);
}

async function main(): Promise<void> {
  if (process.argv[2] === '--allocation-probe') return allocationProbe(process.argv[3] as string, process.argv[4] as string);
  const out = benchOutput(process.argv.slice(2));
  const nats = await provideNats();
  const prefix = `tlbench${process.pid}`;
  try {
    const configPath = writeConfig(scratchDir(), {
      subjectPrefix: prefix,
      pools: {
        hot: { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: 2000, maxLeaseTokens: 500_000_000, minGrantTokens: 1 },
        hot2: { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: 2000, maxLeaseTokens: 500_000_000, minGrantTokens: 1 },
        e2e: { capacity: 1_000_000, refill: '100000000/s', leaseTtlMs: 2000, maxLeaseTokens: LEASE_TOKENS },
      },
    });
    await startCoordinator(nats.url, configPath);
    const { agent, hot, hot2 } = await hotLimiter(nats.url, prefix);
    const l = loops(agent, hot, hot2);
    const admitTiming = timeCalls(l.admit, 5000, 1000);
    const allTiming = timeCalls(l.admitAll, 2000, 1000);
    const denyTiming = timeCalls(l.deny, 2000, 1000);
    const rateTiming = timeCalls(l.rateAt, 5000, 1000);
    const e2e = await endToEnd(agent);
    await agent.close();

    const probe = spawnProcess('allocation-probe', process.execPath, [
      '--expose-gc',
      '--min-semi-space-size=64',
      '--max-semi-space-size=128',
      fileURLToPath(import.meta.url),
      '--allocation-probe',
      nats.url,
      prefix,
    ]);
    const { code } = await probe.exited;
    if (code !== 0) throw new Error(`allocation probe failed: ${probe.stderr()}`);
    const bytes = JSON.parse(probe.lines[probe.lines.length - 1] ?? '{}') as Record<
      'admit' | 'admitAt' | 'admitAll' | 'clock' | 'deny' | 'rateAt' | 'bytesPerLease' | 'bytesPerEvictedPool' | 'poolsLeft',
      number
    >;
    const durable = await durableFigures();
    const adoption = await adoptionFigures(nats.url);

    console.log(
      `tryTake admit: median ${admitTiming.nsMedian} ns, p99 ${admitTiming.nsP99} ns per call (${admitTiming.calls} calls in batches of 1000); ${bytes.admit} heap bytes per call`,
    );
    console.log(
      `  of which the clock read: performance.now() alone allocates ${bytes.clock} bytes per call (V8 boxes its result); tryTakeAt with a time the caller read: ${bytes.admitAt} bytes per call`,
    );
    console.log(
      `tryTakeAll over 2 pools: median ${allTiming.nsMedian} ns, p99 ${allTiming.nsP99} ns per call; ${bytes.admitAll} heap bytes per call`,
    );
    console.log(`tryTake deny:  median ${denyTiming.nsMedian} ns, p99 ${denyTiming.nsP99} ns per call; ${bytes.deny} heap bytes per call`);
    console.log(
      `rate lease tryTakeAt (accrues every call): median ${rateTiming.nsMedian} ns, p99 ${rateTiming.nsP99} ns per call; ${bytes.rateAt} heap bytes per call`,
    );
    console.log(
      `durable write before reply (Redis ${durable.redis}): median ${durable.writeUsMedian} µs, p99 ${durable.writeUsP99} µs per write; ${durable.writesPerSecond16Pools} writes/s with 16 pools writing at once`,
    );
    console.log(
      `one agent end to end: ${e2e.admitsPerSecond} admissions/s over ${E2E_MS} ms with ${LEASE_TOKENS}-token leases (${e2e.roundTrips} round-trips, ${e2e.admitted} admitted)`,
    );
    console.log(
      `coordinator memory: ${bytes.bytesPerLease} heap bytes per live lease; ${bytes.bytesPerEvictedPool} per template pool after idle eviction (${bytes.poolsLeft} of 20,000 left)`,
    );
    console.log(`NATS: ${nats.source} ${nats.url}; node ${process.version}`);
    out.emit(
      JSON.stringify({
        tryTakeNsMedian: admitTiming.nsMedian,
        tryTakeNsP99: admitTiming.nsP99,
        tryTakeBytesPerCall: bytes.admit,
        tryTakeAtBytesPerCall: bytes.admitAt,
        clockReadBytesPerCall: bytes.clock,
        tryTakeAllNsMedian: allTiming.nsMedian,
        tryTakeAllBytesPerCall: bytes.admitAll,
        tryTakeDenyNsMedian: denyTiming.nsMedian,
        tryTakeDenyNsP99: denyTiming.nsP99,
        tryTakeDenyBytesPerCall: bytes.deny,
        rateTakeAtNsMedian: rateTiming.nsMedian,
        rateTakeAtBytesPerCall: bytes.rateAt,
        durableWriteUsMedian: durable.writeUsMedian,
        durableWriteUsP99: durable.writeUsP99,
        durableWritesPerSecond16Pools: durable.writesPerSecond16Pools,
        agentAdmitsPerSecond: e2e.admitsPerSecond,
        agentRoundTrips: e2e.roundTrips,
        coordinatorBytesPerLease: bytes.bytesPerLease,
        coordinatorBytesPerEvictedPool: bytes.bytesPerEvictedPool,
        leaseTokens: LEASE_TOKENS,
        ...adoption,
      }),
    );
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
