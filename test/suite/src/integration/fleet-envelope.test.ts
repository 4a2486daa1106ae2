/**
 * A coordinator process and four agents (two in this process, two in child
 * processes) drive seeded random traffic at about three times the refill
 * rate against one pool over real NATS. Every admission is logged at the
 * host monotonic microsecond it was decided; the envelope must hold for
 * every window. Three ways to lease: chunk leases, chunk leases with usage
 * reports between renewals, and rate (trickle) leases renewed every 250 ms.
 */
import type { KeeperOptions } from '@tokenlease/agent';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { Agent } from '@tokenlease/agent';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, type Admission, seededRandom } from '@tokenlease/shared/testing';
import { driveTraffic } from '@tokenlease/harness/drive';
import { readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats } from '@tokenlease/harness/nats';
import { seededRun, serverForSuite } from '../servers.js';

const CAPACITY = 200;
const REFILL = makeRate(400, 1000);
const TTL_MS = 1000;
const RUN_MS = 5000;

describe('a fleet of agents over real NATS', () => {
  const nats = serverForSuite(provideNats);

  const modes: readonly [string, Record<string, unknown>, Partial<KeeperOptions>][] = [
    ['chunk leases', {}, {}],
    ['chunk leases with usage reports', {}, { reportMs: 50 }],
    ['rate leases', { leaseMode: 'rate' }, { refreshMs: 250 }],
  ];
  it.each(modes)('never admits more than B + r·T in any window: %s', async (mode, poolFields, keeper) => {
    const { seed, random } = seededRun(`fleet-envelope (${mode})`, import.meta.url);
    const dir = scratchDir();
    const prefix = `tltest${seed}${mode.replace(/[^a-z]/g, '')}`;
    const pool = 'api';
    const configPath = writeConfig(dir, {
      subjectPrefix: prefix,
      pools: { [pool]: { capacity: CAPACITY, refill: '400/s', leaseTtlMs: TTL_MS, maxLeaseTokens: 20, ...poolFields } },
    });
    await startCoordinator(nats().url, configPath);

    const childLogs = [join(dir, 'child-1.log'), join(dir, 'child-2.log')];
    const children = await Promise.all([
      startAgentProcess({
        natsUrl: nats().url,
        subjectPrefix: prefix,
        pool,
        name: 'bursty',
        seed: random.int(0, 2 ** 31),
        durationMs: RUN_MS,
        logPath: childLogs[0] as string,
        keeper,
        traffic: { kind: 'bursty', perSecond: 900, onMs: 300, offMs: 300, costMin: 1, costMax: 3 },
      }),
      startAgentProcess({
        natsUrl: nats().url,
        subjectPrefix: prefix,
        pool,
        name: 'steady',
        seed: random.int(0, 2 ** 31),
        durationMs: RUN_MS,
        logPath: childLogs[1] as string,
        keeper,
        traffic: { kind: 'steady', perSecond: 150 },
      }),
    ]);

    const local: Admission[] = [];
    const agents = await Promise.all(
      [0, 1].map((i) =>
        Agent.connect({ natsUrl: nats().url, subjectPrefix: prefix, clock: hostMonoNowUs, agentId: `local-${i}-${seed}`, keeper }),
      ),
    );
    const drives = agents.map((agent, i) =>
      driveTraffic({
        limiter: agent.limiter(pool),
        traffic:
          i === 0 ? { kind: 'steady', perSecond: 300 } : { kind: 'random', perSecondMax: 600, changeEveryMs: 250, costMin: 1, costMax: 2 },
        random: seededRandom(random.int(0, 2 ** 31)),
        clock: hostMonoNowUs,
        durationMs: RUN_MS,
        onAdmit: (tUs, cost) => local.push({ tUs, cost }),
      }),
    );
    await Promise.all(drives);
    await Promise.all(agents.map((agent) => agent.close()));
    const exits = await Promise.all(children.map((child) => child.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0]);

    const admissions = [...local, ...childLogs.flatMap((path) => readAdmissionLog(path))];
    const report = checkEnvelope(admissions, CAPACITY, REFILL);
    console.log(`fleet-envelope (${mode}):`, JSON.stringify(report));
    expect(report.ok, `worst window: ${JSON.stringify(report.worstWindow)} over by ${report.worstExcessTokens} tokens`).toBe(true);
    // The fleet must also do its job: after the quiet period (one TTL) the
    // refill of the remaining run is offered at ~3× its rate, so most of it
    // must be admitted.
    const refillAfterQuiet = (400 * (RUN_MS - TTL_MS)) / 1000;
    expect(report.admittedTokens).toBeGreaterThan(0.6 * refillAfterQuiet);
    expect(new Set(admissions.map((a) => a.tUs)).size).toBeGreaterThan(100);
  });
});
