/**
 * The durable mode's write path for `npm run bench`: what writing a grant
 * to Redis before replying costs. One pool claimed by one member; each
 * write is the fenced script with the level and one lease, as the durable
 * service sends for a single grant. Measured one at a time (the latency a
 * request pays) and with 16 pools writing at once (what a coordinator
 * serving many pools sustains). Redis: `$REDIS_URL`, else a private one;
 * then a private Redis Cluster (three primaries with one replica each,
 * append-only, fsync always), with each write confirmed by one replica
 * (WAIT 1, the cluster's default) and without.
 */
import { connectRedisStore, resolveRedisOptions, type PoolChanges, type RedisConnectOptions } from '@tokenlease/coordinator/internal';
import type { LeaseGrant } from '@tokenlease/shared';
import { provideRedis } from '@tokenlease/harness/redis';
import { startRedisCluster } from '@tokenlease/harness/redis-cluster';

/** WriteFigures — one store's write before reply: latency one at a time, throughput with 16 pools at once. */
export interface WriteFigures {
  readonly writeUsMedian: number;
  readonly writeUsP99: number;
  readonly writesPerSecond16Pools: number;
}

export interface DurableFigures extends WriteFigures {
  readonly redis: string;
  /** On a Redis Cluster, each write confirmed by one replica (WAIT 1). */
  readonly clusterConfirmed: WriteFigures;
  /** On the same cluster, without replica confirmation. */
  readonly clusterUnconfirmed: WriteFigures;
}

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

/** durableFigures — the write path timed over `writes` writes on one Redis, on a cluster with and without replica confirmation. */
export async function durableFigures(writes: number): Promise<DurableFigures> {
  const redis = await provideRedis();
  let single: WriteFigures;
  try {
    single = await writeFigures(redis.url, writes);
  } finally {
    await redis.stop();
  }
  const cluster = await startRedisCluster();
  try {
    const on = (replicas: string): RedisConnectOptions => {
      const options = resolveRedisOptions({ redis: cluster.url, 'redis-replicas': replicas }, {});
      if (options === null) throw new Error('no cluster options');
      return options;
    };
    const clusterConfirmed = await writeFigures(on('1'), writes);
    const clusterUnconfirmed = await writeFigures(on('0'), writes);
    return { ...single, redis: `${redis.source} ${redis.url}`, clusterConfirmed, clusterUnconfirmed };
  } finally {
    await cluster.stop();
  }
}

/** writeFigures — the write path's latency over `writes` writes and throughput on the store `target` names. */
async function writeFigures(target: string | RedisConnectOptions, writes: number): Promise<WriteFigures> {
  const prefix = `tlbench${process.pid}`;
  const store = await connectRedisStore(target, { keyPrefix: prefix });
  try {
    const units = Array.from({ length: POOLS }, (_, i) => `pool${i}`);
    const epochs: number[] = [];
    for (const unit of units) {
      const claim = await store.claim(unit, 'bench', 60_000);
      if (!claim.taken) throw new Error(`bench could not claim ${unit}`);
      epochs.push(claim.epoch);
    }
    const latenciesUs: number[] = [];
    for (let i = 0; i < writes; i += 1) {
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
        for (let i = 0; i < writes / 4; i += 1) await store.write(unit, 'bench', epochs[p] as number, changesFor(i));
      }),
    );
    const writesPerSecond = Math.round((POOLS * (writes / 4)) / ((performance.now() - startMs) / 1000));
    for (const [p, unit] of units.entries()) await store.forget(unit, 'bench', epochs[p] as number);
    await store.heartbeat('bench', 0);
    return { writeUsMedian: at(0.5), writeUsP99: at(0.99), writesPerSecond16Pools: writesPerSecond };
  } finally {
    await store.close();
  }
}
