/**
 * Measurement helpers for `npm run bench` and `npm run bench:compare`:
 * batched timing of a synchronous or an awaited call, and heap growth per
 * call with garbage collection ruled out.
 */
import { PerformanceObserver } from 'node:perf_hooks';

export interface Timing {
  readonly nsMedian: number;
  readonly nsP99: number;
  readonly calls: number;
}

/**
 * timeCalls — runs `body(batchSize)` `batches` times and returns the median
 * and 99th percentile of ns per call over batches. Timing each call alone
 * would measure the timer; a batch of 1000 amortizes it.
 */
export function timeCalls(body: (n: number) => void, batches: number, batchSize: number): Timing {
  body(batchSize * 50); // warm up and let the optimizer settle
  const perCall: number[] = [];
  for (let b = 0; b < batches; b += 1) {
    const start = process.hrtime.bigint();
    body(batchSize);
    perCall.push(Number(process.hrtime.bigint() - start) / batchSize);
  }
  return timing(perCall, batches * batchSize);
}

/**
 * timeAsyncCalls — timeCalls for a call that returns a promise: `body(n)`
 * makes n calls one after another, each awaited before the next, so a
 * figure is the time from one decision's call to its answer, promise and
 * microtask turns included.
 */
export async function timeAsyncCalls(body: (n: number) => Promise<void>, batches: number, batchSize: number): Promise<Timing> {
  await body(batchSize * 50);
  const perCall: number[] = [];
  for (let b = 0; b < batches; b += 1) {
    const start = process.hrtime.bigint();
    await body(batchSize);
    perCall.push(Number(process.hrtime.bigint() - start) / batchSize);
  }
  return timing(perCall, batches * batchSize);
}

function timing(perCall: number[], calls: number): Timing {
  perCall.sort((x, y) => x - y);
  const at = (q: number): number => perCall[Math.min(perCall.length - 1, Math.floor(q * perCall.length))] as number;
  return { nsMedian: round(at(0.5)), nsP99: round(at(0.99)), calls };
}

/**
 * bytesPerCall — heap growth per call over `calls` calls, measured only in a
 * run during which no garbage collection happened (else it retries with
 * fewer calls). Needs `--expose-gc`; a large young generation
 * (`--max-semi-space-size`) keeps collections out of the run.
 */
export async function bytesPerCall(body: (n: number) => void, calls: number): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc to measure allocations');
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    body(10_000);
    for (let n = calls; n >= 1000; n = Math.floor(n / 4)) {
      const collectionsBefore = collections;
      gc();
      const before = process.memoryUsage().heapUsed;
      body(n);
      const after = process.memoryUsage().heapUsed;
      // Observer entries arrive asynchronously; the forced collection is the only one allowed.
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (collections - collectionsBefore === 1) return round(Math.max(0, after - before) / n);
    }
  } finally {
    observer.disconnect();
  }
  throw new Error('a garbage collection ran during every measurement; raise --max-semi-space-size');
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
