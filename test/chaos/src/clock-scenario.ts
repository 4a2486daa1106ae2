/**
 * `slow-agent-clock`: an agent whose clocks (monotonic ones too, and so its
 * timers) run at half the host's rate under libfaketime (harness
 * clock-rate.ts), far outside its 10% drift margin, beside two honest
 * agents whose bursts drain the pool from full every second. Run twice on
 * fresh processes: with the coordinator's clock check (the pool's default
 * `clockDriftLimit`) and with it off (`clockDriftLimit: 0`).
 *
 * The slow agent counts each lease's TTL on its clock, so it spends a lease
 * for about twice as long as a TTL, and renews only near its own expiry.
 * What the coordinator counts of its leases is read all along (a status
 * query for the agent every 25 ms: the lease and how long it is still
 * counted), and each of its admissions is judged against that: one after
 * the last instant its lease was counted is spent on top of the envelope.
 *
 * - Checked, the coordinator counts the slow agent's leases for two TTLs
 *   while its clock is not verified, finds the drift (a `clock-drift`
 *   warn), refuses it from then on and counts what it held for as long as
 *   that clock lets it be spent: no admission outside what the coordinator
 *   counted, no window over B + r·T.
 * - Unchecked, the same fleet shows what the check prevents: the slow
 *   agent spending after the coordinator stopped counting its lease, again
 *   and again (whether that also takes a window over B + r·T depends on
 *   what else the bucket held then: the row says).
 *
 * The slow agent's admissions are logged on its own clock and mapped to the
 * host's (ClockMap). The fault is verified from that map (its clock ran at
 * the rate asked), from the coordinator's events, and from the unchecked
 * run's uncounted admissions. Where libfaketime is not installed the row
 * says NOT RUN, which never passes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { makeRate } from '@tokenlease/shared';
import { checkEnvelope, seededRandom, worstWindowRatio } from '@tokenlease/shared/testing';
import { FaketimeUnavailableError, libfaketimePath } from '@tokenlease/harness/clock-rate';
import { leaseAdmissions, scratchDir, type LoggedAdmission } from '@tokenlease/harness/fleet';
import { logEvents } from '@tokenlease/harness/log-events';
import { stopAll } from '@tokenlease/harness/processes';
import { ChaosFleet, type AgentHandle, type ChaosPool } from './chaos-fleet.js';
import { expiryViolations, recoveryMs } from './checks.js';
import { notRunRow, nowUs, withPrivateNats, type ScenarioOptions, type ScenarioRow } from './run-scenario.js';

/** CLOCK_RATE — the slow agent's clocks run at this rate of the host's. */
export const CLOCK_RATE = 0.5;
/** A small bucket, so that a burst drains it from full within a window. */
const CLOCK_POOL: ChaosPool = { capacity: 40, refillPerSecond: 200, leaseTtlMs: 1000, maxLeaseTokens: 20 };
/** The slow agent: steady, well under its lease, on its own clock (half that on the host's). */
const SLOW_TRAFFIC = { kind: 'steady', perSecond: 30 } as const;
/** Each honest agent: bursts far over the refill, 300 ms a second, the bucket refilling to full between. */
const BURSTS = { kind: 'bursty', perSecond: 600, onMs: 300, offMs: 700 } as const;
const HONEST_AGENTS = 2;
/** The honest agents start this long after the slow one. */
const HONEST_AFTER_MS = 3000;
/** How often the coordinator is asked what it counts of the slow agent's lease, ms. */
const COUNTED_POLL_MS = 25;

/** ClockRun — one run's figures. */
interface ClockRun {
  readonly admitted: number;
  readonly envelopeViolations: number;
  readonly worstWindowRatio: number;
  readonly worstExcessTokens: number;
  readonly slowAdmitted: number;
  /** The slow agent's admissions after the last instant the coordinator counted their lease. */
  readonly slowUncounted: number;
  /** The honest agents' admissions after their lease's grant + TTL (must be none). */
  readonly honestLate: number;
  /** When the coordinator first logged the drift, ms after the slow agent started; null: never. */
  readonly foundAfterMs: number | null;
  readonly driftWarnings: number;
  /** The slow agent's clock rate as its clock lines measured it, or null. */
  readonly measuredRate: number | null;
  readonly recoveryMs: number | null;
}

/**
 * CountedEnds — the last instant (host clock, µs) the coordinator said it
 * counts each lease of one agent until, read by status queries while `run`
 * runs.
 */
async function watchCounted(fleet: ChaosFleet, agentId: string, run: Promise<unknown>): Promise<Map<string, number>> {
  const ends = new Map<string, number>();
  let done = false;
  void run.finally(() => {
    done = true;
  });
  while (!done) {
    const askedUs = nowUs();
    const lease = (await fleet.status(agentId)).agentLease;
    if (lease !== null && lease !== undefined) {
      const endUs = askedUs + lease.expiresInMs * 1000;
      ends.set(lease.leaseId, Math.max(ends.get(lease.leaseId) ?? 0, endUs));
    }
    await sleep(COUNTED_POLL_MS);
  }
  return ends;
}

/** uncounted — the admissions after the last instant their lease was counted (`ends`; a lease never seen counted: all of its admissions). */
function uncounted(admissions: readonly LoggedAdmission[], ends: ReadonlyMap<string, number>): number {
  return admissions.filter((a) => a.tUs > (ends.get(a.leaseId) ?? -Infinity)).length;
}

