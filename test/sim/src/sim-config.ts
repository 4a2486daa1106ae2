/**
 * What a simulation run is given and what it reports, and the coordinator
 * configuration a run's pool stands for.
 */
import type { KeeperOptions } from '@tokenlease/agent';
import { parseCoordinatorConfig, type CoordinatorConfig } from '@tokenlease/coordinator';
import type { Rate } from '@tokenlease/shared';
import type { NetworkSpec, Partition } from './network.js';
import type { WorkloadSpec } from './workload.js';

export interface SimPool {
  readonly capacity: number;
  readonly refill: Rate;
  readonly leaseTtlMs: number;
  readonly maxLeaseTokens: number;
  readonly minGrantTokens?: number;
  readonly maxHoldMs?: number;
  /** Tokens A the promise is widened by (B + A + r·T); default 0. */
  readonly allowance?: number;
  /** Weight per agent class (see the coordinator's classWeights). */
  readonly classWeights?: Readonly<Record<string, number>>;
  /** 'chunk' (default): leases hold tokens; 'rate': leases trickle at a fair share (see the coordinator's leaseMode). */
  readonly leaseMode?: 'chunk' | 'rate';
}

/** coordinatorConfigOf — the coordinator's configuration of a run's one pool, named `pool`. */
export function coordinatorConfigOf(p: SimPool, pool: string): CoordinatorConfig {
  return parseCoordinatorConfig('simulation', {
    pools: {
      [pool]: {
        capacity: p.capacity,
        refill: { tokens: p.refill.tokens, periodMs: p.refill.periodMs },
        leaseTtlMs: p.leaseTtlMs,
        maxLeaseTokens: p.maxLeaseTokens,
        ...(p.minGrantTokens === undefined ? {} : { minGrantTokens: p.minGrantTokens }),
        ...(p.maxHoldMs === undefined ? {} : { maxHoldMs: p.maxHoldMs }),
        ...(p.allowance === undefined ? {} : { allowance: p.allowance }),
        ...(p.classWeights === undefined ? {} : { classWeights: p.classWeights }),
        ...(p.leaseMode === undefined ? {} : { leaseMode: p.leaseMode }),
      },
    },
  });
}

/** Faults; times are µs from the start of traffic. */
export type Fault =
  | { readonly kind: 'crash-agent'; readonly agent: number; readonly atUs: number; readonly downUs: number }
  | { readonly kind: 'pause-agent'; readonly agent: number; readonly atUs: number; readonly forUs: number }
  | { readonly kind: 'restart-coordinator'; readonly atUs: number; readonly downUs: number }
  /**
   * Durable mode only. The owner crashes at `atUs` (or, with `deposedUs`,
   * its ownership lapses then: it runs on for `deposedUs`, every write it
   * makes from then on refused); a standby takes the pool over from the
   * store `downUs` later (the ownership TTL), under the next epoch.
   */
  | { readonly kind: 'failover-coordinator'; readonly atUs: number; readonly downUs: number; readonly deposedUs?: number };

/**
 * DurableSpec — the coordinator keeps its pool in a store (the Redis mode):
 * replies leave only after the changes behind them are written, and a write
 * takes a uniform time in [writeUsMin, writeUsMax] µs.
 */
export interface DurableSpec {
  readonly writeUsMin: number;
  readonly writeUsMax: number;
}

/**
 * Deliberately broken parts, to prove the checks can fail: an agent that
 * spends past its expiry; a durable coordinator that replies before the
 * write lands; a takeover that forgets the kept leases; a rate-lease agent
 * that accrues its new rate from when it sent the renewal rather than from
 * the reply's arrival, or that keeps accruing its old rate while the
 * renewal is in flight (see sim-agent.ts).
 */
export type Broken = 'spend-past-expiry' | 'reply-before-write' | 'forget-kept-leases' | 'accrue-from-send' | 'accrue-in-flight';

export interface SimConfig {
  readonly seed: number;
  readonly agents: number;
  /** Traffic duration, µs (after a warm-up that lets the pool fill). */
  readonly durationUs: number;
  readonly pool: SimPool;
  readonly workload: WorkloadSpec;
  readonly network: NetworkSpec;
  /** Partitions; times are µs from the start of traffic. */
  readonly partitions: readonly Partition[];
  readonly faults: readonly Fault[];
  /** Largest |clock rate error| of an agent (must stay below the keeper's drift margin). */
  readonly driftMax: number;
  readonly keeper?: Partial<KeeperOptions>;
  /** The class of each agent slot (null or absent: none). */
  readonly agentClasses?: ReadonlyArray<string | null>;
  /** How long after a crash the agent's lease must be gone; default TTL + hold + tick slack + flight times. */
  readonly reclaimDeadlineUs?: number;
  /** Durable (store-backed) coordinator; absent: memory mode. */
  readonly durable?: DurableSpec;
  /** Deliberately broken parts, to prove the checks can fail. */
  readonly broken?: Broken;
}

export interface SimResult {
  readonly seed: number;
  readonly offeredTokens: number;
  readonly offeredCount: number;
  readonly admittedTokens: number;
  readonly admittedCount: number;
  readonly deniedCount: number;
  /** Per agent slot: tokens admitted and offered. */
  readonly perAgentAdmitted: readonly number[];
  readonly perAgentOffered: readonly number[];
  readonly worstExcessTokens: number;
  readonly violations: readonly string[];
  /** Request attempts sent to the coordinator (each is a round-trip). */
  readonly roundTrips: number;
  /** Usage reports published (one-way messages; not in roundTrips). */
  readonly reports: number;
  /** Tokens granted (rate leases: the top-ups only; what accrues is not counted). */
  readonly grantedTokens: number;
  readonly returnedTokens: number;
  /** Granted and then neither admitted nor returned: lost at expiry, or never delivered (not meaningful for rate leases: may be negative). */
  readonly strandedTokens: number;
  /** Waits of admitted `take()` calls, ms. */
  readonly takeWaitsMs: readonly number[];
  readonly takeTimeouts: number;
  /** Tokens admitted and offered per 100 ms slice of traffic time. */
  readonly admittedPerSlice: readonly number[];
  readonly offeredPerSlice: readonly number[];
  readonly simulatedSeconds: number;
  readonly events: number;
  /** Durable mode: pools taken over from the store after the first owner, store writes made, and those refused (fenced). */
  readonly takeovers: number;
  readonly storeWrites: number;
  readonly fencedWrites: number;
}
