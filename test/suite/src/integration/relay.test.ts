/**
 * A root coordinator, two relay processes on their own prefixes and two
 * agent processes under each, over real NATS, one relay SIGKILLed mid-run:
 * the root's B + r·T holds over the merged admission logs of the whole
 * tree, and what the killed relay's agents admit after the kill is at most
 * what that relay held from the root (its last upstream grant's bound);
 * and the root's status counts the calls the agents under the relays
 * decided, as the relays passed them up.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope } from '@tokenlease/shared/testing';
import { readAdmissionLog, startAgentProcess, startRelay, StatusProbe } from '@tokenlease/harness/fleet';
import { parseLogLine } from '@tokenlease/harness/log-events';
import { provideNats } from '@tokenlease/harness/nats';
import { startRelayRoot, startSteadyAgents, writeRelayConfig } from '../relay-tree.js';
import { serverForSuite } from '../servers.js';

const CAPACITY = 200;
const REFILL = makeRate(400, 1000);
const RUN_MS = 6000;
const KILL_AT_MS = 3000;
const POOL = 'api';
const LIMITS = { capacity: CAPACITY, refill: '400/s' };

/** The root's pool: leases of up to 100, so a relay's chunk covers its agents. */
const rootDoc = (root: string): object => ({
  subjectPrefix: root,
  pools: { [POOL]: { ...LIMITS, leaseTtlMs: 1000, maxLeaseTokens: 100 } },
});
/** A relay on `prefix` leasing from `root`: the root's limits, shorter and smaller leases. */
const relayDoc = (root: string, prefix: string): object => ({
  upstreamPrefix: root,
  subjectPrefix: prefix,
  pools: { [POOL]: { ...LIMITS, leaseTtlMs: 600, maxLeaseTokens: 20 } },
  uplink: { refreshMs: 250, holdMs: 50, replyTimeoutMs: 250 },
});

describe('relays under a root coordinator over real NATS', () => {
  const nats = serverForSuite(provideNats);

  it('keep B + r·T over the whole tree, and a killed relay strands at most what it held', { timeout: 60_000 }, async () => {
    const { seed, random, dir, root } = await startRelayRoot(nats().url, 'relay', import.meta.url, 'tlroot', rootDoc);
    const relays = await Promise.all(
      [0, 1].map((i) => startRelay(nats().url, writeRelayConfig(dir, `relay-${i}`, relayDoc(root, `${root}r${i}`)), `r${i}s${seed}`)),
    );
    const logs = [0, 1].flatMap((i) => [0, 1].map((j) => ({ relay: i, path: join(dir, `agent-${i}-${j}.log`) })));
    const agents = await Promise.all(
      logs.map(({ relay, path }, k) =>
        startAgentProcess({
          natsUrl: nats().url,
          subjectPrefix: `${root}r${relay}`,
          pool: POOL,
          name: `a${k}`,
          seed: random.int(0, 2 ** 31),
          durationMs: RUN_MS,
          logPath: path,
          traffic: k % 2 === 0 ? { kind: 'steady', perSecond: 300 } : { kind: 'bursty', perSecond: 600, onMs: 300, offMs: 300 },
        }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, KILL_AT_MS));
    const killed = relays[0]!;
    const killedAtUs = hostMonoNowUs();
    killed.proc.kill('SIGKILL');
    await killed.exited;
    const exits = await Promise.all(agents.map((a) => a.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0]);

    const byRelay = logs.map(({ relay, path }) => ({ relay, admissions: readAdmissionLog(path) }));
    const all = byRelay.flatMap((l) => l.admissions);
    const report = checkEnvelope(all, CAPACITY, REFILL);
    const held = killed.lines
      .map(parseLogLine)
      .filter((f) => f?.['event'] === 'upstream-lease')
      .map((f) => Number(f?.['tokensHeld']));
    const heldLast = held[held.length - 1] ?? 0;
    const afterKill = byRelay
      .filter((l) => l.relay === 0)
      .flatMap((l) => l.admissions)
      .filter((a) => a.tUs > killedAtUs)
      .reduce((sum, a) => sum + a.cost, 0);
    const underLive = byRelay
      .filter((l) => l.relay === 1)
      .flatMap((l) => l.admissions)
      .reduce((sum, a) => sum + a.cost, 0);
    console.log(`relay: ${JSON.stringify(report)}; killed relay held ${heldLast}, its agents admitted ${afterKill} after the kill`);
    expect(report.ok, `worst window: ${JSON.stringify(report.worstWindow)} over by ${report.worstExcessTokens} tokens`).toBe(true);
    expect(afterKill).toBeLessThanOrEqual(heldLast);
    expect(held.length).toBeGreaterThan(0);
    // The tree does its job: the live relay's agents keep admitting, and the whole tree admits most of the refill.
    expect(underLive).toBeGreaterThan(0.3 * ((400 * RUN_MS) / 1000) * 0.5);
    expect(report.admittedTokens).toBeGreaterThan(0.4 * ((400 * (RUN_MS - 1000)) / 1000));
    // Calls decided under the relays reach the root's status (the killed relay's last ones are lost with it).
    const probe = await StatusProbe.connect(nats().url);
    const calls = (await probe.status(POOL, root)).calls;
    await probe.close();
    console.log(`relay: the root counted ${JSON.stringify(calls)} calls; the agents' logs hold ${all.length} admissions`);
    expect(calls?.admitted).toBeGreaterThan(0.5 * byRelay.filter((l) => l.relay === 1).flatMap((l) => l.admissions).length);
    expect(calls?.admitted).toBeLessThanOrEqual(all.length);
  });

  it('moves the agents of a killed relay to the root when they list it, and the envelope holds', { timeout: 60_000 }, async () => {
    const run = await startRelayRoot(nats().url, 'relay-failover', import.meta.url, 'tlfo', rootDoc);
    const { seed, dir, root } = run;
    const configPath = writeRelayConfig(dir, 'relay', relayDoc(root, `${root}r`));
    const relay = await startRelay(nats().url, configPath, `rs${seed}`);
    const spec = { prefix: `${root}r`, failoverPrefixes: [root], pools: [POOL, POOL], name: 'f', durationMs: RUN_MS, perSecond: 300 };
    const { paths, agents } = await startSteadyAgents(nats().url, run, spec);

    await new Promise((resolve) => setTimeout(resolve, KILL_AT_MS));
    const killedAtUs = hostMonoNowUs();
    relay.proc.kill('SIGKILL');
    await relay.exited;
    const exits = await Promise.all(agents.map((a) => a.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0]);
    const moved = agents.flatMap((a) => a.lines).filter((line) => line.includes('"event":"coordinator-moved"')).length;
    const all = paths.flatMap((path) => readAdmissionLog(path));
    const report = checkEnvelope(all, CAPACITY, REFILL);
    // From one lease TTL of the relay after the kill on, what the agents admit comes from the root.
    const lateUs = killedAtUs + 1_000_000;
    const late = all.filter((a) => a.tUs > lateUs).reduce((sum, a) => sum + a.cost, 0);
    const lateSpanS = (RUN_MS - KILL_AT_MS - 1000) / 1000;
    console.log(`relay failover: ${moved} moves; ${late} tokens admitted over the last ${lateSpanS} s; ${JSON.stringify(report)}`);
    expect(report.ok, `worst window: ${JSON.stringify(report.worstWindow)} over by ${report.worstExcessTokens} tokens`).toBe(true);
    expect(moved).toBe(2);
    // Two agents offering 600/s in all against a refill of 400/s: served at the root, they keep most of it.
    expect(late).toBeGreaterThan(0.5 * 400 * lateSpanS);
  });
});
