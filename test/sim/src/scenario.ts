/**
 * randomScenario — an adversarial simulation config drawn from one seed:
 * fleet size, pool, lease size and TTL, workload, a lossy, duplicating,
 * reordering network, partitions, agent crashes and pauses past expiry,
 * coordinator restarts and clock drift within the agents' margin.
 * Faults happen in the first half of the run so the second half shows
 * whether the fleet converges.
 *
 * A share `DURABLE_SHARE` of scenarios run the durable (store) mode: the
 * same scenario as the memory one of its seed, drawn from the same stream,
 * with its restarts turned into failovers and one or two more failovers,
 * half of them of an owner that is deposed and runs on rather than one
 * that crashes; those extra draws come from a second stream of the seed.
 * A share `RECLAIM_SHARE` of the durable scenarios also have one or two
 * re-claims (an owner whose ownership lapses with a write out steps down
 * and claims the pool again itself, as its driver decides, while that write's outcome, written,
 * fenced or unavailable, lands late), half of them with slow writes (up to
 * `SLOW_WRITE_US_MAX`); those draws come from a stream of their own, so
 * every other scenario is the one its seed drew before.
 *
 * A share `RATE_SHARE` of scenarios (independently of the store) run rate
 * (trickle) leases: the same scenario again, with the pool in rate mode, a
 * refresh interval for the keepers and, for half of them, leases capped
 * only by B (the natural rate-mode setting); those draws come from a third
 * stream, so every scenario that is not in rate mode is the one its seed
 * always drew.
 *
 * A share `WINDOW_SHARE` of the scenarios not in rate mode run a strict
 * sliding-window pool instead of a bucket: at most N per window W, W one of
 * `WINDOWS_MS`, N what the bucket's refill rate admits in W (so the traffic
 * is the same size), no allowance, leases drawn afresh against N, and half
 * of them with agents that send usage reports (which let spent tokens start
 * cooling before the lease ends); those draws come from a fourth stream.
 * `ScenarioMix` 'window' makes every scenario of a seed a window pool (the
 * same draws), 'bucket' none.
 *
 * A share `CONCURRENCY_SHARE` of the scenarios neither in rate mode nor
 * window pools run a concurrency pool instead: at most N in flight, N in
 * [CONCURRENCY_LIMIT_MIN, 100], each request holding its slot at most D
 * (one of `HOLDS_MS`), served in an exponential time of mean 5–80% of D, a
 * share of up to a fifth never released (the hold bound ends them), the
 * workload's load being the demand in flight as a multiple of N (weighted
 * costs become single requests); those draws come from a seventh stream.
 * `ScenarioMix` 'concurrency' makes every scenario of a seed one.
 *
 * A share `SHADOW_SHARE` of scenarios (of every kind) switch shadow mode on
 * and off by reloads during the fault window: one or two periods in shadow
 * mode, often with one agent idle across a switch back and busy at several
 * times its share after it, and sometimes one agent partitioned across it;
 * the checks judge what is admitted beyond leases from one TTL after each
 * switch back. Those draws come from a fifth stream.
 *
 * A share `HOSTILE_SHARE` of scenarios have hostile clients beside the
 * honest agents (hostile.ts), from a sixth stream: sybils (half of them),
 * a flooder (a quarter) or both. There are enough sybils to hold all of B
 * with full leases (2 to `SYBILS_MAX`), renewing every 10–200 ms, most of
 * them only while the pool's status shows no request held; the flooder
 * keeps 2–`FLOOD_IN_FLIGHT_MAX` acquires of fresh agent ids out at once.
 * With them the fair-share check applies (hostile-fairness.ts).
 */
import { makeRate } from '@tokenlease/shared';
import { seededRandom, type Random } from '@tokenlease/shared/testing';
import type { Partition } from './network.js';
import {
  concurrencyPool,
  windowPool,
  type DurableSpec,
  type Fault,
  type HostileSpec,
  type ShadowSpec,
  type SimConfig,
} from './sim-config.js';
import type { WorkloadName, WorkloadSpec } from './workload.js';
import { DURABLE_MEMBERS, SIM_OWNERSHIP_TTL_MS } from './sim-events.js';

