/**
 * What a simulation run is given and what it reports, and the coordinator
 * configuration a run's pool stands for.
 */
import type { KeeperOptions } from '@tokenlease/agent';
import { parseCoordinatorConfig, type CoordinatorConfig, type UplinkSettings } from '@tokenlease/coordinator';
import { makeRate, type Rate } from '@tokenlease/shared';
import type { Admission } from '@tokenlease/shared/testing';
import type { NetworkSpec, Partition } from './network.js';
import type { Workload, WorkloadSpec } from './workload.js';
import type { FairShareReport } from './fair-share.js';

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
  /** The root's relay classes (see the coordinator's relayClasses): the most fleet weight a relay of each may claim. */
  readonly relayClasses?: Readonly<Record<string, number>>;
  /** 'chunk' (default): leases hold tokens; 'rate': leases trickle at a fair share (see the coordinator's leaseMode). */
  readonly leaseMode?: 'chunk' | 'rate';
  /**
   * A strict sliding-window pool (the coordinator's `window`): at most
   * `capacity` tokens admitted in every window of `refill.periodMs`, so
   * `refill.tokens` must equal `capacity`; chunk leases, no allowance
   * (`windowPool` builds one). Absent or false: a bucket pool.
   */
  readonly window?: boolean;
  /** Shadow mode (the coordinator's `shadow`): grants tell agents to admit what they would deny; default false. */
  readonly shadow?: boolean;
  /**
   * A concurrency pool (the coordinator's `concurrency`): at most `capacity`
   * requests in flight, each holding its slot at most `maxHoldMs`; its
   * `refill` is `capacity` per mean service time, so a workload's load is
   * the in-flight demand as a multiple of N (`concurrencyPool` builds one).
   * Absent: a pool of tokens.
   */
  readonly concurrency?: ConcurrencySpec;
}

/** ConcurrencySpec — a concurrency pool's hold bound and its requests' service times: exponential of mean `serviceMs`, a share `hangShare` never released. */
export interface ConcurrencySpec {
  readonly maxHoldMs: number;
  readonly serviceMs: number;
  readonly hangShare: number;
}

/** concurrencyPool — a concurrency pool of `limit` slots whose requests are served as `spec` says, with the other fields of `rest`. */
export function concurrencyPool(
  limit: number,
  spec: ConcurrencySpec,
  rest: Omit<SimPool, 'capacity' | 'refill' | 'window' | 'concurrency'>,
): SimPool {
  return { ...rest, capacity: limit, refill: makeRate(limit, Math.max(1, Math.round(spec.serviceMs))), concurrency: spec };
}

/** windowPool — a sliding-window pool of at most `limit` per `windowMs`, with the other fields of `rest`. */
export function windowPool(limit: number, windowMs: number, rest: Omit<SimPool, 'capacity' | 'refill' | 'window'>): SimPool {
  return { ...rest, capacity: limit, refill: makeRate(limit, windowMs), window: true };
}

/** windowOf — the limit and window of a window pool, µs (null for a bucket pool). */
export function windowOf(p: SimPool): { readonly limitTokens: number; readonly windowUs: number } | null {
  return p.window === true ? { limitTokens: p.capacity, windowUs: p.refill.periodMs * 1000 } : null;
}

/** limitsOf — the pool fields of a coordinator configuration that say how much it admits: slots, a window, or capacity and refill. */
function limitsOf(p: SimPool, windowMs?: number): Record<string, unknown> {
  if (p.concurrency !== undefined) return { concurrency: { limit: p.capacity, maxHoldMs: windowMs ?? p.concurrency.maxHoldMs } };
  if (p.window !== true) return { capacity: p.capacity, refill: { tokens: p.refill.tokens, periodMs: p.refill.periodMs } };
  if (p.refill.tokens !== p.capacity) {
    throw new Error(`a window pool admits its capacity per window: refill ${p.refill.tokens} tokens must equal capacity ${p.capacity}`);
  }
  return { window: { limit: p.capacity, windowMs: windowMs ?? p.refill.periodMs } };
}

/** coordinatorConfigOf — the coordinator's configuration of a run's one pool, named `pool`. */
export function coordinatorConfigOf(p: SimPool, pool: string): CoordinatorConfig {
  return configWith(p, pool);
}

/**
 * earlyReleaseConfigOf — the coordinator configuration of the broken mode
 * `window-early-release`: the same window pool with a window a quarter as
 * long, so the coordinator lets spent tokens go back to the level a quarter
 * window after it learns of them, while the checks still judge the real
 * window. The product is untouched: only what the coordinator is told.
 */
export function earlyReleaseConfigOf(p: SimPool, pool: string): CoordinatorConfig {
  if (p.window !== true) throw new Error('window-early-release needs a window pool');
  return configWith(p, pool, Math.max(1, Math.floor(p.refill.periodMs / 4)));
}

