/**
 * A relay with default uplink settings shares fairly with agents on the
 * root, over real NATS: a root coordinator whose pool weighs relays as the
 * fleet behind them (`relayClasses`), two saturating agent processes on
 * the root and two under one relay process whose uplink sets only its
 * class. Each agent offers 300 tokens/s against a refill of 400/s. Over
 * the seconds after the warm-up, an agent under the relay admits at least
 * 0.85 of what an agent on the root admits (the closing figures are
 * printed). A relay that asked the root for a shorter hold than the agents
 * (its default was once 100 ms against their 200 ms) dropped out of the
 * root's turns sooner: about half the share.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { checkEnvelope } from '@tokenlease/shared/testing';
import { readAdmissionLog, startAgentProcess, startRelay, type LoggedAdmission } from '@tokenlease/harness/fleet';
import { provideNats } from '@tokenlease/harness/nats';
import { startRelayRoot, writeRelayConfig } from '../relay-tree.js';
import { serverForSuite } from '../servers.js';

const POOL = 'api';
const LIMITS = { capacity: 200, refill: '400/s' };
const REFILL = makeRate(400, 1000);
/** RUN_MS — each agent's run; the share is measured from WARM_MS to 500 ms before its end (7.5 s; over 4.5 s, one CI run on a loaded machine saw 0.835 and the next 0.978). */
const RUN_MS = 10_000;
const WARM_MS = 2000;
const OFFERED_PER_SECOND = 300;

const rootDoc = (root: string): object => ({
  subjectPrefix: root,
  pools: { [POOL]: { ...LIMITS, leaseTtlMs: 1000, maxLeaseTokens: 100, relayClasses: { relay: 100 } } },
});
/** The relay: the root's limits, its own shorter leases, and uplink defaults but for the class it asks under. */
const relayDoc = (root: string, prefix: string): object => ({
  upstreamPrefix: root,
  subjectPrefix: prefix,
  pools: { [POOL]: { ...LIMITS, leaseTtlMs: 600, maxLeaseTokens: 20 } },
  uplink: { agentClass: 'relay' },
});

describe('a relay with default settings beside agents on the root', () => {
  const nats = serverForSuite(provideNats);

  it('gets its agents their share: at least 0.85 of a root agent’s', { timeout: 90_000 }, async () => {
    const run = await startRelayRoot(nats().url, 'relay-share', import.meta.url, 'tlshare', rootDoc);
    const { seed, random, dir, root } = run;
    const relayPrefix = `${root}r`;
    await startRelay(nats().url, writeRelayConfig(dir, 'relay', relayDoc(root, relayPrefix)), `rs${seed}`);
    const specs = [
      { name: 'root-0', prefix: root },
      { name: 'root-1', prefix: root },
      { name: 'relay-0', prefix: relayPrefix },
      { name: 'relay-1', prefix: relayPrefix },
    ];
    const agents = await Promise.all(
      specs.map((spec) =>
        startAgentProcess({
          natsUrl: nats().url,
          subjectPrefix: spec.prefix,
          pool: POOL,
          name: spec.name,
          seed: random.int(0, 2 ** 31),
          durationMs: RUN_MS,
          logPath: join(dir, `${spec.name}.log`),
          traffic: { kind: 'steady', perSecond: OFFERED_PER_SECOND },
        }),
      ),
    );
    const exits = await Promise.all(agents.map((a) => a.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0]);

    const logs = new Map(specs.map((spec) => [spec.name, readAdmissionLog(join(dir, `${spec.name}.log`))]));
    const all = [...logs.values()].flat().sort((a, b) => a.tUs - b.tUs);
    const envelope = checkEnvelope(all, 200, REFILL);
    const firstUs = Math.min(...all.map((a) => a.tUs));
    const fromUs = firstUs + WARM_MS * 1000;
    const toUs = firstUs + (RUN_MS - 500) * 1000;
    const perSecond = (admissions: readonly LoggedAdmission[]): number =>
      (admissions.filter((a) => a.tUs >= fromUs && a.tUs < toUs).reduce((sum, a) => sum + a.cost, 0) * 1e6) / (toUs - fromUs);
    const mean = (names: readonly string[]): number => names.reduce((sum, n) => sum + perSecond(logs.get(n) ?? []), 0) / names.length;
    const rootAgent = mean(['root-0', 'root-1']);
    const relayAgent = mean(['relay-0', 'relay-1']);
    console.log(
      `relay-share: tokens/s per agent over ${((toUs - fromUs) / 1e6).toFixed(1)} s: under the relay ${relayAgent.toFixed(1)}, ` +
        `on the root ${rootAgent.toFixed(1)} (ratio ${(relayAgent / rootAgent).toFixed(3)}); fleet ${(2 * (rootAgent + relayAgent)).toFixed(0)} of 400`,
    );
    expect(envelope.ok, JSON.stringify(envelope.worstWindow)).toBe(true);
    // The pool is saturated: the fleet admits most of the refill.
    expect(2 * (rootAgent + relayAgent)).toBeGreaterThan(0.8 * 400);
    expect(relayAgent).toBeGreaterThanOrEqual(0.85 * rootAgent);
  });
});