const WORKLOADS: readonly WorkloadName[] = ['steady', 'bursty', 'diurnal', 'zipf', 'churn', 'weighted'];
const TTLS_MS = [200, 500, 1000, 2000] as const;
export const DURABLE_SHARE = 0.4;
export const RECLAIM_SHARE = 0.5;
/** SLOW_WRITE_US_MAX — the slowest store write a re-claim scenario with slow writes draws, µs. */
const SLOW_WRITE_US_MAX = 50_000;
/** The longest a re-claim takes after the lapse, µs: a heartbeat interval of the simulated ownership TTL, the renewal's and the claim's store calls. */
const RECLAIM_US_MAX = (SIM_OWNERSHIP_TTL_MS * 1000) / 3;
export const RATE_SHARE = 0.3;
const REFRESHES_MS = [50, 100, 250, 500, 1000, 2000] as const;
export const WINDOW_SHARE = 0.3;
const WINDOWS_MS = [100, 250, 500, 1000, 2000, 5000] as const;
const REPORTS_MS = [20, 50, 100, 250] as const;
/** WINDOW_LIMIT_MIN — the smallest limit N a window scenario draws, tokens. */
const WINDOW_LIMIT_MIN = 5;

export const CONCURRENCY_SHARE = 0.2;
const HOLDS_MS = [50, 200, 1000, 3000] as const;
/** CONCURRENCY_LIMIT_MIN — the fewest slots a concurrency scenario draws. */
const CONCURRENCY_LIMIT_MIN = 3;
const CONCURRENCY_MODE_SEED_SALT = 0xc0c0;

/** ScenarioMix — which pools randomScenario draws: its usual mix, only buckets, only window pools, or only concurrency pools. */
export type ScenarioMix = 'mixed' | 'bucket' | 'window' | 'concurrency';
export const SCENARIO_MIXES: readonly ScenarioMix[] = ['mixed', 'bucket', 'window', 'concurrency'];
/** SCENARIO_DURATION_US_DEFAULT — simulated traffic per scenario unless said otherwise, µs (20 s). */
export const SCENARIO_DURATION_US_DEFAULT = 20_000_000;
/** Faults and partitions start this long into a run at the earliest, µs: leases are out by then. */
const FAULTS_FROM_US = 1_000_000;
/**
 * SCENARIO_DRIFT_MAX — the largest clock drift a scenario draws, a fraction:
 * below the keeper's driftMargin (0.1), which makes an agent stop before
 * the coordinator reclaims. RATE_SCENARIO_DRIFT_MAX — the same for rate
 * leases, below the keeper's rateDriftMargin (0.001), which stretches a
 * rate's period.
 */
export const SCENARIO_DRIFT_MAX = 0.04;
export const RATE_SCENARIO_DRIFT_MAX = 0.0009;
/**
 * Salts xor-ed into a scenario's seed for the draws of its rate-mode and
 * durable-mode variants: streams apart from the scenario's own, so a
 * scenario in neither mode is the one its seed always drew.
 */
const RATE_MODE_SEED_SALT = 0x7a7e1ea5;
const WINDOW_MODE_SEED_SALT = 0x3d0f5a11;
const SHADOW_MODE_SEED_SALT = 0x5ad0;
export const SHADOW_SHARE = 0.25;
const DURABLE_MODE_SEED_SALT = 0xd0ab1e;
const HOSTILE_SEED_SALT = 0x5b11;
export const HOSTILE_SHARE = 0.3;
/** SYBILS_MAX — the most sybils a scenario draws. */
const SYBILS_MAX = 8;
/** FLOOD_IN_FLIGHT_MAX — the most acquires a scenario's flooder keeps out at once. */
const FLOOD_IN_FLIGHT_MAX = 8;
const RECLAIM_SEED_SALT = 0x2ec1a1;

