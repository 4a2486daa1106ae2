/**
 * Limits changed without a restart: a coordinator process under load from
 * three agent processes (about three times the refill) gets SIGHUP after
 * its configuration file changed, twice: the pool shrinks (capacity 100 →
 * 40, refill 200/s → 80/s, leases 20 → 10), then grows (→ 150, 300/s).
 * Every window of the merged admission logs must keep the promise across
 * each change (core/pool-reconfigure.ts, checked by checkAcrossChange):
 * windows ending by a change keep the envelope before it, windows starting
 * one old TTL after it the one after it, the others the larger of both;
 * windows across both changes the largest of the three. No agent may see
 * an implausible grant (a capacity changed mid-lease), and the fleet must
 * go on admitting under the new limits. A file that does not validate
 * changes nothing and is logged once as `reload-refused`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeRate, type Rate } from '@tokenlease/shared';
import { checkAcrossChange, checkEnvelope, fasterRate, type Admission } from '@tokenlease/shared/testing';
import { describe, expect, it } from 'vitest';
import {
  readAdmissionLog,
  reloadBySighup,
  scratchDir,
  startAgentProcess,
  startCoordinator,
  StatusProbe,
  writeConfig,
} from '@tokenlease/harness/fleet';
import { logEvents, waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats } from '@tokenlease/harness/nats';
import { type Child } from '@tokenlease/harness/processes';
import { seededRun, serverForSuite } from '../servers.js';

const POOL = 'api';
const TTL_MS = 1000;
const RUN_MS = 9000;

interface Limits {
  readonly capacity: number;
  readonly perSecond: number;
  readonly maxLeaseTokens: number;
}

const FIRST: Limits = { capacity: 100, perSecond: 200, maxLeaseTokens: 20 };
const SHRUNK: Limits = { capacity: 40, perSecond: 80, maxLeaseTokens: 10 };
const GROWN: Limits = { capacity: 150, perSecond: 300, maxLeaseTokens: 25 };

const rateOf = (l: Limits): Rate => makeRate(l.perSecond, 1000);
const doc = (prefix: string, l: Limits): object => ({
  subjectPrefix: prefix,
  pools: { [POOL]: { capacity: l.capacity, refill: `${l.perSecond}/s`, leaseTtlMs: TTL_MS, maxLeaseTokens: l.maxLeaseTokens } },
});

/** hangUp — reloads `next` by SIGHUP; the host µs at which it applied. */
async function hangUp(coordinator: Child, configPath: string, next: object, afterUs: number): Promise<number> {
  return Number((await reloadBySighup(coordinator, configPath, next, afterUs))['tUs']);
}

describe('limits changed without a restart (SIGHUP)', () => {
  const nats = serverForSuite(provideNats);

  it('keeps the promise across a shrink and a growth under load, and refuses a bad file without changing anything', async () => {
    const { seed, random } = seededRun(`reload`, import.meta.url);
    const dir = scratchDir();
    const prefix = `tlreload${seed}`;
    const configPath = writeConfig(dir, doc(prefix, FIRST));
    const coordinator = await startCoordinator(nats().url, configPath);
    const logs = ['a', 'b', 'c'].map((n) => join(dir, `${n}.log`));
    const traffics = [
      { kind: 'bursty', perSecond: 900, onMs: 300, offMs: 300, costMin: 1, costMax: 3 },
      { kind: 'steady', perSecond: 250 },
      { kind: 'random', perSecondMax: 500, changeEveryMs: 250, costMin: 1, costMax: 2 },
    ] as const;
    const agents = await Promise.all(
      traffics.map((traffic, i) =>
        startAgentProcess({
          natsUrl: nats().url,
          subjectPrefix: prefix,
          pool: POOL,
          name: `agent-${i}`,
          seed: random.int(0, 2 ** 31),
          durationMs: RUN_MS,
          logPath: logs[i] as string,
          traffic,
        }),
      ),
    );
    const probe = await StatusProbe.connect(nats().url);

    await sleep(3000);
    const shrunkAtUs = await hangUp(coordinator, configPath, doc(prefix, SHRUNK), 0);
    expect((await probe.status(POOL, prefix)).capacityTokens).toBe(SHRUNK.capacity);

    await sleep(1500);
    // A file that does not validate: nothing changes, one line says why.
    writeFileSync(configPath, JSON.stringify({ subjectPrefix: prefix, pools: { [POOL]: { capacity: -1, refill: '1/s' } } }));
    coordinator.proc.kill('SIGHUP');
    const refused = await waitForEvent(coordinator, { event: 'reload-refused' }, 5000);
    expect(String(refused['reason'])).toMatch(/capacity/);
    expect((await probe.status(POOL, prefix)).capacityTokens).toBe(SHRUNK.capacity);

    await sleep(1000);
    const grownAtUs = await hangUp(coordinator, configPath, doc(prefix, GROWN), shrunkAtUs);
    expect((await probe.status(POOL, prefix)).capacityTokens).toBe(GROWN.capacity);

    const exits = await Promise.all(agents.map((a) => a.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0]);
    await probe.close();

    const implausible = agents.flatMap((a) => logEvents(a.lines, { type: 'event', event: 'implausible-grant' }));
    expect(implausible).toEqual([]);
    expect(logEvents(coordinator.lines, { event: 'reload-refused' })).toHaveLength(1);

    const admissions: Admission[] = logs.flatMap((p) => readAdmissionLog(p));
    const settleUs = TTL_MS * 1000;
    const regime = (l: Limits): { boundTokens: number; rate: Rate } => ({ boundTokens: l.capacity, rate: rateOf(l) });
    const first = checkAcrossChange(
      admissions.filter((a) => a.tUs <= grownAtUs),
      shrunkAtUs,
      settleUs,
      regime(FIRST),
      regime(SHRUNK),
    );
    const second = checkAcrossChange(
      admissions.filter((a) => a.tUs >= shrunkAtUs + settleUs),
      grownAtUs,
      settleUs,
      regime(SHRUNK),
      regime(GROWN),
    );
    const widest = checkEnvelope(admissions, GROWN.capacity, fasterRate(rateOf(FIRST), rateOf(GROWN)));
    const show = (r: ReturnType<typeof checkAcrossChange>): string =>
      JSON.stringify({ before: r.before.worstExcessTokens, after: r.after.worstExcessTokens, spanning: r.spanning.worstExcessTokens });
    console.log(`reload: ${admissions.length} admissions; shrink ${show(first)}; growth ${show(second)}; all ${widest.worstExcessTokens}`);
    expect(first.ok, `shrink: ${JSON.stringify(first)}`).toBe(true);
    expect(second.ok, `growth: ${JSON.stringify(second)}`).toBe(true);
    expect(widest.ok).toBe(true);

    // The fleet does its job under each configuration: well over half of each settled regime's refill is admitted.
    const admittedIn = (fromUs: number, toUs: number): number =>
      admissions.filter((a) => a.tUs >= fromUs && a.tUs < toUs).reduce((sum, a) => sum + a.cost, 0);
    const shrunkSettledUs = grownAtUs - (shrunkAtUs + settleUs);
    expect(admittedIn(shrunkAtUs + settleUs, grownAtUs)).toBeGreaterThan((0.5 * SHRUNK.perSecond * shrunkSettledUs) / 1e6);
    expect(admittedIn(grownAtUs + settleUs, grownAtUs + settleUs + 1_000_000)).toBeGreaterThan(0.5 * GROWN.perSecond);
  });
});
