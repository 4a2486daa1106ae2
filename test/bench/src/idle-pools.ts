/**
 * Idle template pools, for `npm run bench`: what a coordinator core spends
 * at rest, and on one renewal, while it holds many pools nobody uses.
 *
 * A fresh core with a template (`tenant:*`, idle pools kept for an hour)
 * gets one acquire for each of `pools` tenants, then each lease expires and
 * its pool refills: `pools` idle template pools. Then, over `restMs` of
 * virtual time, the core is driven as the adapter's timer drives it (a tick
 * at `nextDeadlineUs`, and at least every TICK_MS_MAX), and one tenant
 * renews every 10 ms of virtual time. Timed (the process's CPU time, as in
 * lease-scaling.ts): the ticks and deadline reads at rest, as CPU ms per
 * second of virtual time (a core at rest costs this share of one CPU), and
 * each renewal's `receive` plus the deadline read after it, p99 in µs.
 */
import { CoordinatorCore, parseCoordinatorConfig, TICK_MS_MAX } from '@tokenlease/coordinator/internal';
import { encodeMessage, subjectFor, type LeaseRequest } from '@tokenlease/shared';
import { HOST_UPTIME_US } from './renewal-batches.js';

const PREFIX = 'tokenlease';
const TTL_MS = 1000;
const US_PER_MS = 1000;
const RENEW_EVERY_US = 10_000;

/** IdlePoolFigures — the core at rest with `pools` idle template pools. */
export interface IdlePoolFigures {
  readonly pools: number;
  /** CPU ms the core spent per second of virtual time at rest (ticks and deadline reads). */
  readonly restCpuMsPerSecond: number;
  /** A renewal's receive and the deadline read after it, CPU µs: median and p99. */
  readonly renewalUsMedian: number;
  readonly renewalUsP99: number;
}

function acquire(tenant: number, seq: number, leaseId: string | null): Uint8Array {
  const req: LeaseRequest = {
    v: 2,
    op: 'acquire',
    agentId: `agent-${tenant}`,
    pool: `tenant:${tenant}`,
    leaseSecret: `s${tenant.toString(36).padStart(23, '0')}`,
    seq,
    leaseId,
    tokensLeft: 0,
    tokensWanted: 1,
    demandPerSecond: 1,
    holdMs: 0,
  };
  return encodeMessage(req);
}

function cpuUs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return used.user + used.system;
}

/** idlePools — the figures with `pools` idle template pools over `restMs` of virtual time. */
export function idlePools(pools: number, restMs: number): IdlePoolFigures {
  const config = parseCoordinatorConfig('bench', {
    subjectPrefix: PREFIX,
    pools: {},
    // One client makes every pool: its identity may make them all.
    templates: {
      'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: TTL_MS, idleEvictMs: 3_600_000, maxPools: pools, maxPoolsPerIdentity: pools },
    },
  });
  const core = new CoordinatorCore<number>(config, 1, HOST_UPTIME_US);
  // Past the quiet period, then one acquire per tenant: `pools` pools, each with a lease.
  let nowUs = HOST_UPTIME_US + 2 * TTL_MS * US_PER_MS;
  for (let t = 0; t < pools; t += 1) {
    const out = core.receive(subjectFor(PREFIX, 'acquire', `tenant:${t}`), acquire(t, 1, null), t, nowUs);
    if (out[0]?.reply.kind !== 'grant') throw new Error(`tenant ${t}: ${JSON.stringify(out[0]?.reply)}`);
  }
  // Every lease expires and every pool refills: all idle.
  nowUs += 3 * TTL_MS * US_PER_MS;
  core.tick(nowUs);
  if (core.poolCount !== pools) throw new Error(`${core.poolCount} pools of ${pools}`);

  const endUs = nowUs + restMs * US_PER_MS;
  let restCpuUs = 0;
  const renewals: number[] = [];
  let nextRenewUs = nowUs + RENEW_EVERY_US;
  let tenant = 0;
  const seqs = new Map<number, number>();
  while (nowUs < endUs) {
    const started = process.cpuUsage();
    const deadlineUs = core.nextDeadlineUs();
    const tickUs = Math.min(nowUs + TICK_MS_MAX * US_PER_MS, deadlineUs);
    restCpuUs += cpuUs(started);
    // The next event: the adapter's tick, or the next renewal.
    if (nextRenewUs <= tickUs) {
      nowUs = nextRenewUs;
      nextRenewUs += RENEW_EVERY_US;
      tenant = (tenant + 7919) % pools;
      const seq = (seqs.get(tenant) ?? 1) + 1;
      seqs.set(tenant, seq);
      const payload = acquire(tenant, seq, null);
      const subject = subjectFor(PREFIX, 'acquire', `tenant:${tenant}`);
      const renewal = process.cpuUsage();
      core.receive(subject, payload, -1, nowUs);
      core.touchedDeadlineUs();
      renewals.push(cpuUs(renewal));
      continue;
    }
    nowUs = tickUs;
    const ticking = process.cpuUsage();
    core.tick(nowUs);
    restCpuUs += cpuUs(ticking);
  }
  renewals.sort((a, b) => a - b);
  const at = (q: number): number => renewals[Math.min(renewals.length - 1, Math.floor(q * renewals.length))] ?? 0;
  return {
    pools,
    restCpuMsPerSecond: Math.round((restCpuUs / 1000 / (restMs / 1000)) * 100) / 100,
    renewalUsMedian: Math.round(at(0.5)),
    renewalUsP99: Math.round(at(0.99)),
  };
}
