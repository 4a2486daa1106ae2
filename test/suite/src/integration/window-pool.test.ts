/**
 * Sliding-window pools over real NATS with agent processes: at most N
 * tokens admitted fleet-wide in every window of W, checked exactly over the
 * merged admission logs (checkWindows, every window however placed).
 *
 * 1. In memory: one coordinator process with a window pool (200 per 1 s)
 *    and a bucket pool beside it; three agent processes saturate the window
 *    pool at about four times its limit, one more drives the bucket pool.
 * 2. Durable: two coordinators on a private Redis share the window pool;
 *    the owner is SIGKILLed mid-run, the other takes the pool over from the
 *    store, and the merged logs of the whole run still hold N per W.
 *
 * Admissions are logged by the agents at the host monotonic microsecond
 * they were decided, the clock every process on the host shares.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, checkWindows, type Admission, type Random } from '@tokenlease/shared/testing';
import { currentOwner, ownershipEvents, waitForOwned } from '@tokenlease/harness/coordinator-log';
import { readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { keepLog, stop, stopAll, type Child } from '@tokenlease/harness/processes';
import { startPrivateRedis, type PrivateRedis } from '@tokenlease/harness/redis';
import { seededRun } from '../servers.js';

const WINDOW_POOL = 'win';
const BUCKET_POOL = 'bucket';
const LIMIT = 200;
const WINDOW_MS = 1000;
const LEASE_TTL_MS = 500;
/** The shortest quiet period the configuration accepts: the longest lease TTL. */
const QUIET_MS = LEASE_TTL_MS;
const MAX_LEASE_TOKENS = 20;
const WINDOW_AGENTS = 3;
/** Per agent, cost 1–3 (mean 2): 3 × 130 × 2 ≈ 780 tokens/s offered against 200 per second. */
const AGENT_PER_SECOND = 130;
const OWNERSHIP_TTL_MS = 1000;

const windowPool = { window: { limit: LIMIT, windowMs: WINDOW_MS }, leaseTtlMs: LEASE_TTL_MS, maxLeaseTokens: MAX_LEASE_TOKENS };

function tokensIn(admissions: readonly Admission[], fromUs: number, toUs: number): number {
  return admissions.filter((a) => a.tUs >= fromUs && a.tUs < toUs).reduce((sum, a) => sum + a.cost, 0);
}

/**
 * utilizationFloor — the least a saturated window pool must admit between
 * `fromUs` (its tokens are out by then, and every agent offers) and `toUs`
 * (every agent still offers until then).
 *
 * Every token goes round: granted, spent at once (demand is ~4× the limit;
 * one agent alone offers more than the limit), dropped when its lease is
 * renewed or returned (a round-trip after it ran out), back to the level
 * one window later. So the pool admits about N per W + (the time a lease
 * takes to run out and be renewed, tens of ms here): close to N per W, in
 * pulses. Half of N per window, over all but one of the whole windows of
 * the span (a pulse may straddle its ends), is a loose floor, yet a pool
 * that cooled its tokens twice as long as it should, or lost them, fails
 * it. Throws when the span holds fewer than two windows: nothing to judge.
 */
function utilizationFloor(fromUs: number, toUs: number): number {
  const windows = Math.floor((toUs - fromUs) / (WINDOW_MS * 1000));
  if (windows < 2) throw new Error(`${windows} whole windows of load to judge utilization on: the agents started too late`);
  return 0.5 * LIMIT * (windows - 1);
}

/** WindowLoad — the agents offering to the window pool, and when all of them offer: from `allFromUs` (all ready) to `allToUs`. */
interface WindowLoad {
  readonly agents: Array<{ child: Child; logPath: string }>;
  readonly allFromUs: number;
  readonly allToUs: number;
}