/**
 * overRefillConfigOf — the coordinator configuration of the broken mode
 * `rate-over-refill`: the same pool with a refill 1/64 faster than the one
 * the checks judge, as if the coordinator's rates and level together
 * passed r by that much (the share of the refill a rate pool once kept
 * back). The product is untouched: only what the coordinator is told.
 */
export function overRefillConfigOf(p: SimPool, pool: string): CoordinatorConfig {
  return configWith({ ...p, refill: makeRate(p.refill.tokens + Math.ceil(p.refill.tokens / 64), p.refill.periodMs) }, pool);
}

/**
 * noHoldBoundConfigOf — the coordinator configuration of the broken mode
 * `concurrency-no-hold-bound`: the same concurrency pool with a hold bound
 * of 1 ms, so the coordinator hands a slot out again as soon as the lease
 * that held it ends, whatever request started under it may still run. Its
 * grants reach the agents with the real bound (simulation.ts), so they
 * hold their requests as long as before: only the coordinator is broken.
 */
export function noHoldBoundConfigOf(p: SimPool, pool: string): CoordinatorConfig {
  if (p.concurrency === undefined) throw new Error('concurrency-no-hold-bound needs a concurrency pool');
  return configWith(p, pool, 1);
}

/** servedConfigOf — what the coordinator of pool `pool` is told in a run broken so (window-early-release, rate-over-refill, concurrency-no-hold-bound), else null. */
export function servedConfigOf(config: SimConfig, pool: string): CoordinatorConfig | null {
  if (config.broken === 'window-early-release') return earlyReleaseConfigOf(config.pool, pool);
  if (config.broken === 'concurrency-no-hold-bound') return noHoldBoundConfigOf(config.pool, pool);
  if (config.broken === 'rate-over-refill') return overRefillConfigOf(config.pool, pool);
  return null;
}

function configWith(p: SimPool, pool: string, windowMs?: number): CoordinatorConfig {
  return parseCoordinatorConfig('simulation', {
    pools: {
      [pool]: {
        ...limitsOf(p, windowMs),
        leaseTtlMs: p.leaseTtlMs,
        maxLeaseTokens: p.maxLeaseTokens,
        ...(p.minGrantTokens === undefined ? {} : { minGrantTokens: p.minGrantTokens }),
        ...(p.maxHoldMs === undefined ? {} : { maxHoldMs: p.maxHoldMs }),
        ...(p.allowance === undefined ? {} : { allowance: p.allowance }),
        ...(p.classWeights === undefined ? {} : { classWeights: p.classWeights }),
        ...(p.relayClasses === undefined ? {} : { relayClasses: p.relayClasses }),
        ...(p.leaseMode === undefined ? {} : { leaseMode: p.leaseMode }),
        ...(p.shadow === true ? { shadow: true } : {}),
      },
    },
  });
}

/**
 * ShadowSpec — shadow mode switched centrally during a run, as a reload of
 * every coordinator does: the pool goes into shadow mode at the first of
 * `switchesUs` (µs from the start of traffic), back to enforcing at the
 * second, and so on. `idleAgent` keeps one agent slot silent from `fromUs`
 * to `toUs` (idle across a switch back) and from then on offers `surge`
 * times its own arrivals (busy at several times its share).
 */
export interface ShadowSpec {
  readonly switchesUs: readonly number[];
  readonly idleAgent?: { readonly agent: number; readonly fromUs: number; readonly toUs: number; readonly surge: number };
}

/** Faults; times are µs from the start of traffic. */
export type Fault =
  | { readonly kind: 'crash-agent'; readonly agent: number; readonly atUs: number; readonly downUs: number }
  | { readonly kind: 'pause-agent'; readonly agent: number; readonly atUs: number; readonly forUs: number }
  | { readonly kind: 'restart-coordinator'; readonly atUs: number; readonly downUs: number }
  /**
   * Durable mode only. The pool's owner crashes at `atUs` (a new process, a
   * new member, starts `downUs` later), or, with `deposedUs`, is deposed:
   * its ownership record lapses then and its store calls fail for
   * `deposedUs`, so it serves on until the store answers it again and its
   * own driver steps it down; meanwhile the other members claim the pool as
   * their heartbeats and the ownership TTL allow, under the next epoch.
   */
  | { readonly kind: 'failover-coordinator'; readonly atUs: number; readonly downUs: number; readonly deposedUs?: number }
  /**
   * Durable mode only. The owner's record of the pool lapses with a write
   * out, as when its renewals could not reach the store: at `atUs` (or, when
   * no write of the pool is in flight then, at the start of its next write,
   * if that starts within RECLAIM_ARMED_US). The write in flight is held:
   * its outcome lands `lateUs` after the lapse, as `outcome`: `written` (it
   * reached the store before the lapse), `fenced` (it reaches it only then)
   * or `unavailable` (it never does). The owner's driver learns of the lapse
   * at its next heartbeat, steps down and claims the pool again (it is still
   * the preferred member), under the next epoch, with what the store holds.
   */
  | {
      readonly kind: 'reclaim-coordinator';
      readonly atUs: number;
      readonly lateUs: number;
      readonly outcome: 'written' | 'fenced' | 'unavailable';
    }
  /** Tree only: relay `relay` dies (its state lost) at `atUs`; a new incarnation, with a new upstream agent id, starts `downUs` later. */
  | { readonly kind: 'crash-relay'; readonly relay: number; readonly atUs: number; readonly downUs: number }
  /** Tree only: relay `relay` acts on nothing for `forUs`, then handles what came meanwhile on its clock jumped ahead. */
  | { readonly kind: 'pause-relay'; readonly relay: number; readonly atUs: number; readonly forUs: number }
  /** Tree only: relay `relay` is cut from the root, or from all its agents, for `forUs`. */
  | {
      readonly kind: 'partition-relay';
      readonly relay: number;
      readonly from: 'root' | 'agents';
      readonly atUs: number;
      readonly forUs: number;
    };