export function randomScenario(seed: number, durationUs = SCENARIO_DURATION_US_DEFAULT, mix: ScenarioMix = 'mixed'): SimConfig {
  const r = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[r.int(0, xs.length - 1)] as T;
  const agents = r.int(2, 8);
  const capacity = r.int(20, 400);
  const refillPerSecond = r.int(50, 400);
  const leaseTtlMs = pick(TTLS_MS);
  // Mostly leases that fit B across the fleet; sometimes oversized ones.
  const maxLeaseTokens = r.next() < 0.8 ? Math.max(1, Math.floor(capacity / agents / r.int(1, 3))) : r.int(1, capacity);
  const ttlUs = leaseTtlMs * 1000;
  const faultWindowUs = durationUs / 2;
  const at = (): number => r.int(FAULTS_FROM_US, Math.max(FAULTS_FROM_US + 1, faultWindowUs - 1));
  const faults: Fault[] = [];
  for (let i = r.int(0, 3); i > 0; i -= 1) {
    const kind = pick(['crash-agent', 'pause-agent', 'restart-coordinator'] as const);
    if (kind === 'crash-agent') faults.push({ kind, agent: r.int(0, agents - 1), atUs: at(), downUs: r.int(200_000, 3_000_000) });
    else if (kind === 'pause-agent') faults.push({ kind, agent: r.int(0, agents - 1), atUs: at(), forUs: r.int(ttlUs, 4 * ttlUs) });
    else faults.push({ kind, atUs: at(), downUs: r.int(0, 1_000_000) });
  }
  const partitions: Partition[] = [];
  for (let i = r.int(0, 2); i > 0; i -= 1) {
    const fromUs = at();
    const members = Array.from({ length: agents }, (_, k) => k).filter(() => r.next() < 0.4);
    partitions.push({ agents: members.length > 0 ? members : [0], fromUs, toUs: fromUs + r.int(ttlUs / 2, 3 * ttlUs) });
  }
  const base: SimConfig = {
    seed,
    agents,
    durationUs,
    pool: {
      capacity,
      refill: makeRate(refillPerSecond, 1000),
      leaseTtlMs,
      maxLeaseTokens,
      allowance: r.next() < 0.7 ? 0 : r.int(1, capacity),
    },
    workload: randomWorkload(pick(WORKLOADS), 0.5 + r.next() * 2.5, r),
    network: {
      latencyUs: r.int(200, 5000),
      lossRate: r.next() < 0.5 ? 0 : r.next() * 0.05,
      duplicateRate: r.next() < 0.5 ? 0 : r.next() * 0.05,
    },
    partitions,
    faults,
    driftMax: SCENARIO_DRIFT_MAX,
  };
  const window = mix === 'window' ? withWindowMode(base, true) : mix === 'concurrency' ? base : withRateMode(base);
  const drawn = mix === 'mixed' ? withWindowMode(window, false) : window;
  const pool = mix === 'concurrency' || mix === 'mixed' ? withConcurrencyMode(drawn, mix === 'concurrency') : drawn;
  return withHostiles(withShadowSwitches(withReclaims(withDurableMode(pool, faultWindowUs), faultWindowUs), faultWindowUs));
}

/**
 * withHostiles — `base` with hostile clients beside its agents, for a share
 * of seeds: sybils enough to hold B with full leases, a flooder, or both.
 */
function withHostiles(base: SimConfig): SimConfig {
  const d = seededRandom(base.seed ^ HOSTILE_SEED_SALT);
  if (d.next() >= HOSTILE_SHARE) return base;
  const kind = d.next();
  const count = Math.min(SYBILS_MAX, Math.max(2, Math.ceil(base.pool.capacity / base.pool.maxLeaseTokens)));
  const sybils = { count, tokens: base.pool.maxLeaseTokens, renewMs: d.int(10, 200), betweenHolds: d.next() < 0.8 };
  const flooder = { inFlight: d.int(2, FLOOD_IN_FLIGHT_MAX) };
  const hostile: HostileSpec = kind < 0.5 ? { sybils } : kind < 0.75 ? { flooder } : { sybils, flooder };
  return { ...base, hostile };
}

/**
 * withShadowSwitches — `base` with shadow mode switched on and off, for a
 * share of seeds: on in the fault window, back one to four TTLs later, and
 * for some a second period; an agent idle across the (first) switch back,
 * its silence ending one to three TTLs after it, then offering 3–8 times
 * its arrivals; sometimes an agent partitioned across the switch back.
 */
