/**
 * The hot path next to its neighbours, in one process, for `npm run
 * bench:compare`: ns per admission, median and p99 over batches of 1000
 * calls (measure.ts), of
 * - tokenlease's `tryTake` on a live lease (hot-limiter.ts);
 * - the floor: one clock read (`performance.now()`, as tryTake reads its
 *   clock) and one decrement of a number;
 * - the `limiter` package's `RateLimiter.tryRemoveTokens` (synchronous);
 * - rate-limiter-flexible's `RateLimiterMemory.consume`, which returns a
 *   promise: each call awaited before the next, so its figure is a whole
 *   decision as a caller gets it.
 * Every limiter is set so that no call in the run is refused.
 */
import { RateLimiter } from 'limiter';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { stop } from '@tokenlease/harness/processes';
import { HOT_POOL, hotLimiter } from '../hot-limiter.js';
import { timeAsyncCalls, timeCalls, type Timing } from '../measure.js';
import { formatNumber, ratio } from './report.js';

const BATCHES = 2000;
const BATCH_SIZE = 1000;
/** Fewer batches for the awaited calls, each of which costs microseconds. */
const ASYNC_BATCHES = 200;

/** HotPathRow — one limiter's admission cost; `ratioToTryTake` its median over tryTake's. */
export interface HotPathRow {
  readonly table: 'hot-path';
  readonly system: string;
  readonly label: string;
  readonly nsMedian: number;
  readonly nsP99: number;
  readonly calls: number;
  readonly ratioToTryTake: number | null;
}

async function timings(natsUrl: string): Promise<Array<[string, string, Timing]>> {
  const prefix = `tlcomparehot${process.pid}`;
  const coordinator = await startCoordinator(
    natsUrl,
    writeConfig(scratchDir(), { subjectPrefix: prefix, pools: { hot: HOT_POOL, hot2: HOT_POOL } }),
  );
  try {
    const { agent, hot } = await hotLimiter(natsUrl, prefix);
    // Written by every loop so that the work it measures has a result; never read.
    // eslint-disable-next-line @typescript-eslint/no-unused-vars -- a write-only benchmark sink
    let sink = 0;
    let tokens = Number.MAX_SAFE_INTEGER;
    const bucket = new RateLimiter({ tokensPerInterval: 1_000_000_000, interval: 'second' });
    const memory = new RateLimiterMemory({ points: 1_000_000_000, duration: 1 });
    const tryTake = timeCalls(
      (n) => {
        for (let i = 0; i < n; i += 1) if (hot.tryTake()) sink += 1;
      },
      BATCHES,
      BATCH_SIZE,
    );
    const floor = timeCalls(
      (n) => {
        for (let i = 0; i < n; i += 1)
          if (performance.now() > 0 && tokens >= 1) {
            tokens -= 1;
            sink += 1;
          }
      },
      BATCHES,
      BATCH_SIZE,
    );
    const limiter = timeCalls(
      (n) => {
        for (let i = 0; i < n; i += 1) if (bucket.tryRemoveTokens(1)) sink += 1;
      },
      BATCHES,
      BATCH_SIZE,
    );
    const rlf = await timeAsyncCalls(
      async (n) => {
        for (let i = 0; i < n; i += 1) {
          await memory.consume('key', 1);
          sink += 1;
        }
      },
      ASYNC_BATCHES,
      BATCH_SIZE,
    );
    await agent.close();
    return [
      ['tryTake', 'tokenlease tryTake (live lease)', tryTake],
      ['floor', 'floor: one clock read and one decrement', floor],
      ['limiter', 'limiter RateLimiter.tryRemoveTokens', limiter],
      ['rlf-memory', 'rate-limiter-flexible RateLimiterMemory.consume (awaited)', rlf],
    ];
  } finally {
    await stop(coordinator);
  }
}

/** hotPathRows — the hot-path rows, against a coordinator process of their own on `natsUrl` (stopped when done). */
export async function hotPathRows(natsUrl: string): Promise<HotPathRow[]> {
  const measured = await timings(natsUrl);
  const base = measured[0]?.[2].nsMedian ?? Number.NaN;
  return measured.map(([system, label, t]) => ({
    table: 'hot-path',
    system,
    label,
    nsMedian: t.nsMedian,
    nsP99: t.nsP99,
    calls: t.calls,
    ratioToTryTake: ratio(t.nsMedian, base),
  }));
}

/** hotPathTable — the rows as a Markdown table. */
export function hotPathTable(rows: readonly HotPathRow[]): string[] {
  return [
    '| admission, one process | ns median | ns p99 | median / tryTake |',
    '| --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.label} | ${formatNumber(r.nsMedian)} | ${formatNumber(r.nsP99)} | ×${formatNumber(r.ratioToTryTake)} |`),
  ];
}
