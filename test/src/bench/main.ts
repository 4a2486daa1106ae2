/**
 * npm run bench — the agent's fast path and one agent end to end.
 *
 * 1. tryTake: ns per call (median and p99 over batches of 1000) on a live
 *    lease with a large balance, for admissions and for denials; heap bytes
 *    allocated per call.
 * 2. End to end: one agent admitting as fast as it can from a pool whose
 *    refill is not the limit, with leases of `maxLeaseTokens` tokens; the
 *    lease keeper tops up over real NATS from a coordinator process.
 * Prints readable lines, then one JSON line of the figures.
 */
import { Agent, type Limiter } from '@tokenlease/agent';
import { scratchDir, startCoordinator, writeConfig } from '../harness/fleet.js';
import { provideNats } from '../harness/nats.js';
import { stopAll } from '../harness/processes.js';
import { bytesPerCall, timeCalls } from './measure.js';

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

async function main(): Promise<void> {
  const nats = await provideNats();
  try {
    const configPath = writeConfig(scratchDir(), {
      subjectPrefix: `tlbench${process.pid}`,
      pools: {
        hot: { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: 2000, maxLeaseTokens: 500_000_000, minGrantTokens: 1 },
        e2e: { capacity: 1_000_000, refill: '100000000/s', leaseTtlMs: 2000, maxLeaseTokens: LEASE_TOKENS },
      },
    });
    await startCoordinator(nats.url, configPath);
    const agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: `tlbench${process.pid}`, keeper: { initialTokens: 400_000_000 } });
    const hot = agent.limiter('hot');
    await waitForBalance(hot, 100_000_000, 10_000);

    let sink = 0;
    const admit = (n: number): void => {
      for (let i = 0; i < n; i += 1) if (hot.tryTake()) sink += 1;
    };
    const admitTiming = timeCalls(admit, 5000, 1000);
    const admitBytes = await bytesPerCall(admit, 2_000_000);

    // The same admissions at a time the caller read: what the admission
    // logic itself allocates, without the clock read.
    const clockBaseUs = Math.floor(performance.now() * 1000);
    const admitAt = (n: number): void => {
      for (let i = 0; i < n; i += 1) if (hot.tryTakeAt(1, clockBaseUs + (i & 1023))) sink += 1;
    };
    const admitAtBytes = await bytesPerCall(admitAt, 2_000_000);
    const readClock = (n: number): void => {
      for (let i = 0; i < n; i += 1) if (performance.now() > 0) sink += 1;
    };
    const clockBytes = await bytesPerCall(readClock, 2_000_000);

    const empty = agent.limiter('e2e-denials-only');
    const deny = (n: number): void => {
      for (let i = 0; i < n; i += 1) if (!empty.tryTake(2 ** 40)) sink += 1;
    };
    const denyTiming = timeCalls(deny, 2000, 1000);
    const denyBytes = await bytesPerCall(deny, 1_000_000);

    const e2e = await endToEnd(agent);
    await agent.close();

    console.log(`tryTake admit: median ${admitTiming.nsMedian} ns, p99 ${admitTiming.nsP99} ns per call (${admitTiming.calls} calls in batches of 1000); ${admitBytes} heap bytes per call`);
    console.log(`tryTakeAt (time supplied by the caller): ${admitAtBytes} heap bytes per call; performance.now() alone: ${clockBytes} heap bytes per call`);
    console.log(`tryTake deny:  median ${denyTiming.nsMedian} ns, p99 ${denyTiming.nsP99} ns per call; ${denyBytes} heap bytes per call`);
    console.log(`one agent end to end: ${e2e.admitsPerSecond} admissions/s over ${E2E_MS} ms with ${LEASE_TOKENS}-token leases (${e2e.roundTrips} round-trips, ${e2e.admitted} admitted)`);
    console.log(`NATS: ${nats.source} ${nats.url}; node ${process.version}; checksum ${sink > 0 ? 'ok' : 'none'}`);
    console.log(
      JSON.stringify({
        tryTakeNsMedian: admitTiming.nsMedian,
        tryTakeNsP99: admitTiming.nsP99,
        tryTakeBytesPerCall: admitBytes,
        tryTakeAtBytesPerCall: admitAtBytes,
        clockReadBytesPerCall: clockBytes,
        tryTakeDenyNsMedian: denyTiming.nsMedian,
        tryTakeDenyNsP99: denyTiming.nsP99,
        tryTakeDenyBytesPerCall: denyBytes,
        agentAdmitsPerSecond: e2e.admitsPerSecond,
        agentRoundTrips: e2e.roundTrips,
        leaseTokens: LEASE_TOKENS,
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
    console.error(`bench: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    process.exit(1);
  },
);