function withShadowSwitches(base: SimConfig, faultWindowUs: number): SimConfig {
  const d = seededRandom(base.seed ^ SHADOW_MODE_SEED_SALT);
  if (d.next() >= SHADOW_SHARE) return base;
  const ttlUs = base.pool.leaseTtlMs * 1000;
  // Every switch falls in the fault window, so the run's second half shows whether the fleet converges.
  const onUs = d.int(FAULTS_FROM_US, Math.max(FAULTS_FROM_US + 1, Math.floor(faultWindowUs / 2)));
  const offUs = Math.min(faultWindowUs, onUs + d.int(ttlUs, 4 * ttlUs));
  const switchesUs = [onUs, offUs];
  const againUs = offUs + d.int(ttlUs, 3 * ttlUs);
  const againOffUs = againUs + d.int(ttlUs, 3 * ttlUs);
  if (d.next() < 0.3 && againOffUs <= faultWindowUs) switchesUs.push(againUs, againOffUs);
  const idle = d.next() < 0.7;
  const agent = d.int(0, base.agents - 1);
  const idleFromUs = Math.max(0, offUs - d.int(0, 2 * ttlUs));
  const idleToUs = offUs + d.int(ttlUs + 1, 3 * ttlUs);
  const surge = d.int(3, 8);
  const shadow: ShadowSpec = { switchesUs, ...(idle ? { idleAgent: { agent, fromUs: idleFromUs, toUs: idleToUs, surge } } : {}) };
  if (d.next() >= 0.5) return { ...base, shadow };
  const cutUs = offUs - d.int(0, ttlUs);
  const cut: Partition = { agents: [d.int(0, base.agents - 1)], fromUs: cutUs, toUs: offUs + d.int(ttlUs / 2, 2 * ttlUs) };
  return { ...base, shadow, partitions: [...base.partitions, cut] };
}

/**
 * withWindowMode — `base` as a sliding-window pool, for a share of the seeds
 * not in rate mode (or for every seed if `always`): N per W with the rate of
 * `base`'s refill, leases drawn against N, usage reports for half.
 */
function withWindowMode(base: SimConfig, always: boolean): SimConfig {
  const d = seededRandom(base.seed ^ WINDOW_MODE_SEED_SALT);
  const drawn = d.next() < WINDOW_SHARE;
  if (base.pool.leaseMode === 'rate' || !(always || drawn)) return base;
  const windowMs = WINDOWS_MS[d.int(0, WINDOWS_MS.length - 1)] as number;
  const limit = Math.max(WINDOW_LIMIT_MIN, Math.round((base.pool.refill.tokens * windowMs) / base.pool.refill.periodMs));
  const maxLeaseTokens = d.next() < 0.8 ? Math.max(1, Math.floor(limit / base.agents / d.int(1, 3))) : d.int(1, limit);
  const reportMs = d.next() < 0.5 ? 0 : (REPORTS_MS[d.int(0, REPORTS_MS.length - 1)] as number);
  const { allowance: _allowance, ...rest } = base.pool;
  return {
    ...base,
    pool: windowPool(limit, windowMs, { ...rest, maxLeaseTokens }),
    ...(reportMs > 0 ? { keeper: { ...base.keeper, reportMs } } : {}),
  };
}

/**
 * withConcurrencyMode — `base` as a concurrency pool, for a share of the
 * seeds neither in rate mode nor window pools (or for every seed if
 * `always`): N slots, a hold bound D, service times against D, leases
 * drawn against N.
 */
function withConcurrencyMode(base: SimConfig, always: boolean): SimConfig {
  const d = seededRandom(base.seed ^ CONCURRENCY_MODE_SEED_SALT);
  const drawn = d.next() < CONCURRENCY_SHARE;
  if (base.pool.leaseMode === 'rate' || base.pool.window === true || !(always || drawn)) return base;
  const limit = d.int(CONCURRENCY_LIMIT_MIN, 100);
  const maxHoldMs = HOLDS_MS[d.int(0, HOLDS_MS.length - 1)] as number;
  const serviceMs = Math.max(1, maxHoldMs * (0.05 + d.next() * 0.75));
  const hangShare = d.next() < 0.5 ? 0 : d.next() / 5;
  // A lease's slots are an agent's concurrency: mostly room for an agent to run all N, else a fair part of them or fewer.
  const share = Math.ceil(limit / base.agents);
  const draw = d.next();
  const maxLeaseTokens = draw < 0.5 ? limit : draw < 0.8 ? Math.min(limit, share * d.int(1, 2)) : d.int(1, limit);
  const { allowance: _allowance, ...rest } = base.pool;
  const workload: WorkloadSpec = base.workload.name === 'weighted' ? { name: 'steady', load: base.workload.load } : base.workload;
  return { ...base, workload, pool: concurrencyPool(limit, { maxHoldMs, serviceMs, hangShare }, { ...rest, maxLeaseTokens }) };
}

