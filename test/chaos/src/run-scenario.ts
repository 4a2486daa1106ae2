/**
 * One chaos run: a fleet (coordinator and steady agent processes on a
 * NATS, optionally a Redis), a fault injected meanwhile, and the row the
 * merged logs give: the envelope over every window of the admissions,
 * spending only within a lease's life, recovery of the full rate. The
 * scenarios (scenarios.ts, redis-scenarios.ts) are built on it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { makeRate } from '@tokenlease/shared';
import { checkEnvelope, worstWindowRatio, seededRandom, type Random } from '@tokenlease/shared/testing';
import { leaseAdmissions, scratchDir } from '@tokenlease/harness/fleet';
import { startPrivateNats, type PrivateNats } from '@tokenlease/harness/nats';
import { stopAll } from '@tokenlease/harness/processes';
import type { ScenarioName } from './args.js';
import { ChaosFleet, type ChaosPool, type Placement } from './chaos-fleet.js';
import { expiryViolations, recoveryMs } from './checks.js';

export interface ScenarioRow {
  readonly scenario: ScenarioName;
  readonly faultVerified: boolean;
  readonly admitted: number;
  readonly envelopeViolations: number;
  readonly worstWindowRatio: number;
  /** The most tokens any window admitted beyond B + r·T (0 when the envelope held). */
  readonly worstExcessTokens: number;
  readonly expiryViolations: number;
  readonly reclaimMs: number | null;
  /** From the owner's kill to the first grant by its successor (durable failover only). */
  readonly takeoverMs: number | null;
  readonly recoveryMs: number | null;
  /** Tokens a killed relay's agents admitted after its kill (kill-relay only)… */
  readonly strandedTokens: number | null;
  /** …and what that relay held from the root: the bound of its last upstream grant. */
  readonly heldTokens: number | null;
  /** Grants by a coordinator cut from the store after its ownership could have lapsed (network faults only; must be 0). */
  readonly strayGrants: number | null;
  /** From cutting a concurrency pool's slot holder off until the others held every slot at once (cut-slot-holder only). */
  readonly slotsBackMs: number | null;
  /** Why the scenario could not run at all (network namespaces not permitted, say); null when it ran. Never a pass. */
  readonly notRun: string | null;
  readonly note: string;
}

export interface ScenarioOptions {
  readonly short: boolean;
  readonly seed: number;
}

/**
 * VERIFIED_AFTER_MS — how long an agent runs before a scenario strands its
 * lease (kills, pauses or cuts it): the coordinator has verified its clock
 * by then and the two-TTL count of its first leases has run out
 * (design.md, "Clocks"), so its lease must go one TTL after its last grant.
 */
export const VERIFIED_AFTER_MS = 3500;

export const CHAOS_POOL: ChaosPool = { capacity: 100, refillPerSecond: 200, leaseTtlMs: 1000, maxLeaseTokens: 20 };
export const STEADY = { kind: 'steady', perSecond: 150 } as const;

export const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface Outcome {
  readonly faultVerified: boolean;
  readonly reclaimMs?: number | null;
  readonly takeoverMs?: number | null;
  readonly recoveryFromUs?: readonly number[];
  readonly stranded?: { readonly tokens: number; readonly heldTokens: number };
  readonly strayGrants?: number;
  /** Admissions the scenario knows no grant can cover (an agent's after its cut + TTL): counted with the expiry violations. */
  readonly lateAdmissions?: number;
  readonly note: string;
}

/** RunSetup — what a run needs beyond the defaults: its pool, Redis, coordinators' environment, and a step before the agents start. */
export interface RunSetup {
  readonly pool?: ChaosPool;
  readonly redisUrl?: string | null;
  /** More environment variables for every coordinator process (REDIS_REPLICAS, say). */
  readonly coordinatorEnv?: NodeJS.ProcessEnv;
  /** Where each process runs (default: here, plain children). */
  readonly placement?: Placement;
  /** Runs once the first coordinator serves, before any agent starts. */
  readonly beforeAgents?: (fleet: ChaosFleet) => Promise<void>;
}

