/**
 * Per-key limiters at scale, for `npm run bench`: 10,000 limiters (one per
 * tenant pool of a coordinator template; the scale's `idleLimiters`), each
 * used once and then idle. Measured in a child process of its own (`node
 * --expose-gc limiters.js <natsUrl> <scale as JSON>`), so its CPU time and
 * heap are the limiters' alone:
 * - CPU: the share of one core the idle agent uses over 5 s (`idleWindowMs`),
 *   once every limiter has returned its lease (keeper.idleReturnMs 200 ms);
 * - timers: the keeper timers armed then (an idle limiter should hold none);
 * - memory: heap bytes per idle limiter, after garbage collection;
 * - dropping: 2,000 more limiters (`droppedLimiters`) with limiterIdleMs
 *   1000: how many remain 2.5 s after their last use, and the heap per
 *   limiter left then.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Agent } from '@tokenlease/agent';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { spawnProcess, stopAll } from '@tokenlease/harness/processes';
import type { BenchScale } from './args.js';

/** ProbeScale — what of the bench's scale the probe needs. */
type ProbeScale = Pick<BenchScale, 'idleLimiters' | 'idleWindowMs' | 'droppedLimiters'>;

const BATCH = 500;
const IDLE_RETURN_MS = 200;
const DROP_AFTER_MS = 1000;

export interface LimiterFigures {
  readonly idleLimiters: number;
  /** Share of one core used by the agent with every limiter idle, percent. */
  readonly idleLimitersCpuPercent: number;
  /** Keeper timers armed with every limiter idle (Agent.timerCount). */
  readonly idleLimitersTimers: number;
  readonly bytesPerIdleLimiter: number;
  /** Limiters still in the agent `DROP_AFTER_MS` + 1.5 s after their last use, with limiterIdleMs = DROP_AFTER_MS. */
  readonly limitersLeftAfterDrop: number;
  readonly droppedLimiters: number;
  readonly bytesPerDroppedLimiter: number;
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * useAll — `count` tenant limiters on `agent`, each asked once; resolves
 * once every one has heard from its pool. In batches: 10,000 first
 * requests at once would mostly time out at the coordinator making their
 * pools, and measure its retries instead.
 */
async function useAll(agent: Agent, tag: string, count: number): Promise<void> {
  for (let first = 0; first < count; first += BATCH) {
    const batch = [];
    for (let i = first; i < Math.min(count, first + BATCH); i += 1) {
      const limiter = agent.limiter(`tenant:${tag}${i}`);
      limiter.tryTake();
      batch.push(limiter);
    }
    for (const limiter of batch) await limiter.ready(30_000);
  }
}

async function probe(natsUrl: string, scale: ProbeScale): Promise<LimiterFigures> {
  const { idleLimiters, idleWindowMs, droppedLimiters } = scale;
  const prefix = `tlbenchkeys${process.pid}`;
  const config = writeConfig(scratchDir(), {
    subjectPrefix: prefix,
    templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, maxPools: 100_000 } },
  });
  await startCoordinator(natsUrl, config);
  await sleep(1200); // past the quiet period: the limiters get real leases
  const keeper = { idleReturnMs: IDLE_RETURN_MS };
  const heap0 = heapAfterGc();
  const agent = await Agent.connect({ natsUrl, subjectPrefix: prefix, keeper, limiterIdleMs: 3_600_000 });
  await useAll(agent, 'a', idleLimiters);
  await sleep(IDLE_RETURN_MS * 5 + 1000); // every lease returned
  const heap1 = heapAfterGc();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await sleep(idleWindowMs);
  const cpu = process.cpuUsage(cpu0);
  const cpuPercent = ((cpu.user + cpu.system) / 1000 / (performance.now() - t0)) * 100;
  const idleTimers = agent.timerCount;
  const bytesPerIdle = (heap1 - heap0) / idleLimiters;
  await agent.close({ timeoutMs: 2000 });

  const dropping = await Agent.connect({ natsUrl, subjectPrefix: prefix, keeper, limiterIdleMs: DROP_AFTER_MS });
  const heap2 = heapAfterGc();
  await useAll(dropping, 'b', droppedLimiters);
  await sleep(DROP_AFTER_MS + 1500);
  const left = dropping.limiterCount;
  const heap3 = heapAfterGc();
  await dropping.close({ timeoutMs: 2000 });
  return {
    idleLimiters,
    idleLimitersCpuPercent: Math.round(cpuPercent * 100) / 100,
    idleLimitersTimers: idleTimers,
    bytesPerIdleLimiter: Math.round(bytesPerIdle),
    limitersLeftAfterDrop: left,
    droppedLimiters,
    bytesPerDroppedLimiter: Math.max(0, Math.round((heap3 - heap2) / droppedLimiters)),
  };
}

/** limiterFigures — runs the probe at `scale` in a child with --expose-gc and returns its figures. */
export async function limiterFigures(natsUrl: string, scale: BenchScale): Promise<LimiterFigures> {
  const { idleLimiters, idleWindowMs, droppedLimiters } = scale;
  const probeScale = JSON.stringify({ idleLimiters, idleWindowMs, droppedLimiters });
  const child = spawnProcess('limiters-probe', process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), natsUrl, probeScale]);
  const { code } = await child.exited;
  if (code !== 0) throw new Error(`limiters probe failed: ${child.stderr()}`);
  return JSON.parse(child.lines.at(-1) ?? '{}') as LimiterFigures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  probe(process.argv[2] as string, JSON.parse(process.argv[3] ?? '{}') as ProbeScale).then(
    async (figures) => {
      await stopAll();
      process.stdout.write(`${JSON.stringify(figures)}\n`);
      process.exit(0);
    },
    async (error: unknown) => {
      await stopAll();
      console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exit(1);
    },
  );
}