/** withRateMode — `base` with rate leases, for a share of seeds: a refresh interval from 50 ms to 2 s, sometimes longer than the TTL; clock drift under 0.1%. */
function withRateMode(base: SimConfig): SimConfig {
  const d = seededRandom(base.seed ^ RATE_MODE_SEED_SALT);
  if (d.next() >= RATE_SHARE) return base;
  const refreshMs = REFRESHES_MS[d.int(0, REFRESHES_MS.length - 1)] as number;
  const maxLeaseTokens = d.next() < 0.5 ? base.pool.capacity : base.pool.maxLeaseTokens;
  // A rate lease's accrual is stretched by the keeper's rateDriftMargin (0.1%): clocks stay within it.
  return {
    ...base,
    pool: { ...base.pool, leaseMode: 'rate', maxLeaseTokens },
    keeper: { ...base.keeper, refreshMs },
    driftMax: Math.min(base.driftMax, RATE_SCENARIO_DRIFT_MAX),
  };
}

/** withDurableMode — `base` in durable mode, for a share of seeds: restarts become failovers, and one or two more are added. */
function withDurableMode(base: SimConfig, faultWindowUs: number): SimConfig {
  const d = seededRandom(base.seed ^ DURABLE_MODE_SEED_SALT);
  if (d.next() >= DURABLE_SHARE) return base;
  const failover = (atUs: number): Fault => {
    const downUs = d.int(50_000, 3_000_000);
    return { kind: 'failover-coordinator', atUs, downUs, ...(d.next() < 0.5 ? { deposedUs: d.int(0, 2 * downUs) } : {}) };
  };
  const faults = base.faults.map((f) => (f.kind === 'restart-coordinator' ? failover(f.atUs) : f));
  for (let i = d.int(1, 2); i > 0; i -= 1) faults.push(failover(d.int(FAULTS_FROM_US, Math.max(FAULTS_FROM_US + 1, faultWindowUs - 1))));
  const writeUsMax = d.int(300, 3000);
  const members = d.int(2, 3);
  // Most durable runs have other pools too: configured ones, and template pools the catch-all makes on first use.
  const ghosts = d.next() < 0.7 ? { pools: d.int(0, 3), templatePools: d.int(1, 2) } : undefined;
  const durable: DurableSpec = { writeUsMin: 100, writeUsMax, members, ...(ghosts === undefined ? {} : { ghosts }) };
  return { ...base, faults, durable };
}

/**
 * withReclaims — for a share of the durable scenarios, one or two re-claims
 * with a write out, its outcome landing late: mostly after the claim, else
 * before it; half of them with slow writes.
 */
function withReclaims(base: SimConfig, faultWindowUs: number): SimConfig {
  const d = seededRandom(base.seed ^ RECLAIM_SEED_SALT);
  if (base.durable === undefined || d.next() >= RECLAIM_SHARE) return base;
  const durable: DurableSpec =
    d.next() < 0.5 ? { ...base.durable, writeUsMax: Math.max(base.durable.writeUsMax, d.int(5000, SLOW_WRITE_US_MAX)) } : base.durable;
  const faults = [...base.faults];
  for (let i = d.int(1, 2); i > 0; i -= 1) {
    // Mostly after the re-claim (a heartbeat, a renewal and a claim after the lapse), else before it.
    const reclaimUs = RECLAIM_US_MAX + 3 * durable.writeUsMax;
    const lateUs = d.next() < 0.8 ? reclaimUs + d.int(1, 3 * durable.writeUsMax + 100_000) : d.int(0, durable.writeUsMax);
    const outcome = (['written', 'fenced', 'unavailable'] as const)[d.int(0, 2)] ?? 'fenced';
    const atUs = d.int(FAULTS_FROM_US, Math.max(FAULTS_FROM_US + 1, faultWindowUs - 1));
    faults.push({ kind: 'reclaim-coordinator', atUs, lateUs, outcome });
  }
  return { ...base, faults, durable };
}

function randomWorkload(name: WorkloadName, load: number, r: Random): WorkloadSpec {
  switch (name) {
    case 'steady':
      return { name, load };
    case 'bursty':
      return { name, load, onMs: r.int(100, 1000), offMs: r.int(0, 3000) };
    case 'diurnal':
      return { name, load, periodMs: r.int(2000, 20_000), amplitude: r.next() };
    case 'zipf':
      return { name, load, exponent: 0.5 + r.next() * 1.5 };
    case 'churn':
      return { name, load, upMs: r.int(500, 10_000), downMs: r.int(100, 5000), crashFraction: r.next() / 2 };
    case 'weighted':
      return { name, load, heavyFraction: r.next() / 3, heavyRatio: r.int(2, 20) };
  }
}