/** RelayFault — the faults of a tree's relays. */
export type RelayFault = Extract<Fault, { kind: 'crash-relay' | 'pause-relay' | 'partition-relay' }>;

/** isRelayFault — whether `f` is a relay's fault. */
export function isRelayFault(f: Fault): f is RelayFault {
  return f.kind === 'crash-relay' || f.kind === 'pause-relay' || f.kind === 'partition-relay';
}

/**
 * TreeSpec — the fleet as a tree: `relays` relays (coordinator/src/core
 * relay-core.ts, each with its uplink) lease one chunk each from the root
 * and re-lease to their agents. Agent slots below `rootAgents` (default 0)
 * lease from the root directly; slot s above goes to relay
 * (s − rootAgents) mod `relays`. The run's pool is what a relay serves its
 * agents (its TTL, `relayLeaseTtlMs` aside, is the root's too); the root's
 * lease limit, a relay's largest chunk, is `rootMaxLeaseTokens` (default B).
 * The tree has only chunk-mode buckets without allowance, in memory or
 * durable mode.
 */
export interface TreeSpec {
  readonly relays: number;
  readonly rootAgents?: number;
  readonly rootMaxLeaseTokens?: number;
  /** The TTL of a relay's grants to its agents before the cut to its own lease's end, ms; default the pool's. */
  readonly relayLeaseTtlMs?: number;
  readonly uplink?: Partial<UplinkSettings>;
  /** Each relay's clock drift, its µs per true µs less 1 (absent: none): within its uplink's margin against the root, and within the agents' margin less their own drift against them. */
  readonly relayDrift?: readonly number[];
}

/**
 * DurableSpec — the coordinators keep their pools in a store (the Redis
 * mode), each running the real ownership driver: replies leave only after
 * the changes behind them are written, and a store call takes a uniform
 * time in [writeUsMin, writeUsMax] µs.
 */
export interface DurableSpec {
  readonly writeUsMin: number;
  readonly writeUsMax: number;
  /** How many coordinators share the store (default 2); every store call takes a write's time. */
  readonly members?: number;
  /** Their ownership TTL, ms (default 600: a heartbeat every 200 ms). */
  readonly ownershipTtlMs?: number;
  /** Other pools the coordinators own beside the run's, each asked for tokens by ghosts (ghosts.ts): configured ones, and template pools the catch-all makes; default none. */
  readonly ghosts?: { readonly pools: number; readonly templatePools: number };
}

/**
 * Deliberately broken parts, to prove the checks can fail: an agent that
 * spends past its expiry; an agent that keeps the shadow flag of its last
 * grant after that lease ended (until its next grant); a durable
 * coordinator that replies before the
 * write lands; a takeover that forgets the kept leases; a durable
 * coordinator that claimed its pool again and lets the outcome of a write
 * of the ownership it gave up act on the new one; one that claims a pool
 * again without waiting for its old ownership's write to settle; one whose
 * catch-all serves a configured pool it does not own (broken-ownership.ts
 * for these four, sim-member.ts for the kept leases); a rate-lease agent
 * that accrues its new rate from when it sent the renewal rather than from
 * the reply's arrival, or that keeps accruing its old rate while the
 * renewal is in flight (see sim-agent.ts); a window pool's coordinator that
 * lets spent tokens go back a quarter window after it learns of them
 * (earlyReleaseConfigOf); a rate pool's coordinator whose rates and level
 * pass the refill by 1/64 (overRefillConfigOf); a relay whose grants to its agents carry its
 * pool's full TTL, not cut to the end of its own lease from the root
 * (relays.ts); a relay whose agents keep spending after its upstream lease
 * is lost, its credit serving on past that lease's end (relays.ts); a
 * chunk pool that counts itself contended only while a request waits at
 * the instant of a renewal, as it once did, not within a TTL of one
 * (`instant-only-waiters`, coordinators.ts), which sybils that renew
 * between holds turn into a pool kept from the honest agents; a
 * concurrency pool's coordinator that hands a slot out again when its
 * lease ends, without waiting out the hold bound (noHoldBoundConfigOf).
 */