/** startWindowLoad — the agent processes; each offers from its 'ready' line for `durationMs`. */
async function startWindowLoad(natsUrl: string, prefix: string, dir: string, random: Random, durationMs: number): Promise<WindowLoad> {
  const spawnUs = hostMonoNowUs();
  const agents = await Promise.all(
    Array.from({ length: WINDOW_AGENTS }, async (_, i) => {
      const logPath = join(dir, `window-agent-${i}.log`);
      const child = await startAgentProcess({
        natsUrl,
        subjectPrefix: prefix,
        pool: WINDOW_POOL,
        name: `win${i}`,
        seed: random.int(0, 2 ** 31),
        durationMs,
        logPath,
        traffic: { kind: 'steady', perSecond: AGENT_PER_SECOND, costMin: 1, costMax: 3 },
      });
      return { child, logPath };
    }),
  );
  return { agents, allFromUs: hostMonoNowUs(), allToUs: spawnUs + durationMs * 1000 };
}

function expectWindowsHeld(label: string, admissions: readonly Admission[]): ReturnType<typeof checkWindows> {
  const report = checkWindows(admissions, LIMIT, WINDOW_MS * 1000);
  console.log(`${label}: windows`, JSON.stringify(report));
  expect(report.violations, `fullest window ${JSON.stringify(report.fullest)}`).toBe(0);
  expect(report.fullestTokens).toBeLessThanOrEqual(LIMIT);
  return report;
}