/** describeScenario — one line naming what a scenario does. */
export function describeScenario(c: SimConfig): string {
  const p = c.pool;
  const faults: string[] = [...c.faults.map(faultName), ...c.partitions.map(() => 'partition')];
  const store =
    c.durable === undefined
      ? ''
      : `durable (${c.durable.members ?? DURABLE_MEMBERS} coordinators${describeGhosts(c.durable)}, writes ${(c.durable.writeUsMin / 1000).toFixed(1)}–${(c.durable.writeUsMax / 1000).toFixed(1)} ms), `;
  const mode = p.leaseMode === 'rate' ? `rate (refresh ${c.keeper?.refreshMs ?? 'default'} ms), ` : '';
  const reports = (c.keeper?.reportMs ?? 0) > 0 ? `, reports every ${c.keeper?.reportMs} ms` : '';
  const shadow = c.shadow === undefined ? '' : `, ${describeShadow(c.shadow)}`;
  const hostile = c.hostile === undefined ? '' : `, ${describeHostile(c.hostile)}`;
  const c2 = p.concurrency;
  const limits =
    c2 !== undefined
      ? `concurrency N=${p.capacity} held ≤ ${c2.maxHoldMs} ms, served in ${c2.serviceMs.toFixed(0)} ms${c2.hangShare > 0 ? `, ${(c2.hangShare * 100).toFixed(0)}% hang` : ''}`
      : p.window === true
        ? `window N=${p.capacity} per W=${p.refill.periodMs} ms`
        : `B=${p.capacity}${p.allowance ? `+A=${p.allowance}` : ''}, r=${p.refill.tokens}/${p.refill.periodMs}ms`;
  return (
    `${store}${mode}${c.agents} agents, ${limits}, lease ${p.maxLeaseTokens}, TTL ${p.leaseTtlMs} ms${reports}, ` +
    `${c.workload.name}×${c.workload.load.toFixed(2)}, latency ${(c.network.latencyUs / 1000).toFixed(1)} ms, ` +
    `loss ${(c.network.lossRate * 100).toFixed(1)}%, dup ${(c.network.duplicateRate * 100).toFixed(1)}%` +
    (faults.length > 0 ? `, faults: ${faults.join(' ')}` : '') +
    shadow +
    hostile
  );
}

function describeGhosts(d: DurableSpec): string {
  return d.ghosts === undefined ? '' : ` with ${d.ghosts.pools} more pools and ${d.ghosts.templatePools} template pools`;
}

function describeHostile(spec: HostileSpec): string {
  const s = spec.sybils;
  const sybils =
    s === undefined
      ? []
      : [`${s.count} sybils of ${s.tokens} renewing every ${s.renewMs} ms${s.betweenHolds ? ' while none is held' : ''}`];
  const flooder = spec.flooder === undefined ? [] : [`a flooder with ${spec.flooder.inFlight} fresh ids in flight`];
  return `hostile: ${[...sybils, ...flooder].join(' and ')}`;
}

function describeShadow(spec: ShadowSpec): string {
  const at = spec.switchesUs.map((us, i) => `${i % 2 === 0 ? 'on' : 'off'} ${(us / 1000).toFixed(0)}`).join(', ');
  const idle = spec.idleAgent;
  const idleText =
    idle === undefined
      ? ''
      : `, a${idle.agent} idle ${(idle.fromUs / 1000).toFixed(0)}–${(idle.toUs / 1000).toFixed(0)} ms then ×${idle.surge}`;
  return `shadow (${at} ms${idleText})`;
}

function faultName(f: Fault): string {
  if (f.kind === 'reclaim-coordinator') return `reclaim(${f.outcome} ${(f.lateUs / 1000).toFixed(0)} ms late)`;
  if (f.kind !== 'failover-coordinator') return f.kind;
  return f.deposedUs === undefined
    ? `failover(down ${(f.downUs / 1000).toFixed(0)} ms)`
    : `failover(deposed ${(f.deposedUs / 1000).toFixed(0)} ms, down ${(f.downUs / 1000).toFixed(0)} ms)`;
}