export type Broken =
  | 'spend-past-expiry'
  | 'shadow-outlives-lease'
  | 'reply-before-write'
  | 'forget-kept-leases'
  | 'stale-lane-acts'
  | 'accrue-from-send'
  | 'accrue-in-flight'
  | 'window-early-release'
  | 'rate-over-refill'
  | 'relay-no-ttl-cap'
  | 'spend-after-upstream-lost'
  | 'claim-before-settle'
  | 'catch-all-serves-configured'
  | 'instant-only-waiters'
  | 'concurrency-no-hold-bound';

export interface SimConfig {
  readonly seed: number;
  readonly agents: number;
  /** Traffic duration, µs (after a warm-up that lets the pool fill). */
  readonly durationUs: number;
  readonly pool: SimPool;
  readonly workload: WorkloadSpec;
  /**
   * Arrivals given up front (a recorded trace the sweep replays) instead of
   * drawing them from `workload`: every arrival before `durationUs`, agent
   * slots below `agents`. Absent: the workload's own draw.
   */
  readonly replay?: Workload;
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
  /** The fleet as a tree of relays under the root; absent: every agent leases from the root. */
  readonly tree?: TreeSpec;
  /** Keep every admission (instant and cost) in the result's `admissions`, for a check of one's own; default false. */
  readonly recordAdmissions?: boolean;
  /** Shadow mode switched on and off during the run (flat fleets only); absent: the pool enforces throughout. */
  readonly shadow?: ShadowSpec;
  /** Hostile clients beside the honest agents (flat fleets only; hostile.ts); absent: none. */
  readonly hostile?: HostileSpec;
}

/**
 * HostileSpec — hostile clients that speak the protocol from agent ids of
 * their own, beside the run's honest agents, from the start of the run:
 * - `sybils`: `count` identities that each fill a chunk lease of `tokens`
 *   and renew it every `renewMs` without spending anything; with
 *   `betweenHolds`, each renewal waits until the pool's status says no
 *   request is held (the `waiting` a status request shows, read every
 *   5 ms and at once: a stronger attacker than one a round-trip behind).
 * - `flooder`: one client that keeps `inFlight` acquires out at once, each
 *   under a fresh agent id, wanting a full lease and willing to be held;
 *   every answer (or a request lost) sends the next at once.
 * What they take counts in the fair shares of the honest agents
 * (fair-share.ts), one share per sybil and per request the flooder keeps
 * out: the core today shares a pool per agent id, not per identity.
 */
export interface HostileSpec {
  readonly sybils?: { readonly count: number; readonly tokens: number; readonly renewMs: number; readonly betweenHolds: boolean };
  readonly flooder?: { readonly inFlight: number };
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
  /** Tokens admitted beyond leases because of shadow mode (would-be denials), and how many of those the checks judged (one TTL or more after a switch back). */
  readonly shadowAdmittedTokens: number;
  readonly shadowJudgedTokens: number;
  /** A window pool: the most tokens any window of W held (never above N when the checks held); null for a bucket pool. */
  readonly fullestWindowTokens: number | null;
  /** A concurrency pool: the most requests in flight at once (never above N when the checks held), and their mean in flight over the traffic; null otherwise. */
  readonly peakInFlight: number | null;
  readonly meanInFlight: number | null;
  readonly violations: readonly string[];
  /** Request attempts the agents sent to their coordinator, the root or a relay (each is a round-trip). */
  readonly roundTrips: number;
  /** Request attempts that reached for the root: the agents' on it and the relays' (a flat fleet: all of `roundTrips`). */
  readonly rootRoundTrips: number;
  /** Relay incarnations started after the first of each (a tree's relay crashes that came back up). */
  readonly relayRestarts: number;
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
  /** Durable mode: claims of the pool by a process that had given it up, and outcomes of its writes that landed after the ownership that made them ended, with a newer one holding the pool. */
  readonly reclaims: number;
  readonly lateOutcomes: number;
  /** Every admission in time order (instants µs from the simulation's start), when `recordAdmissions` asked; else empty. */
  readonly admissions: readonly Admission[];
  /** Each honest agent's fair share once the faults settled, and what it got (fair-share.ts); null where the check does not apply. */
  readonly fairShare: FairShareReport | null;
  /** Tokens granted to hostile clients (0 without). */
  readonly hostileGrantedTokens: number;
}