describe('window pools over real NATS', () => {
  let nats: NatsHandle;
  let redis: PrivateRedis;
  beforeAll(async () => {
    nats = await provideNats();
    // Private: a coordinator is killed on it, and nothing else writes to it.
    redis = await startPrivateRedis();
  });
  afterAll(async () => {
    await stopAll();
    await redis.stop();
    await nats.stop();
  });

  it('a saturated window pool admits at most N in every window of W, and most of N per W', async () => {
    const { seed, random } = seededRun('window-pool memory', import.meta.url);
    const dir = scratchDir();
    const prefix = `tlwindow${seed}`;
    const configPath = writeConfig(dir, {
      subjectPrefix: prefix,
      quietPeriodMs: QUIET_MS,
      pools: {
        [WINDOW_POOL]: windowPool,
        [BUCKET_POOL]: { capacity: 100, refill: '200/s', leaseTtlMs: LEASE_TTL_MS, maxLeaseTokens: 10 },
      },
    });
    const coordinator = await startCoordinator(nats.url, configPath);
    // The coordinator serves by now: its window pool's tokens come out at quiet + W from its start at the latest.
    const releaseByUs = hostMonoNowUs() + (QUIET_MS + WINDOW_MS) * 1000;
    const runMs = 7000;
    const bucketLog = join(dir, 'bucket-agent.log');
    const [load, bucketAgent] = await Promise.all([
      startWindowLoad(nats.url, prefix, dir, random, runMs),
      startAgentProcess({
        natsUrl: nats.url,
        subjectPrefix: prefix,
        pool: BUCKET_POOL,
        name: 'bucket',
        seed: random.int(0, 2 ** 31),
        durationMs: runMs,
        logPath: bucketLog,
        traffic: { kind: 'steady', perSecond: 400 },
      }),
    ]);
    const exits = await Promise.all([...load.agents.map((a) => a.child.exited), bucketAgent.exited]);
    expect(exits.map((e) => e.code)).toEqual(exits.map(() => 0));

    const admissions = load.agents.flatMap((a) => readAdmissionLog(a.logPath));
    expect(admissions.every((a) => a.source === 'lease')).toBe(true);
    const report = expectWindowsHeld('window-pool memory', admissions);
    const fromUs = Math.max(releaseByUs, load.allFromUs);
    const floor = utilizationFloor(fromUs, load.allToUs);
    const admitted = tokensIn(admissions, fromUs, load.allToUs);
    console.log(
      `window-pool memory: ${report.admittedTokens} tokens admitted, ${admitted} in the ${((load.allToUs - fromUs) / 1e6).toFixed(2)} s after the release while every agent offered (floor ${floor}); fullest window ${report.fullestTokens} of ${LIMIT}`,
    );
    expect(admitted).toBeGreaterThanOrEqual(floor);

    const bucket = checkEnvelope(
      readAdmissionLog(bucketLog).filter((a) => a.source === 'lease'),
      100,
      makeRate(200, 1000),
    );
    console.log('window-pool memory: bucket pool beside it, envelope', JSON.stringify(bucket));
    expect(bucket.ok).toBe(true);
    expect(bucket.admittedTokens).toBeGreaterThan(0);
    await stop(coordinator);
  });

  it('SIGKILL the owner of a durable window pool; the standby takes over from Redis; N per W holds over the whole run', async () => {
    const { seed, random } = seededRun('window-pool durable', import.meta.url);
    const dir = scratchDir();
    const prefix = `tlwinfail${seed}`;
    const configPath = writeConfig(dir, { subjectPrefix: prefix, quietPeriodMs: QUIET_MS, pools: { [WINDOW_POOL]: windowPool } });
    const durable = (member: string) => ({
      redisUrl: redis.url,
      member: `${member}-${seed}`,
      ownershipTtlMs: OWNERSHIP_TTL_MS,
    });
    const a = await startCoordinator(nats.url, configPath, durable('A'));
    keepLog(a, join(dir, 'coordinator-A.log'));
    await waitForOwned(a, WINDOW_POOL, 0, 5000);
    const b = await startCoordinator(nats.url, configPath, durable('B'));
    keepLog(b, join(dir, 'coordinator-B.log'));
    console.log(`window-pool durable: coordinator and agent logs in ${dir}`);
    const coordinators = [a, b];
    // B joins and may be the preferred owner: settled once one of them owns
    // the pool and no ownership event came for two ownership TTLs.
    const deadline = Date.now() + 10_000;
    let events = -1;
    let quietSince = Date.now();
    for (;;) {
      const now = ownershipEvents(a, WINDOW_POOL).length + ownershipEvents(b, WINDOW_POOL).length;
      if (now !== events) [events, quietSince] = [now, Date.now()];
      if (currentOwner(coordinators, WINDOW_POOL) !== undefined && Date.now() - quietSince >= 2 * OWNERSHIP_TTL_MS) break;
      expect(Date.now(), 'ownership settles').toBeLessThan(deadline);
      await sleep(50);
    }

    // Long enough that two whole windows of load follow the takeover even when the agents start late on a busy machine.
    const runMs = 14_000;
    const load = await startWindowLoad(nats.url, prefix, dir, random, runMs);
    const agents = load.agents;
    await sleep(2000);
    const victim = currentOwner(coordinators, WINDOW_POOL);
    expect(victim, 'an owner before the kill').toBeDefined();
    if (victim === undefined) return;
    const standby = coordinators.find((c) => c !== victim.child) as Child;
    const killUs = hostMonoNowUs();
    victim.child.proc.kill('SIGKILL');
    expect((await victim.child.exited).signal).toBe('SIGKILL');
    const takeover = await waitForOwned(standby, WINDOW_POOL, victim.epoch, OWNERSHIP_TTL_MS + 4000);
    const takeoverUs = hostMonoNowUs();

    const exits = await Promise.all(agents.map((x) => x.child.exited));
    expect(exits.map((e) => e.code)).toEqual(agents.map(() => 0));

    const admissions = agents.flatMap((x) => readAdmissionLog(x.logPath));
    expect(admissions.every((x) => x.source === 'lease')).toBe(true);
    const report = expectWindowsHeld('window-pool durable', admissions);
    // Before the kill the pool served; after the takeover the new owner
    // cools what the store showed in neither level nor leases for one W,
    // so tokens flow again by takeover + W at the latest.
    const before = tokensIn(admissions, 0, killUs);
    const resumedFromUs = takeoverUs + WINDOW_MS * 1000;
    const resumed = tokensIn(admissions, resumedFromUs, load.allToUs);
    const floor = utilizationFloor(resumedFromUs, load.allToUs);
    console.log(
      `window-pool durable: ${victim.child.name} (epoch ${victim.epoch}) SIGKILLed, ${standby.name} owns the pool (epoch ${takeover.epoch}) ${((takeoverUs - killUs) / 1000).toFixed(0)} ms later; ` +
        `${before} tokens admitted before the kill, ${resumed} from one window after the takeover (floor ${floor}); ${report.admittedTokens} in all`,
    );
    expect(before).toBeGreaterThan(0);
    expect(resumed).toBeGreaterThanOrEqual(floor);
    await stop(standby);
  });
});