/** clockRun — the fleet of the module comment, once, on a private NATS; `checked`: with the pool's default clock check. */
async function clockRun(checked: boolean, options: ScenarioOptions, runMs: number): Promise<ClockRun> {
  return withPrivateNats(async (nats) => {
    const pool: ChaosPool = checked ? CLOCK_POOL : { ...CLOCK_POOL, clockDriftLimit: 0 };
    const random = seededRandom(options.seed);
    const prefix = `tlchaos${options.seed}clock${checked ? 'on' : 'off'}`;
    const fleet = await ChaosFleet.start(nats.url, pool, scratchDir(), prefix);
    try {
      const coordinator = fleet.coordinators[0];
      if (coordinator === undefined) throw new Error('slow-agent-clock: no coordinator started');
      let foundUs: number | null = null;
      coordinator.onLine((line) => {
        if (foundUs === null && line.includes('"event":"clock-drift"')) foundUs = nowUs();
      });
      const startUs = nowUs();
      const slow: AgentHandle = await fleet.addAgent(
        'slow',
        SLOW_TRAFFIC,
        Math.round(runMs * CLOCK_RATE),
        random.int(0, 2 ** 31),
        undefined,
        {
          clockRate: CLOCK_RATE,
        },
      );
      const counted = watchCounted(fleet, slow.agentId, slow.child.exited);
      await sleep(HONEST_AFTER_MS);
      const honestFromUs = nowUs();
      for (let i = 0; i < HONEST_AGENTS; i += 1) {
        await fleet.addAgent(`agent${i}`, BURSTS, runMs - HONEST_AFTER_MS, random.int(0, 2 ** 31));
      }
      await Promise.all(fleet.agents.map((a) => a.child.exited));
      const ends = await counted;
      const admissions = leaseAdmissions(fleet.admissions());
      const rate = makeRate(pool.refillPerSecond, 1000);
      const envelope = checkEnvelope(admissions, pool.capacity, rate);
      const slowAdmissions = admissions.filter((a) => a.agent === slow.agentId);
      const found: number | null = foundUs;
      return {
        admitted: envelope.admittedTokens,
        envelopeViolations: envelope.violations,
        worstWindowRatio: Math.round(worstWindowRatio(admissions, pool.capacity, rate) * 1000) / 1000,
        worstExcessTokens: Math.max(0, Math.round(envelope.worstExcessTokens * 1000) / 1000),
        slowAdmitted: slowAdmissions.length,
        slowUncounted: uncounted(slowAdmissions, ends),
        honestLate: expiryViolations(
          admissions.filter((a) => a.agent !== slow.agentId),
          fleet.grants(),
        ).length,
        foundAfterMs: found === null ? null : Math.round((found - startUs) / 1000),
        driftWarnings: fleet.coordinators.reduce((n, c) => n + logEvents(c.lines, { event: 'clock-drift' }).length, 0),
        measuredRate: slow.clock?.measuredRate() ?? null,
        recoveryMs: recoveryMs(admissions, honestFromUs, pool.refillPerSecond),
      };
    } finally {
      await fleet.close();
      await stopAll();
    }
  });
}

/** slowAgentClock — the scenario of the module comment: the checked run's row, the unchecked run's figures in its note. */
export async function slowAgentClock(options: ScenarioOptions): Promise<ScenarioRow> {
  if (libfaketimePath() === null) {
    const reason = new FaketimeUnavailableError().message;
    console.error(`chaos slow-agent-clock: NOT RUN: ${reason}`);
    return notRunRow('slow-agent-clock', reason);
  }
  const runMs = options.short ? 10_000 : 30_000;
  const checked = await clockRun(true, options, runMs);
  const unchecked = await clockRun(false, options, runMs);
  const rateSeen = checked.measuredRate !== null && Math.abs(checked.measuredRate - CLOCK_RATE) < 0.05;
  const harmShown = unchecked.slowUncounted > 0 && unchecked.driftWarnings === 0;
  const rateText = (r: number | null): string => (r === null ? '?' : r.toFixed(3));
  return {
    scenario: 'slow-agent-clock',
    faultVerified: rateSeen && checked.foundAfterMs !== null && harmShown,
    admitted: checked.admitted,
    envelopeViolations: checked.envelopeViolations,
    worstWindowRatio: checked.worstWindowRatio,
    worstExcessTokens: checked.worstExcessTokens,
    expiryViolations: checked.slowUncounted + checked.honestLate,
    reclaimMs: null,
    takeoverMs: null,
    recoveryMs: checked.recoveryMs,
    strandedTokens: null,
    heldTokens: null,
    strayGrants: null,
    slotsBackMs: null,
    notRun: null,
    note:
      `slow agent's clock at ${rateText(checked.measuredRate)} of the host's (asked ${CLOCK_RATE}); ` +
      `checked: drift found ${checked.foundAfterMs ?? 'never'} ms in (${checked.driftWarnings} warnings), the slow agent admitted ` +
      `${checked.slowAdmitted}, ${checked.slowUncounted} of them after the coordinator stopped counting their lease; ` +
      `unchecked: it admitted ${unchecked.slowAdmitted}, ${unchecked.slowUncounted} of them after the coordinator stopped counting ` +
      `their lease, ${unchecked.envelopeViolations} windows over B + r·T (worst ${unchecked.worstWindowRatio}, ` +
      `+${unchecked.worstExcessTokens} tokens), ${unchecked.honestLate} honest admissions outside their lease`,
  };
}