/** notRunRow — the row of a scenario that could not run: `reason` in one line; never a pass (verdict.ts). */
export function notRunRow(name: ScenarioName, reason: string): ScenarioRow {
  return {
    scenario: name,
    faultVerified: false,
    admitted: 0,
    envelopeViolations: 0,
    worstWindowRatio: 0,
    worstExcessTokens: 0,
    expiryViolations: 0,
    reclaimMs: null,
    takeoverMs: null,
    recoveryMs: null,
    strandedTokens: null,
    heldTokens: null,
    strayGrants: null,
    slotsBackMs: null,
    notRun: reason,
    note: `NOT RUN: ${reason}`,
  };
}

export async function untilNoLease(fleet: ChaosFleet, agentId: string, sinceMs: number, timeoutMs: number): Promise<number | null> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if ((await fleet.status(agentId)).agentLease === null) return performance.now() - sinceMs;
    await sleep(10);
  }
  return null;
}

export async function untilLease(fleet: ChaosFleet, agentId: string, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const lease = (await fleet.status(agentId)).agentLease;
    if (lease !== null && lease !== undefined && lease.tokensHeld > 0) return true;
    await sleep(10);
  }
  return false;
}

/** withPrivateNats — runs `body` against a private NATS server, stopped afterwards whatever happens. */
export async function withPrivateNats<T>(body: (nats: PrivateNats) => Promise<T>): Promise<T> {
  const nats = await startPrivateNats();
  try {
    return await body(nats);
  } finally {
    await nats.stop();
  }
}

/** runScenario — a fleet on `natsUrl`, `agents` steady agents running `runMs`, and `fault` injected meanwhile. */
export async function runScenario(
  name: ScenarioName,
  natsUrl: string,
  options: ScenarioOptions,
  agents: number,
  runMs: number,
  fault: (fleet: ChaosFleet, random: Random, runMs: number) => Promise<Outcome>,
  setup: RunSetup = {},
): Promise<ScenarioRow> {
  const random = seededRandom(options.seed);
  const pool = setup.pool ?? CHAOS_POOL;
  const prefix = `tlchaos${options.seed}${name.replace(/[^a-z]/g, '')}`;
  const fleet = await ChaosFleet.start(
    natsUrl,
    pool,
    scratchDir(),
    prefix,
    setup.redisUrl ?? null,
    setup.coordinatorEnv ?? {},
    setup.placement,
  );
  try {
    await setup.beforeAgents?.(fleet);
    for (let i = 0; i < agents; i += 1) await fleet.addAgent(`agent${i}`, STEADY, runMs, random.int(0, 2 ** 31));
    await untilLease(fleet, fleet.agents[0]?.agentId ?? '', 5000);
    const outcome = await fault(fleet, random, runMs);
    await Promise.all(fleet.agents.map((a) => a.child.exited));
    // Fallback and shadow admissions are outside the envelope (none are configured here).
    const admissions = leaseAdmissions(fleet.admissions());
    const rate = makeRate(pool.refillPerSecond, 1000);
    const envelope = checkEnvelope(admissions, pool.capacity, rate);
    const expiry = expiryViolations(admissions, fleet.grants());
    const recoveries = (outcome.recoveryFromUs ?? []).map((fromUs) => recoveryMs(admissions, fromUs, pool.refillPerSecond));
    return {
      scenario: name,
      faultVerified: outcome.faultVerified,
      admitted: envelope.admittedTokens,
      envelopeViolations: envelope.violations,
      worstWindowRatio: Math.round(worstWindowRatio(admissions, pool.capacity, rate) * 1000) / 1000,
      worstExcessTokens: Math.max(0, Math.round(envelope.worstExcessTokens * 1000) / 1000),
      expiryViolations: expiry.length + (outcome.lateAdmissions ?? 0),
      reclaimMs: outcome.reclaimMs === undefined || outcome.reclaimMs === null ? null : Math.round(outcome.reclaimMs),
      takeoverMs: outcome.takeoverMs ?? null,
      recoveryMs: recoveries.length === 0 || recoveries.some((r) => r === null) ? null : Math.max(...(recoveries as number[])),
      strandedTokens: outcome.stranded?.tokens ?? null,
      heldTokens: outcome.stranded?.heldTokens ?? null,
      strayGrants: outcome.strayGrants ?? null,
      slotsBackMs: null,
      notRun: null,
      note:
        outcome.note +
        (envelope.violations > 0 ? `; worst window over B + r·T by ${Math.round(envelope.worstExcessTokens)} tokens` : '') +
        (expiry.length > 0 ? `; first expiry violation: ${expiry[0]}` : ''),
    };
  } finally {
    await fleet.close();
    await stopAll();
  }
}
