/**
 * Shadow mode switched centrally under load, over real NATS: a coordinator
 * process with two pools of the same limits, `shadowed` and its enforced
 * `twin`, each driven by two agent processes on the same arrival schedule
 * (same traffic, same seeds) at three times the refill. A reload (file +
 * SIGHUP) puts `shadowed` in shadow mode, a second one takes it out.
 *
 * While shadowed (from one TTL after the switch, when every agent has had
 * a grant with the flag), the shadowed fleet denies nothing, and what it
 * would have denied matches what the twin fleet denied over the same
 * window, within one lease per agent at each end of the window (plus any
 * difference in what was offered). After the switch back, from one TTL on,
 * it admits only from leases again and keeps the envelope; over the whole
 * run its lease admissions keep it too, while its shadow admissions alone
 * take it well past B + r·T: they are outside the envelope, and the checks
 * leave them out.
 *
 * A second run keeps one agent idle across the switch back: busy while the
 * pool is shadowed, silent from before the switch back until well after it
 * (its last lease, a shadow one, ends in the silence; the switches wait on
 * what its log shows), then busy at five
 * times the refill (some fifteen times its share) beside two agents that
 * saturate the pool. Shadow mode
 * lives and dies with the lease that brought it, so from one TTL after the
 * switch back every admission of the pool, shadow ones included, keeps
 * B + r·T, and nothing is admitted as in shadow mode.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { makeRate, type Rate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, type Admission } from '@tokenlease/shared/testing';
import { describe, expect, it } from 'vitest';
import {
  leaseAdmissions,
  readAdmissionLog,
  readDenialLog,
  reloadBySighup,
  scratchDir,
  startAgentProcess,
  startCoordinator,
  StatusProbe,
  writeConfig,
  type LoggedAdmission,
} from '@tokenlease/harness/fleet';
import { logEvents, waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats } from '@tokenlease/harness/nats';
import { type Child } from '@tokenlease/harness/processes';
import { waitUntil } from '@tokenlease/harness/wait';
import { seededRun, serverForSuite } from '../servers.js';

const CAPACITY = 40;
const PER_SECOND = 100;
const RATE: Rate = makeRate(PER_SECOND, 1000);
const TTL_MS = 500;
const LEASE_TOKENS = 10;
const AGENTS_PER_POOL = 2;
const OFFERED_PER_SECOND = 150; // per agent: 3 × the refill per pool
const WARM_MS = 1200;
const SHADOW_MS = 1600;
const AFTER_MS = 1600;
const RUN_MS = WARM_MS + SHADOW_MS + AFTER_MS + 600;

const poolFields = (shadow: boolean): object => ({
  capacity: CAPACITY,
  refill: `${PER_SECOND}/s`,
  leaseTtlMs: TTL_MS,
  maxLeaseTokens: LEASE_TOKENS,
  ...(shadow ? { shadow: true } : {}),
});
const doc = (prefix: string, shadow: boolean): object => ({
  subjectPrefix: prefix,
  pools: { shadowed: poolFields(shadow), twin: poolFields(false) },
});
const tokens = (xs: readonly Admission[], fromUs: number, toUs: number): number =>
  xs.filter((a) => a.tUs >= fromUs && a.tUs < toUs).reduce((sum, a) => sum + a.cost, 0);

/** reload — reloads `next` by SIGHUP, checks that only the shadowed pool changed, and returns the host µs at which it applied. */
async function reload(coordinator: Child, configPath: string, next: object, afterUs: number): Promise<number> {
  const fields = await reloadBySighup(coordinator, configPath, next, afterUs);
  expect(fields['changed']).toEqual(['shadowed']);
  return Number(fields['tUs']);
}

interface Fleet {
  readonly admissions: LoggedAdmission[];
  readonly denials: Admission[];
}

