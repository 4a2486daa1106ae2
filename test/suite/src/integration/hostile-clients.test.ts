/**
 * Hostile clients as real processes against a real coordinator over real
 * NATS: each attack that once crashed the coordinator, cheated the envelope
 * or starved an honest agent, now run against an honest agent process whose
 * every admission is logged. After each: the coordinator is alive, the
 * envelope holds over the honest admissions, and the honest agent got its
 * tokens.
 *
 * Pool "api": capacity 100, refill 100/s, TTL 500 ms, leases of at most 20.
 */
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { acquireRequest, checkEnvelope, seedFromEnv } from '@tokenlease/shared/testing';
import {
  hostileOutcome,
  readAdmissionLog,
  type HostileOutcome,
  scratchDir,
  startAgentProcess,
  startCoordinator,
  startHostileClient,
  StatusProbe,
  writeConfig,
} from '@tokenlease/harness/fleet';
import type { HostileAttack } from '@tokenlease/harness/hostile-client';
import { logEvents, waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { freePort } from '@tokenlease/harness/ports';
import { scrape } from '@tokenlease/harness/scrape';
import { operatorCliScript } from '@tokenlease/harness/paths';
import { spawnNode, stop, stopAll, type Child } from '@tokenlease/harness/processes';

const CAPACITY = 100;
const REFILL = makeRate(100, 1000);
const TTL_MS = 500;
const RUN_MS = 3000;
/**
 * A flood more than a coordinator handles on a busy 2-core machine, where the
 * flooder itself takes most of a core: handled in arrival order, 25,000
 * requests/s leave the honest agent under 60% of what it gets alone.
 */
const FLOOD_PER_SECOND = 25_000;
/** How long the flooder sends where nobody reads before its flood (its own start on a shared machine), ms. */
const FLOOD_WARMUP_MS = 1500;
/** How long the flood goes on before the honest agent starts: its onset, timed apart, ms. */
const FLOOD_ONSET_MS = 1500;

/** latencyLine — "n renewals: p50 …, p99 …, max … ms" of `latenciesMs`. */
function latencyLine(latenciesMs: readonly number[]): string {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const at = (q: number): string => (sorted[Math.floor(q * (sorted.length - 1))] ?? NaN).toFixed(1);
  return `${sorted.length} renewals, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`;
}
const POOL = { capacity: CAPACITY, refill: '100/s', leaseTtlMs: TTL_MS, maxLeaseTokens: 20, maxHoldMs: 100 };

interface Run {
  readonly prefix: string;
  readonly coordinator: Child;
  readonly victim: Child;
  readonly victimId: string;
  readonly logPath: string;
}

describe('hostile clients over real NATS', () => {
  let nats: NatsHandle;
  let probe: StatusProbe;
  const seed = seedFromEnv();
  let runs = 0;
  beforeAll(async () => {
    nats = await provideNats();
    probe = await StatusProbe.connect(nats.url);
    console.log(`hostile-clients: SEED=${seed} (replay: SEED=${seed} npx vitest run src/integration/hostile-clients.test.ts)`);
  });
  afterAll(async () => {
    await stopAll();
    await probe.close();
    await nats.stop();
  });

  /**
   * start — a coordinator of `pools` and an honest agent (keeper options
   * `keeper`) offering 300/s to `pool` for RUN_MS, logging every admission;
   * `beforeVictim` runs once the coordinator serves, before the agent starts.
   */
  async function start(
    pools: Record<string, unknown> = { api: POOL },
    extra: Record<string, unknown> = {},
    pool = 'api',
    keeper: Record<string, unknown> = {},
    beforeVictim: (prefix: string) => Promise<void> = async () => {},
  ): Promise<Run> {
    runs += 1;
    const dir = scratchDir();
    const prefix = `tlhostile${seed}x${runs}`;
    const coordinator = await startCoordinator(
      nats.url,
      writeConfig(dir, { subjectPrefix: prefix, quietPeriodMs: TTL_MS, pools, ...extra }),
    );
    await beforeVictim(prefix);
    const logPath = join(dir, 'victim.log');
    const victim = await startAgentProcess({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool,
      name: 'victim',
      seed,
      durationMs: RUN_MS,
      logPath,
      traffic: { kind: 'steady', perSecond: 300 },
      keeper,
    });
    const ready = JSON.parse(victim.lines.find((l) => l.includes('"type":"ready"')) ?? '{}') as { agentId?: string };
    return { prefix, coordinator, victim, victimId: ready.agentId ?? '', logPath };
  }

  async function attack(run: Run, hostile: HostileAttack, pool = 'api'): Promise<{ sent: number; replies: Record<string, number> }> {
    const child = await startHostileClient({ natsUrl: nats.url, subjectPrefix: run.prefix, pool, durationMs: RUN_MS, attack: hostile });
    await Promise.all([child.exited, run.victim.exited]);
    return hostileOutcome(child);
  }

  /** honest — the victim's admissions, checked against B + r·T over every window; returns the tokens admitted. */
  function honest(run: Run): number {
    const admissions = readAdmissionLog(run.logPath);
    const report = checkEnvelope(admissions, CAPACITY, REFILL);
    expect(report.ok, `worst window over by ${report.worstExcessTokens}: ${JSON.stringify(report.worstWindow)}`).toBe(true);
    expect(run.coordinator.proc.exitCode, 'the coordinator died').toBeNull();
    expect(logEvents(run.coordinator.lines, { event: 'pool-failed' })).toEqual([]);
    return report.admittedTokens;
  }

  // The refill after the quiet period, offered at 3×: an unharmed agent admits most of it (and B on top).
  const fairFloor = 0.6 * ((100 * (RUN_MS - TTL_MS)) / 1000);

  it.each(['return-as', 'report-as', 'acquire-as'] as const)(
    'a %s in the victim’s name under another secret is refused and changes nothing',
    async (kind) => {
      const run = await start();
      const outcome = await attack(run, { kind, victim: run.victimId });
      const admitted = honest(run);
      console.log(
        `hostile-clients ${kind}: victim admitted ${admitted}; attacker sent ${outcome.sent}, replies ${JSON.stringify(outcome.replies)}`,
      );
      expect(outcome.sent).toBeGreaterThan(50);
      if (kind !== 'report-as') expect(outcome.replies['forbidden'] ?? 0).toBeGreaterThan(0);
      // A return never gave back the victim's tokens. (An acquire may open a lease of the attacker's own when it
      // catches the id free between two of the victim's leases: the victim then moves to a fresh id, and the
      // attacker's lease counts against the pool like any agent's.)
      expect(outcome.replies['receipt-with-tokens'] ?? 0).toBe(0);
      expect(admitted).toBeGreaterThan(fairFloor);
    },
  );

  /**
   * attackFirst — a coordinator of pool "api", then `hostile` for `hostileMs`,
   * and once `ready` resolves an honest agent (id `victimId`, if given)
   * offering 300/s for `victimMs`; resolves when both are done.
   */
  async function attackFirst(
    hostile: HostileAttack,
    hostileMs: number,
    ready: (prefix: string) => Promise<void>,
    victimMs: number,
    victimId?: string,
  ): Promise<{ run: Run; outcome: HostileOutcome }> {
    runs += 1;
    const dir = scratchDir();
    const prefix = `tlhostile${seed}x${runs}`;
    const coordinator = await startCoordinator(
      nats.url,
      writeConfig(dir, { subjectPrefix: prefix, quietPeriodMs: TTL_MS, pools: { api: POOL } }),
    );
    const attacker = await startHostileClient({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      durationMs: hostileMs,
      attack: hostile,
    });
    await ready(prefix);
    const logPath = join(dir, 'victim.log');
    const victim = await startAgentProcess({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      name: 'victim',
      ...(victimId === undefined ? {} : { agentId: victimId }),
      seed,
      durationMs: victimMs,
      logPath,
      traffic: { kind: 'steady', perSecond: 300 },
    });
    await victim.exited;
    expect(attacker.proc.exitCode, 'the attacker stopped before the honest agent did').toBeNull();
    await attacker.exited;
    return { run: { prefix, coordinator, victim, victimId: victimId ?? '', logPath }, outcome: hostileOutcome(attacker) };
  }

  it('a squatter holding the victim’s id and every id it could predict after it does not lock the victim out', async () => {
    // The id is known before the victim starts: the squatter holds it first, as one who read it from a log would.
    const victimId = `victim-${seed}-${runs + 1}`;
    const { run, outcome } = await attackFirst(
      { kind: 'squat', victim: victimId },
      // Longer than the honest agent's start and run.
      RUN_MS + 4000,
      () => new Promise((resolve) => setTimeout(resolve, 300)),
      RUN_MS,
      victimId,
    );
    const admitted = honest(run);
    // The squatter's leases hold no tokens: the victim's fair share is the whole refill after the quiet period.
    const fairShare = (100 * (RUN_MS - TTL_MS)) / 1000;
    console.log(
      `hostile-clients squat: victim admitted ${admitted} = ${((100 * admitted) / fairShare).toFixed(0)}% of its fair share ${fairShare}; ` +
        `squatter sent ${outcome.sent}, replies ${JSON.stringify(outcome.replies)}`,
    );
    expect(outcome.replies['grant'] ?? 0).toBeGreaterThan(0);
    expect(admitted).toBeGreaterThanOrEqual(0.8 * fairShare);
  });

  it('five identities renewing leases without spending do not keep an honest agent from the pool', async () => {
    const run = await start();
    const outcome = await attack(run, { kind: 'hoard', identities: 5, tokens: 20 });
    const admitted = honest(run);
    console.log(`hostile-clients hoard: victim admitted ${admitted}; hoarders ${JSON.stringify(outcome.replies)}`);
    // Six takers of one pool: the victim's weighted share of the refill after the quiet period, with slack for the holding cycle.
    expect(admitted).toBeGreaterThan(((100 * (RUN_MS - TTL_MS)) / 1000 / 6) * 0.5);
  });

  it('five identities that hold the whole pool and renew only while nobody waits let a newcomer have its share', async () => {
    // The hoarders hold all of B before the honest agent arrives.
    const holdAll = async (prefix: string): Promise<void> => {
      let status = await probe.status('api', prefix);
      for (let i = 0; i < 200 && !(status.leases === 5 && status.leasedTokens === CAPACITY); i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = await probe.status('api', prefix);
      }
      expect(status).toMatchObject({ leases: 5, leasedTokens: CAPACITY });
    };
    // The hoarders run longer than the honest agent's start and run.
    const { run, outcome } = await attackFirst(
      { kind: 'hoard', identities: 5, tokens: 20, betweenHolds: true },
      2 * RUN_MS + 4000,
      holdAll,
      2 * RUN_MS,
    );
    const admitted = honest(run);
    // Six takers of one pool, the refill over the honest agent's run shared by turns: its fair share.
    const fairShare = (100 * 2 * RUN_MS) / 1000 / 6;
    console.log(
      `hostile-clients hoard between holds: victim admitted ${admitted} (fair share ${fairShare.toFixed(1)}); hoarders ${JSON.stringify(outcome.replies)}`,
    );
    expect(admitted).toBeGreaterThan(0.8 * fairShare);
  });

  it('agent classes named after Object.prototype members crash nothing', async () => {
    const run = await start({ api: { ...POOL, classWeights: { gold: 2 } }, trickle: { ...POOL, leaseMode: 'rate' } });
    const [outcome] = await Promise.all([
      attack(run, { kind: 'prototype-classes' }),
      attack(run, { kind: 'prototype-classes' }, 'trickle'),
    ]);
    const admitted = honest(run);
    expect(outcome.replies['internal'] ?? 0).toBe(0);
    expect(admitted).toBeGreaterThan(fairFloor / 2);
  });

  it('reports for new names make no template pool, and a new tenant is served', async () => {
    const pools = { api: POOL };
    const templates = { 'tenant:*': { ...POOL, maxPools: 50 } };
    const run = await start(pools, { templates }, 'tenant:real');
    const outcome = await attack(run, { kind: 'template-reports', templatePrefix: 'tenant:fake', count: 5000 }, 'tenant:fake0');
    const admitted = honest(run);
    expect(outcome.sent).toBe(5000);
    expect(admitted).toBeGreaterThan(fairFloor);
    for (const name of ['tenant:fake0', 'tenant:fake4999']) await expect(probe.status(name, run.prefix)).rejects.toThrow(/unknown-pool/);
  });

  /**
   * identityRun — a coordinator binding identities, serving `api` as
   * `pool`, the hostile client `hostile` under its identity, and then
   * (after `headStartMs`) an honest agent of identity "honest" offering
   * 300/s for RUN_MS; returns the honest admissions (envelope checked), the
   * attacker's outcome and the pool's most leases seen meanwhile.
   */
  async function identityRun(
    pool: Record<string, unknown>,
    hostile: HostileAttack,
    headStartMs: number,
  ): Promise<{ admitted: number; outcome: HostileOutcome; leasesMax: number; joinedAfterMs: number; claimsRefused: number }> {
    runs += 1;
    const dir = scratchDir();
    const prefix = `tlhostile${seed}x${runs}`;
    const config = { subjectPrefix: prefix, quietPeriodMs: TTL_MS, bindIdentity: true, pools: { api: pool } };
    const port = await freePort();
    const coordinator = await startCoordinator(nats.url, writeConfig(dir, config), { http: `127.0.0.1:${port}` });
    const startedMs = performance.now();
    const attacker = await startHostileClient({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      durationMs: headStartMs + RUN_MS + 1000,
      attack: hostile,
    });
    // Identities are bound: the probe's replies come to the anonymous identity's own inbox.
    const watcher = await StatusProbe.connect(nats.url, { nats: { inboxPrefix: '_INBOX_anon' } });
    let leasesMax = 0;
    const watch = async (untilMs: number): Promise<void> => {
      while (performance.now() < untilMs) {
        leasesMax = Math.max(leasesMax, (await watcher.status('api', prefix)).leases);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await watch(startedMs + headStartMs);
    const joinedAfterMs = performance.now() - startedMs;
    const logPath = join(dir, 'honest.log');
    const victim = await startAgentProcess({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      identity: 'honest',
      pool: 'api',
      name: 'honest',
      seed,
      durationMs: RUN_MS,
      logPath,
      traffic: { kind: 'steady', perSecond: 300 },
    });
    await Promise.all([victim.exited.then(() => stop(attacker)), watch(performance.now() + RUN_MS)]);
    await attacker.exited;
    await watcher.close();
    const metrics = await scrape(`http://127.0.0.1:${port}/metrics`);
    const claimsRefused = metrics.find((m) => m.name === 'tokenlease_class_claims_refused_total' && m.labels['pool'] === 'api')?.value ?? 0;
    const admitted = honest({ prefix, coordinator, victim, victimId: '', logPath });
    return { admitted, outcome: hostileOutcome(attacker), leasesMax, joinedAfterMs, claimsRefused };
  }

  it('one identity filling maxLeases with 0-token leases under fresh ids does not lock out a new agent of another', async () => {
    // A small maxLeases, as an attacker would find it: 200 leases, of which one identity may hold 100 (maxLeasesPerIdentity).
    const attack: HostileAttack = { kind: 'lease-exhaustion', identity: 'mallory' };
    // Control: no cap per identity (maxLeasesPerIdentity = maxLeases), as before it existed.
    const open = await identityRun({ ...POOL, maxLeases: 200, maxLeasesPerIdentity: 200 }, attack, 1500);
    const { admitted, outcome, leasesMax, joinedAfterMs } = await identityRun({ ...POOL, maxLeases: 200 }, attack, 1500);
    // Its fair share: the only taker of tokens, it may have the level of B it finds and the whole refill of its run.
    const fairTokens = CAPACITY + (100 * RUN_MS) / 1000;
    console.log(
      `hostile-clients lease-exhaustion: without a cap per identity, an honest agent joining ${open.joinedAfterMs.toFixed(0)} ms into the attack ` +
        `admitted ${open.admitted} (pool leases at most ${open.leasesMax}); with the default cap, joining after ${joinedAfterMs.toFixed(0)} ms, ` +
        `${admitted} = ${((100 * admitted) / fairTokens).toFixed(0)}% of its fair share ${fairTokens} (B + r·T of its run); pool leases at most ${leasesMax} of 200; ` +
        `attacker sent ${outcome.sent}, replies ${JSON.stringify(outcome.replies)}`,
    );
    expect(admitted).toBeGreaterThan(open.admitted);
    expect(outcome.replies['unavailable:peer'] ?? 0).toBeGreaterThan(0);
    expect(outcome.replies['grant'] ?? 0).toBeGreaterThanOrEqual(100);
    expect(leasesMax).toBeLessThanOrEqual(200);
    expect(admitted).toBeGreaterThanOrEqual(0.8 * fairTokens);
  });

  it('an identity claiming a class granted to another weighs 1: an honest agent keeps its equal share', async () => {
    // Holds long enough for a weight-4 turn (4 × minGrantTokens 5 = 20 tokens, 200 ms of refill) to accrue.
    const premium = { ...POOL, maxHoldMs: 250, classWeights: { premium: 4 }, classIdentities: { premium: ['svc'] } };
    const attack: HostileAttack = { kind: 'false-class', identity: 'mallory', agentClass: 'premium', agents: 1 };
    // Control: the same claim, granted to the claimant, takes its weight of 4.
    const granted = await identityRun({ ...premium, classIdentities: { premium: ['mallory'] } }, attack, 0);
    const refused = await identityRun(premium, attack, 0);
    // Equal weights: half of the refill after the quiet period, less the holding slack: one hold's refill (its first
    // request may wait a whole hold behind the claimant's turn, and its last one may end after its run).
    const holdSlackTokens = (100 * premium.maxHoldMs) / 1000;
    const fairTokens = (0.5 * 100 * (RUN_MS - TTL_MS)) / 1000 - holdSlackTokens;
    const share = (run: { admitted: number; outcome: HostileOutcome; claimsRefused: number }): string =>
      `honest ${run.admitted} (${((100 * run.admitted) / fairTokens).toFixed(0)}% of its fair share ${fairTokens} = half the refill after the quiet period − one hold), claimant ${run.outcome.spentTokens}, ` +
      `claims counted as refused ${run.claimsRefused}, claimant's replies ${JSON.stringify(run.outcome.replies)}`;
    console.log(
      `hostile-clients false-class: premium (weight 4) granted to the claimant: ${share(granted)}; ` +
        `granted to another identity only: ${share(refused)}`,
    );
    expect(refused.admitted).toBeGreaterThanOrEqual(0.8 * fairTokens);
    expect(refused.admitted).toBeGreaterThan(granted.admitted);
    // The operator sees the claims the configuration does not grant, in the coordinator's metrics.
    expect(refused.claimsRefused).toBeGreaterThan(0);
    expect(granted.claimsRefused).toBe(0);
  });

  it('50,000 requests held on one pool leave another pool answering at once', async () => {
    runs += 1;
    const prefix = `tlhostile${seed}x${runs}`;
    const busy = { capacity: 10, refill: '1/s', leaseTtlMs: 60_000, maxLeaseTokens: 10, maxHoldMs: 30_000, maxWaiting: 100_000 };
    const coordinator = await startCoordinator(nats.url, writeConfig(scratchDir(), { subjectPrefix: prefix, pools: { api: POOL, busy } }));
    const flood = await startHostileClient({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'busy',
      durationMs: 60_000,
      attack: { kind: 'hold-flood', count: 50_000, holdMs: 30_000 },
    });
    let waiting = 0;
    for (let i = 0; i < 600 && waiting < 50_000; i += 1) {
      waiting = (await probe.status('busy', prefix)).waiting;
      if (waiting < 50_000) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // An honest client on the other pool: every request answered, none timed out (each may take 2 s at most).
    const latenciesMs: number[] = [];
    const codes = new Set<string>();
    for (let seq = 1; seq <= 200; seq += 1) {
      const message = acquireRequest({ agentId: 'honest', seq, tokensWanted: 1 });
      const startedMs = performance.now();
      const reply = await probe.raw(`${prefix}.v2.acquire.api.anon`, new TextEncoder().encode(JSON.stringify(message)));
      latenciesMs.push(performance.now() - startedMs);
      codes.add(reply.ok ? (reply.value.kind === 'error' ? reply.value.code : reply.value.kind) : reply.code);
    }
    await stop(flood);
    latenciesMs.sort((a, b) => a - b);
    const at = (q: number): string => (latenciesMs[Math.floor(q * (latenciesMs.length - 1))] ?? NaN).toFixed(1);
    console.log(
      `hostile-clients hold-flood: ${waiting} held on busy; 200 acquires on api: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms (figures: npm run bench)`,
    );
    expect(waiting).toBe(50_000);
    expect([...codes]).toEqual(['grant']);
    expect(coordinator.proc.exitCode).toBeNull();
  });

  it('one client flooding one pool delays itself, not an honest agent or another pool’s renewals', async () => {
    // The flooder warms up first, sending where no coordinator reads: on a 2-core machine its own start (its JIT) would
    // otherwise take the CPU the coordinator needs, which a flooder on a machine of its own does not. Renewals of
    // another agent on another pool are timed from the flood's first request: through its onset (a coordinator meeting
    // a flood for the first time), then while the honest agent runs in a flood going on for FLOOD_ONSET_MS already.
    let flood: Child | undefined;
    let floodStartedMs = 0;
    const renewer = { seq: 0, leaseId: null as string | null, codes: new Set<string>() };
    const renewals = async (prefix: string, going: () => boolean): Promise<number[]> => {
      const latenciesMs: number[] = [];
      while (going() && renewer.seq < 10_000) {
        renewer.seq += 1;
        const message = acquireRequest({ agentId: 'renewer', seq: renewer.seq, tokensWanted: 0, leaseId: renewer.leaseId, tokensLeft: 0 });
        const startedMs = performance.now();
        const reply = await probe
          .raw(`${prefix}.v2.acquire.api.renewer`, new TextEncoder().encode(JSON.stringify(message)))
          .catch(() => null);
        latenciesMs.push(performance.now() - startedMs);
        const code =
          reply === null ? 'timeout' : reply.ok ? (reply.value.kind === 'error' ? reply.value.code : reply.value.kind) : reply.code;
        renewer.codes.add(code);
        if (reply?.ok === true && reply.value.kind === 'grant') renewer.leaseId = reply.value.leaseId;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return latenciesMs;
    };
    let onsetMs: number[] = [];
    const run = await start({ api: POOL, busy: POOL }, {}, 'api', {}, async (prefix) => {
      flood = await startHostileClient({
        natsUrl: nats.url,
        subjectPrefix: prefix,
        pool: 'busy',
        // Stopped once the honest agent's run is over.
        durationMs: 60_000,
        attack: { kind: 'flood', identity: 'flooder', perSecond: FLOOD_PER_SECOND, warmupMs: FLOOD_WARMUP_MS },
      });
      await waitForEvent(flood, { type: 'flooding' }, 2 * FLOOD_WARMUP_MS + 10_000);
      floodStartedMs = performance.now();
      onsetMs = await renewals(prefix, () => performance.now() - floodStartedMs < FLOOD_ONSET_MS);
    });
    if (flood === undefined) throw new Error('the flooder did not start');
    const sustainedMs = await renewals(run.prefix, () => run.victim.proc.exitCode === null);
    await run.victim.exited;
    const floodStillOn = flood.proc.exitCode === null;
    const floodMs = performance.now() - floodStartedMs;
    await stop(flood);
    const admitted = honest(run);
    const outcome = hostileOutcome(flood);
    const sentPerSecond = Math.round(outcome.sent / (floodMs / 1000));
    console.log(
      `hostile-clients flood: ${sentPerSecond} requests/s on busy; victim admitted ${admitted} (unharmed share ${fairFloor / 0.6}); renewals on api ` +
        `in its first ${FLOOD_ONSET_MS} ms: ${latencyLine(onsetMs)}; after, while the victim ran: ${latencyLine(sustainedMs)} (figures: npm run bench)`,
    );
    // A flood it was, even on a busy machine (the flooder itself needs most of a core), through every renewal timed.
    expect(floodStillOn).toBe(true);
    expect(sentPerSecond).toBeGreaterThan(0.5 * FLOOD_PER_SECOND);
    expect([...renewer.codes]).toEqual(['grant']);
    // The victim alone on its pool: the refill after the quiet period, less 20%.
    expect(admitted).toBeGreaterThan((0.8 * fairFloor) / 0.6);
  });

  /** hostile — a hostile client's whole run against `prefix`: started, awaited, its outcome. */
  async function hostile(prefix: string, attack: HostileAttack): Promise<HostileOutcome> {
    const child = await startHostileClient({ natsUrl: nats.url, subjectPrefix: prefix, pool: 'api', durationMs: 60_000, attack });
    await child.exited;
    return hostileOutcome(child);
  }

  it('an identity the configuration names no operator lists nothing and reloads nothing, even where the bus lets it ask', async () => {
    runs += 1;
    const prefix = `tlhostile${seed}x${runs}`;
    // An open bus (no permissions stop the agent): the coordinator's own check is what is tested.
    const config = { subjectPrefix: prefix, bindIdentity: true, operatorIdentities: ['operator'], pools: { api: POOL } };
    const coordinator = await startCoordinator(nats.url, writeConfig(scratchDir(), config));
    const [listings, reloads, elsewhere] = await Promise.all([
      hostile(prefix, { kind: 'operator-ops', op: 'pools', identity: 'checkout', count: 200 }),
      hostile(prefix, { kind: 'operator-ops', op: 'reload', identity: 'checkout', count: 500 }),
      // An operator's own requests on a pool token other than "_": answered, not left to time out.
      hostile(prefix, { kind: 'operator-ops', op: 'pools', identity: 'operator', count: 50, poolToken: 'api' }),
    ]);
    const operator = await hostile(prefix, { kind: 'operator-ops', op: 'pools', identity: 'operator', count: 1 });
    const one = await hostile(prefix, { kind: 'operator-ops', op: 'pools', identity: 'checkout', count: 1 });
    expect(one.replies).toEqual({ forbidden: 1 });
    console.log(`hostile-clients operator-ops: one listing as checkout, alone, refused forbidden in ${one.latencyMs.max} ms`);
    console.log(
      `hostile-clients operator-ops: 200 listings as checkout ${JSON.stringify(listings.replies)} (p50 ${listings.latencyMs.p50} ms, max ${listings.latencyMs.max} ms); ` +
        `500 reloads ${JSON.stringify(reloads.replies)} (max ${reloads.latencyMs.max} ms); 50 on pools.api ${JSON.stringify(elsewhere.replies)} (max ${elsewhere.latencyMs.max} ms)`,
    );
    expect(listings.replies).toEqual({ forbidden: 200 });
    expect(reloads.replies).toEqual({ forbidden: 500 });
    expect(elsewhere.replies).toEqual({ 'bad-request': 50 });
    expect(operator.replies).toEqual({ pools: 1 });
    expect(logEvents(coordinator.lines, { event: 'reloaded' })).toEqual([]);
    expect(coordinator.proc.exitCode).toBeNull();
  });

  it('200 listings of 20,000 pools at once leave the coordinator answering everyone else', { timeout: 120_000 }, async () => {
    const STATUS_TIMEOUT_MS = 15_000;
    runs += 1;
    const prefix = `tlhostile${seed}x${runs}`;
    const config = {
      subjectPrefix: prefix,
      quietPeriodMs: TTL_MS,
      pools: { api: POOL },
      // One client makes all 20,000: its identity may (the default would be half of maxPools).
      templates: { 'k:*': { ...POOL, maxPools: 30_000, maxPoolsPerIdentity: 30_000 } },
    };
    const coordinator = await startCoordinator(nats.url, writeConfig(scratchDir(), config));
    const made = await hostile(prefix, { kind: 'make-pools', templatePrefix: 'k:', count: 20_000 });
    // Every pool made (a request a busy machine let time out was asked again, and answered once).
    expect(made.replies['grant']).toBe(20_000);
    // The status of another pool asked every 20 ms while the listings run: each must be answered. Alone the
    // slowest takes about 0.5 s; in a full test run, two cores shared with a dozen busy processes, it has
    // taken 1.5 s, and past 5 s in two runs (an open question of hostile clients, round two: a listing flood
    // on a contended machine), so each is given STATUS_TIMEOUT_MS and the slowest is printed.
    const flood = startHostileClient({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      durationMs: 60_000,
      attack: { kind: 'operator-ops', op: 'pools', identity: 'anon', count: 200 },
    });
    const latenciesMs: number[] = [];
    let done = false;
    const listed = flood.then(async (child) => {
      await child.exited;
      done = true;
      return hostileOutcome(child);
    });
    while (!done) {
      const startedMs = performance.now();
      await probe.status('api', prefix, undefined, STATUS_TIMEOUT_MS);
      latenciesMs.push(performance.now() - startedMs);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const listings = await listed;
    const worstMs = Math.max(...latenciesMs);
    console.log(
      `hostile-clients listing flood: 20,001 pools; 200 listings ${JSON.stringify(listings.replies)} (p50 ${listings.latencyMs.p50} ms, max ${listings.latencyMs.max} ms); ` +
        `${latenciesMs.length} status queries of another pool meanwhile, the slowest ${worstMs.toFixed(0)} ms`,
    );
    // The budget deferred some pages rather than spend the coordinator on them; every listing was answered.
    expect(listings.replies['unavailable'] ?? 0).toBeGreaterThan(0);
    expect((listings.replies['pools'] ?? 0) + (listings.replies['unavailable'] ?? 0)).toBe(200);
    // The operator CLI, right after, with the budget spent: it waits out the deferrals and lists every pool.
    const cliStartedMs = performance.now();
    const cli = spawnNode('tokenlease pools', operatorCliScript(), ['pools', '--json', '--prefix', prefix], { NATS_URL: nats.url });
    const { code } = await cli.exited;
    expect(code, cli.stderr()).toBe(0);
    const poolsListed = (JSON.parse(cli.lines.join('\n')) as { pools: unknown[] }).pools.length;
    console.log(
      `hostile-clients listing flood: then tokenlease pools listed ${poolsListed} pools in ${(performance.now() - cliStartedMs).toFixed(0)} ms`,
    );
    expect(poolsListed).toBe(20_001);
    expect(coordinator.proc.exitCode).toBeNull();
  });

  /** againstRogue — an honest agent (keeper options `keeper`, grant keys `grantPublicKeys`) offering 300/s to "api" for RUN_MS, with `rogue` the only responder. */
  async function againstRogue(
    name: string,
    rogue: HostileAttack,
    keeper: Record<string, unknown>,
    grantPublicKeys?: readonly string[],
  ): Promise<{ admissions: ReturnType<typeof readAdmissionLog>; victim: Child; outcome: HostileOutcome }> {
    const dir = scratchDir();
    runs += 1;
    const prefix = `tlrogue${seed}x${runs}`;
    const responder = await startHostileClient({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      // It answers until the victim is done (stopped then), however slowly a busy machine starts the victim.
      durationMs: RUN_MS + 10_000,
      attack: rogue,
    });
    const logPath = join(dir, 'victim.log');
    const victim = await startAgentProcess({
      natsUrl: nats.url,
      subjectPrefix: prefix,
      pool: 'api',
      name,
      seed,
      durationMs: RUN_MS - 500,
      logPath,
      traffic: { kind: 'steady', perSecond: 300 },
      keeper,
      ...(grantPublicKeys === undefined ? {} : { grantPublicKeys }),
    });
    await victim.exited;
    await stop(responder);
    return { admissions: readAdmissionLog(logPath), victim, outcome: hostileOutcome(responder) };
  }

  // What the agent is configured to expect of "api": the real pool's limits.
  const EXPECTED = { capacityTokens: CAPACITY, maxLeaseTokens: 20, refillTokens: 100, refillPeriodMs: 1000 };
  const GENEROUS = { capacityTokens: 1_000_000_000, maxLeaseTokens: 1_000_000, refillTokens: 1_000_000_000, refillPeriodMs: 1000 };

  it('a smart rogue stating generous limits of its own is believed by an agent that expects nothing', async () => {
    const { admissions, outcome } = await againstRogue('believer', { kind: 'rogue-smart', limits: GENEROUS }, {});
    const report = checkEnvelope(admissions, CAPACITY, REFILL);
    console.log(
      `hostile-clients rogue-smart, no expected limits: ${report.admittedTokens} admitted in ${RUN_MS - 500} ms on a pool of ${CAPACITY} at 100/s ` +
        `(worst window over B + r·T by ${report.worstExcessTokens}); rogue sent ${outcome.sent} grants`,
    );
    expect(report.ok).toBe(false);
  });

  it('an agent that expects the pool’s limits admits normally from the real coordinator', async () => {
    const run = await start({ api: POOL }, {}, 'api', { expectedLimits: EXPECTED });
    await run.victim.exited;
    const admitted = honest(run);
    const implausible = logEvents(run.victim.lines, { type: 'event', event: 'implausible-grant' }).length;
    console.log(`hostile-clients expected limits, real coordinator: ${admitted} admitted, ${implausible} implausible-grant events`);
    expect(implausible).toBe(0);
    expect(admitted).toBeGreaterThan(fairFloor);
  });

  it.each([
    ['generous limits', GENEROUS],
    ['the expected limits themselves, granted as fast as asked', EXPECTED],
  ] as const)('an agent that expects the pool’s limits admits within them from a smart rogue stating %s', async (_name, limits) => {
    const { admissions, victim, outcome } = await againstRogue('expecting', { kind: 'rogue-smart', limits }, { expectedLimits: EXPECTED });
    const report = checkEnvelope(admissions, CAPACITY, REFILL);
    const implausible = logEvents(victim.lines, { type: 'event', event: 'implausible-grant' }).length;
    console.log(
      `hostile-clients rogue-smart stating ${JSON.stringify(limits)}, expectedLimits set: ${report.admittedTokens} admitted, ` +
        `worst window ${report.worstExcessTokens} over B + r·T; ${implausible} implausible-grant events; rogue sent ${outcome.sent} grants`,
    );
    expect(outcome.sent).toBeGreaterThan(0);
    expect(report.ok, `worst window over by ${report.worstExcessTokens}: ${JSON.stringify(report.worstWindow)}`).toBe(true);
    expect(implausible).toBeGreaterThan(0);
  });

  describe('signed grants', () => {
    const signing = generateKeyPairSync('ed25519');
    const publicPem = signing.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    // A key of a rotation that has not begun signing yet: listed beside the current one.
    const nextPem = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();

    it('an agent with the public key admits normally from a coordinator that signs with the private one', async () => {
      const dir = scratchDir();
      const keyPath = join(dir, 'grant-signing.pem');
      writeFileSync(keyPath, signing.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
      runs += 1;
      const prefix = `tlhostile${seed}x${runs}`;
      const coordinator = await startCoordinator(
        nats.url,
        writeConfig(dir, { subjectPrefix: prefix, quietPeriodMs: TTL_MS, pools: { api: POOL } }),
        {
          args: ['--grant-signing-key', keyPath],
        },
      );
      const logPath = join(dir, 'victim.log');
      const victim = await startAgentProcess({
        natsUrl: nats.url,
        subjectPrefix: prefix,
        pool: 'api',
        name: 'victim',
        seed,
        durationMs: RUN_MS,
        logPath,
        traffic: { kind: 'steady', perSecond: 300 },
        grantPublicKeys: [nextPem, publicPem],
      });
      await victim.exited;
      const admitted = honest({ prefix, coordinator, victim, victimId: '', logPath });
      const implausible = logEvents(victim.lines, { type: 'event', event: 'implausible-grant' }).length;
      console.log(`hostile-clients signed grants, real coordinator: ${admitted} admitted, ${implausible} implausible-grant events`);
      expect(implausible).toBe(0);
      expect(admitted).toBeGreaterThan(fairFloor);
      expect(coordinator.lines.join('\n')).not.toContain(keyPath);
    });

    it.each([
      ['unsigned', false],
      ['signed by another key', true],
    ] as const)('an agent with the public key admits nothing from a smart rogue whose grants are %s', async (_name, sign) => {
      const { admissions, victim, outcome } = await againstRogue('signed-only', { kind: 'rogue-smart', limits: EXPECTED, sign }, {}, [
        publicPem,
      ]);
      const implausible = logEvents(victim.lines, { type: 'event', event: 'implausible-grant' }).length;
      console.log(
        `hostile-clients rogue-smart ${sign ? 'signed by its own key' : 'unsigned'}: ${admissions.length} admissions; ${implausible} implausible-grant events; rogue sent ${outcome.sent} grants`,
      );
      expect(outcome.sent).toBeGreaterThan(0);
      expect(admissions).toEqual([]);
      expect(implausible).toBeGreaterThan(0);
    });
  });

  it('an agent refuses the grants of a rogue responder: 2^52 tokens for 24 h admit nothing', async () => {
    const { admissions, victim, outcome } = await againstRogue('victim', { kind: 'rogue-responder' }, {});
    expect(outcome.sent).toBeGreaterThan(0);
    expect(admissions).toEqual([]);
    expect(logEvents(victim.lines, { type: 'event', event: 'implausible-grant' }).length).toBeGreaterThan(0);
  });
});
