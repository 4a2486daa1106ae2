/**
 * Coordinator memory figures for `npm run bench` (run under --expose-gc):
 * heap bytes per live lease, and per template pool once it has been
 * forgotten (idle eviction), both measured on the real core.
 */
import { CoordinatorCore, parseCoordinatorConfig } from '@tokenlease/coordinator/internal';
import { encodeMessage, subjectFor } from '@tokenlease/shared';
import { acquireRequest } from '@tokenlease/shared/testing';
import { HOST_UPTIME_US } from './renewal-batches.js';

const S = 1_000_000;

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc to measure memory');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function acquire(core: CoordinatorCore<number>, pool: string, agentId: string, nowUs: number): void {
  const req = acquireRequest({ agentId, pool });
  core.receive(subjectFor('tokenlease', 'acquire', pool), encodeMessage(req), 0, nowUs);
}

/** memoryFigures — bytes per live lease (of `leases`), and per evicted template pool (of `pools`). */
export function memoryFigures(leases = 100_000, pools = 20_000): { bytesPerLease: number; bytesPerEvictedPool: number; poolsLeft: number } {
  const config = parseCoordinatorConfig('bench', {
    pools: { big: { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: 60_000, maxLeaseTokens: 10 } },
    templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, idleEvictMs: 1000 } },
  });
  const core = new CoordinatorCore<number>(config, 1, HOST_UPTIME_US);
  const t0 = HOST_UPTIME_US + 70 * S; // past the quiet period (the longest TTL, 60 s)
  core.tick(t0);
  const before = heapAfterGc();
  for (let i = 0; i < leases; i += 1) acquire(core, 'big', `agent-${i}`, t0);
  const withLeases = heapAfterGc();
  const bytesPerLease = (withLeases - before) / leases;

  const beforePools = heapAfterGc();
  for (let i = 0; i < pools; i += 1) acquire(core, `tenant:${i}`, 'a', t0);
  // The tenant leases lapse 1 s later (reclaimed at the first tick after),
  // their lost tokens refill in 0.5 s, and by then they have been idle for 1 s.
  core.tick(t0 + 2 * S);
  core.tick(t0 + 4 * S);
  const afterEviction = heapAfterGc();
  return {
    bytesPerLease: Math.round(bytesPerLease),
    bytesPerEvictedPool: Math.max(0, Math.round((afterEviction - beforePools) / pools)),
    poolsLeft: core.poolCount - 1,
  };
}