describe('shadow mode switched by reload under load', () => {
  const nats = serverForSuite(provideNats);

  it('admits everything while shadowed, would deny what the enforced twin denies, and keeps the envelope from one TTL after the switch back', async () => {
    const { seed, random } = seededRun('shadow-mode', import.meta.url);
    const dir = scratchDir();
    const prefix = `tlshadow${seed}`;
    const configPath = writeConfig(dir, doc(prefix, false));
    const coordinator = await startCoordinator(nats().url, configPath);
    const seeds = Array.from({ length: AGENTS_PER_POOL }, () => random.int(0, 2 ** 31));
    const specs = ['shadowed', 'twin'].flatMap((pool) => seeds.map((agentSeed, i) => ({ pool, name: `${pool}-${i}`, seed: agentSeed })));
    const agents = await Promise.all(
      specs.map((spec) =>
        startAgentProcess({
          natsUrl: nats().url,
          subjectPrefix: prefix,
          pool: spec.pool,
          name: spec.name,
          seed: spec.seed,
          durationMs: RUN_MS,
          logPath: join(dir, `${spec.name}.log`),
          denialLogPath: join(dir, `${spec.name}.denied`),
          traffic: { kind: 'steady', perSecond: OFFERED_PER_SECOND },
        }),
      ),
    );

    await sleep(WARM_MS);
    const onAtUs = await reload(coordinator, configPath, doc(prefix, true), 0);
    await sleep(SHADOW_MS);
    const offAtUs = await reload(coordinator, configPath, doc(prefix, false), onAtUs);
    const exits = await Promise.all(agents.map((a) => a.exited));
    expect(exits.map((e) => e.code)).toEqual(specs.map(() => 0));
    expect(agents.flatMap((a) => logEvents(a.lines, { type: 'event', event: 'implausible-grant' }))).toEqual([]);

    const fleetOf = (pool: string): Fleet => {
      const names = specs.filter((s) => s.pool === pool).map((s) => s.name);
      const byTime = (a: Admission, b: Admission): number => a.tUs - b.tUs;
      return {
        admissions: names.flatMap((n) => readAdmissionLog(join(dir, `${n}.log`))).sort(byTime),
        denials: names.flatMap((n) => readDenialLog(join(dir, `${n}.denied`))).sort(byTime),
      };
    };
    const shadowed = fleetOf('shadowed');
    const twin = fleetOf('twin');
    const ttlUs = TTL_MS * 1000;
    const shadowOf = (f: Fleet): Admission[] => f.admissions.filter((a) => a.source === 'shadow');

    // While shadowed: nothing denied, and the would-be denials are the twin's denials.
    const fromUs = onAtUs + ttlUs;
    const wouldDeny = tokens(shadowOf(shadowed), fromUs, offAtUs);
    const twinDenied = tokens(twin.denials, fromUs, offAtUs);
    const offered = (f: Fleet): number => tokens(f.admissions, fromUs, offAtUs) + tokens(f.denials, fromUs, offAtUs);
    const offeredGap = Math.abs(offered(shadowed) - offered(twin));
    const toleranceTokens = 2 * AGENTS_PER_POOL * LEASE_TOKENS + offeredGap;
    console.log(
      `shadow-mode: shadowed ${((offAtUs - fromUs) / 1000).toFixed(0)} ms: offered ${offered(shadowed)} / ${offered(twin)} (twin), ` +
        `would deny ${wouldDeny}, twin denied ${twinDenied}, tolerance ${toleranceTokens}`,
    );
    expect(tokens(shadowed.denials, fromUs, offAtUs)).toBe(0);
    expect(wouldDeny).toBeGreaterThan(0.3 * offered(shadowed));
    expect(Math.abs(wouldDeny - twinDenied)).toBeLessThanOrEqual(toleranceTokens);
    // Before the switch nothing was shadow-admitted.
    expect(tokens(shadowOf(shadowed), 0, onAtUs)).toBe(0);

    // Back to enforcing from one TTL after the switch: no shadow admissions, denials again, and the envelope.
    const backUs = offAtUs + ttlUs;
    const enforcedAfter = leaseAdmissions(shadowed.admissions).filter((a) => a.tUs >= backUs);
    expect(tokens(shadowOf(shadowed), backUs, Infinity)).toBe(0);
    expect(tokens(shadowed.denials, backUs, Infinity)).toBeGreaterThan(0);
    expect(enforcedAfter.length).toBeGreaterThan(0);
    const after = checkEnvelope(enforcedAfter, CAPACITY, RATE);
    expect(after.ok, JSON.stringify(after)).toBe(true);

    // Over the whole run: lease admissions keep the envelope for both fleets; counted with the shadow ones they do not.
    for (const fleet of [shadowed, twin]) expect(checkEnvelope(leaseAdmissions(fleet.admissions), CAPACITY, RATE).ok).toBe(true);
    const withShadow = checkEnvelope(shadowed.admissions, CAPACITY, RATE);
    console.log(`shadow-mode: with shadow admissions counted, worst excess ${withShadow.worstExcessTokens} tokens`);
    expect(withShadow.ok).toBe(false);
  });
});

