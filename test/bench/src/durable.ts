/**
 * The durable mode's write path for `npm run bench`: what writing a grant
 * to Redis before replying costs. One pool claimed by one member; each
 * write is the fenced script with the level and one lease, as the durable
 * service sends for a single grant. Measured one at a time (the latency a
 * request pays) and with 16 pools writing at once (what a coordinator
 * serving many pools sustains). Redis: `$REDIS_URL`, else a private one.
 */
import { connectRedisStore, type PoolChanges } from '@tokenlease/coordinator';
import type { LeaseGrant } from '@tokenlease/shared';
import { provideRedis } from '@tokenlease/harness/redis';

export interface DurableFigures {
  readonly writeUsMedian: number;
  readonly writeUsP99: number;
  readonly writesPerSecond16Pools: number;
  readonly redis: string;
}

const WRITES = 2000;
const POOLS = 16;

function changesFor(i: number): PoolChanges {
  const lastReply: LeaseGrant = {
    v: 2,
    kind: 'grant',
    seq: i,
    leaseId: '7-1',
    tokensGranted: 20,
    tokensHeld: 20,
    ttlMs: 2000,
    epoch: 7,
    maxLeaseTokens: 50,
    capacityTokens: 500,
    refillTokens: 1000,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
  };
  return {
    levelTokens: 480 - (i % 400),
    upserts: [{ agentId: `agent-${i % 20}`, secret: 'bench-secret-of-128-bits', leaseId: '7-1', boundTokens: 20, lastSeq: i, lastReply }],
    removes: [],
  };
}

export async function durableFigures(): Promise<DurableFigures> {
  const redis = await provideRedis();
  const prefix = `tlbench${process.pid}`;
  const store = await connectRedisStore(redis.url, { keyPrefix: prefix });
  try {
    const units = Array.from({ length: POOLS }, (_, i) => `pool${i}`);
    const epochs: number[] = [];
    for (const unit of units) {
      const claim = await store.claim(unit, 'bench', 60_000);
      if (!claim.taken) throw new Error(`bench could not claim ${unit}`);
      epochs.push(claim.epoch);
    }
    const latenciesUs: number[] = [];
    for (let i = 0; i < WRITES; i += 1) {
      const start = process.hrtime.bigint();
      if (!(await store.write('pool0', 'bench', epochs[0] as number, changesFor(i)))) throw new Error('bench write was fenced');
      latenciesUs.push(Number(process.hrtime.bigint() - start) / 1000);
    }
    latenciesUs.sort((a, b) => a - b);
    const at = (q: number): number =>
      Math.round(latenciesUs[Math.min(latenciesUs.length - 1, Math.floor(q * latenciesUs.length))] as number);
    const startMs = performance.now();
    await Promise.all(
      units.map(async (unit, p) => {
        for (let i = 0; i < WRITES / 4; i += 1) await store.write(unit, 'bench', epochs[p] as number, changesFor(i));
      }),
    );
    const writesPerSecond = Math.round((POOLS * (WRITES / 4)) / ((performance.now() - startMs) / 1000));
    for (const [p, unit] of units.entries()) await store.forget(unit, 'bench', epochs[p] as number);
    await store.heartbeat('bench', 0);
    return { writeUsMedian: at(0.5), writeUsP99: at(0.99), writesPerSecond16Pools: writesPerSecond, redis: `${redis.source} ${redis.url}` };
  } finally {
    await store.close();
    await redis.stop();
  }
}
