/**
 * faultsEndUs — when the last fault or partition of a run is over, µs of
 * traffic time: each fault's own span, with one TTL (or the ownership
 * hand-over) more while the leases it stranded or kept run out. The checks
 * that judge a fleet once its faults settle start from it (converge.ts,
 * fair-share.ts).
 */
import type { Fault, SimConfig } from './sim-config.js';
import { RECLAIM_ARMED_US, SIM_OWNERSHIP_TTL_MS } from './sim-events.js';

export function faultsEndUs(config: SimConfig): number {
  const ends = [
    ...config.faults.map((f) => f.atUs + faultSpanUs(f, config.pool.leaseTtlMs * 1000)),
    ...config.partitions.map((p) => p.toUs),
  ];
  return ends.length === 0 ? 0 : Math.max(...ends);
}

/** faultSpanUs — how long after it starts a fault lasts: a coordinator's (or deposed owner's) absence counts one TTL more, while the leases it stranded or kept run out. */
function faultSpanUs(f: Fault, ttlUs: number): number {
  switch (f.kind) {
    case 'pause-agent':
      return f.forUs;
    case 'crash-agent':
      return f.downUs;
    case 'restart-coordinator':
      return f.downUs + ttlUs;
    case 'failover-coordinator':
      return Math.max(f.downUs, f.deposedUs ?? 0) + 2 * SIM_OWNERSHIP_TTL_MS * 1000 + ttlUs;
    case 'reclaim-coordinator':
      return RECLAIM_ARMED_US + f.lateUs + SIM_OWNERSHIP_TTL_MS * 1000 + ttlUs;
    case 'crash-relay':
      return f.downUs + ttlUs;
    case 'pause-relay':
    case 'partition-relay':
      return f.forUs + ttlUs;
  }
}