describe('an agent idle across the switch back to enforcing', () => {
  const nats = serverForSuite(provideNats);
  const BUSY_UNTIL_MS = 3000;
  // Eight idle seconds: the reload, a shadow admission and three leaseless TTLs must all fit before the surge, and
  // with four a busy CI machine once ran past the window (the wait for the silence timed out).
  const IDLE_UNTIL_MS = 11_000;
  const RUN_IDLE_MS = 13_000;
  const doc1 = (prefix: string, shadow: boolean): object => ({ subjectPrefix: prefix, pools: { sh: poolFields(shadow) } });

  it('enforces from its first request after the silence: the envelope holds over all admissions from one TTL after the switch back', async () => {
    const { seed, random } = seededRun('shadow-mode-idle', import.meta.url);
    const dir = scratchDir();
    const prefix = `tlshidle${seed}`;
    const configPath = writeConfig(dir, doc1(prefix, false));
    const coordinator = await startCoordinator(nats().url, configPath);
    const busy = { kind: 'steady', perSecond: PER_SECOND } as const;
    const idleThenSurge = {
      kind: 'phased',
      phases: [
        { untilMs: BUSY_UNTIL_MS, perSecond: PER_SECOND },
        { untilMs: IDLE_UNTIL_MS, perSecond: 0 },
        { untilMs: RUN_IDLE_MS, perSecond: 5 * PER_SECOND },
      ],
    } as const;
    const specs = [
      { name: 'busy-0', traffic: busy },
      { name: 'busy-1', traffic: busy },
      { name: 'idle', traffic: idleThenSurge },
    ];
    const agents = await Promise.all(
      specs.map((spec) =>
        startAgentProcess({
          natsUrl: nats().url,
          subjectPrefix: prefix,
          pool: 'sh',
          name: spec.name,
          seed: random.int(0, 2 ** 31),
          durationMs: RUN_IDLE_MS,
          logPath: join(dir, `${spec.name}.log`),
          traffic: spec.traffic,
        }),
      ),
    );
    // Timed by what the idle agent logs, not by the clock: shadow mode on once it admits, off once it has fallen silent under a shadow lease.
    const idleLog = (): LoggedAdmission[] => readAdmissionLog(join(dir, 'idle.log'));
    await waitUntil('the idle agent admitting', 10_000, () => idleLog().length > 0);
    const onAtUs = Number((await reloadBySighup(coordinator, configPath, doc1(prefix, true), 0))['tUs']);
    await waitUntil('a shadow admission of the idle agent', 10_000, () => idleLog().some((a) => a.source === 'shadow' && a.tUs > onAtUs));
    // Silent, and no longer asking: the coordinator has shown it without a lease for three TTLs in a row.
    const idleId = String((await waitForEvent(agents[2] as Child, { type: 'ready' }, 1000))['agentId']);
    const probe = await StatusProbe.connect(nats().url);
    let leaselessSinceUs = Infinity;
    await waitUntil('the idle agent silent and leaseless for three TTLs', 10_000, async () => {
      const { agentLease } = await probe.status('sh', prefix, idleId);
      const nowUs = hostMonoNowUs();
      leaselessSinceUs = agentLease == null ? Math.min(leaselessSinceUs, nowUs) : Infinity;
      return nowUs - leaselessSinceUs > 3 * TTL_MS * 1000 && nowUs - Math.max(...idleLog().map((a) => a.tUs)) > TTL_MS * 1000;
    });
    await probe.close();
    const offAtUs = Number((await reloadBySighup(coordinator, configPath, doc1(prefix, false), onAtUs))['tUs']);
    const exits = await Promise.all(agents.map((a) => a.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0]);

    const byTime = (a: Admission, b: Admission): number => a.tUs - b.tUs;
    const logOf = (name: string): LoggedAdmission[] => readAdmissionLog(join(dir, `${name}.log`));
    const all = specs.flatMap((spec) => logOf(spec.name)).sort(byTime);
    const idle = logOf('idle');
    const backUs = offAtUs + TTL_MS * 1000;
    const shadowAfter = all.filter((a) => a.source === 'shadow' && a.tUs >= backUs);
    const idleShadowed = idle.filter((a) => a.source === 'shadow' && a.tUs >= onAtUs && a.tUs < offAtUs);
    const idleSilentFromUs = Math.max(...idle.filter((a) => a.tUs < offAtUs).map((a) => a.tUs));
    const idleBack = idle.filter((a) => a.tUs >= backUs);
    const after = checkEnvelope(
      all.filter((a) => a.tUs >= backUs),
      CAPACITY,
      RATE,
    );
    console.log(
      `shadow-mode idle: idle agent silent ${((offAtUs - idleSilentFromUs) / 1000).toFixed(0)} ms before the switch back, ` +
        `${idleShadowed.length} shadow admissions of it while shadowed; after: ${tokens(idleBack, backUs, Infinity)} tokens admitted, ` +
        `${tokens(shadowAfter, backUs, Infinity)} beyond leases; worst window ${after.worstExcessTokens.toFixed(1)} tokens from the envelope`,
    );
    // The run did what it says: the idle agent was busy under shadow mode, silent across the switch back, busy after it.
    expect(idle.some((a) => a.tUs >= onAtUs && a.tUs < offAtUs)).toBe(true);
    expect(idleSilentFromUs).toBeLessThan(offAtUs);
    // Silent across the switch back: it spoke again only from one TTL after it.
    expect(Math.min(...idle.filter((a) => a.tUs > offAtUs).map((a) => a.tUs))).toBeGreaterThan(backUs);
    expect(tokens(idleBack, backUs, Infinity)).toBeGreaterThan(0);
    expect(tokens(shadowAfter, backUs, Infinity)).toBe(0);
    expect(after.ok, JSON.stringify(after)).toBe(true);
  });
});
