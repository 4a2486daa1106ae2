/**
 * Three durable coordinators over one Redis and one NATS share six pools
 * and a template. Every pool ends up with exactly one owner, the one the
 * rendezvous hash prefers, and the pools are spread over the members. Two
 * agents draw from every pool; then the owner of the catch-all unit (and
 * of two pools) is stopped with SIGTERM: it hands its pools over, the
 * others serve them again within a few seconds, and each pool's envelope
 * holds over the whole run, handover included.
 *
 * Ownership is read from the coordinators' log events ('pool-owned',
 * 'pool-handed-over', 'stepped-down', each with the pool and the epoch).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '@tokenlease/agent';
import { connectRedisStore, preferredOwner } from '@tokenlease/coordinator/internal';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, type Admission, seededRandom } from '@tokenlease/shared/testing';
import { driveTraffic } from '@tokenlease/harness/drive';
import { scratchDir, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { parseLogLine } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { stop, stopAll, type Child } from '@tokenlease/harness/processes';
import { provideRedis, type RedisHandle } from '@tokenlease/harness/redis';
import { seededRun } from '../servers.js';

const MEMBERS = ['c1', 'c2', 'c3'] as const;
// Chosen so that every member is preferred for some pool (c1: email; c2: api,
// upload, billing; c3: search, reports and the catch-all), checked below.
const POOLS = ['api', 'search', 'upload', 'billing', 'email', 'reports'];
const TENANTS = ['tenant:acme', 'tenant:globex'];
const UNITS = [...POOLS, '*'];
const CAPACITY = 60;
const REFILL = makeRate(120, 1000);
const OWNERSHIP_TTL_MS = 1500;
const DRIVE_MS = 9000;
const STOP_AFTER_MS = 3000;
/** A handing-over owner logs only once its release is acknowledged, so the next owner's log line may come a little earlier. */
const LOG_SLACK_MS = 50;

const OWNERSHIP = ['pool-owned', 'pool-handed-over', 'stepped-down'] as const;

interface OwnershipEvent {
  readonly member: string;
  readonly event: (typeof OWNERSHIP)[number];
  readonly pool: string;
  readonly epoch: number;
  readonly timeMs: number;
}

/** ownershipEvents — every coordinator's ownership lines, by their (pino) time. */
function ownershipEvents(coordinators: ReadonlyMap<string, Child>): OwnershipEvent[] {
  const events: OwnershipEvent[] = [];
  for (const [member, child] of coordinators) {
    for (const line of child.lines) {
      const fields = parseLogLine(line);
      const event = OWNERSHIP.find((name) => name === fields?.['event']);
      if (fields === null || event === undefined) continue;
      events.push({ member, event, pool: String(fields['pool']), epoch: Number(fields['epoch']), timeMs: Number(fields['time']) });
    }
  }
  return events.sort((a, b) => a.timeMs - b.timeMs);
}

/**
 * currentOwners — each pool's owner now, after checking that the logs show
 * one owner at a time: every epoch is owned once, and every reign but the
 * last has ended (by its own member) before the next began.
 */
function currentOwners(events: readonly OwnershipEvent[]): Map<string, { member: string; epoch: number }> {
  const owners = new Map<string, { member: string; epoch: number }>();
  const pools = new Set(events.map((e) => e.pool));
  for (const pool of pools) {
    const owned = events.filter((e) => e.pool === pool && e.event === 'pool-owned').sort((a, b) => a.epoch - b.epoch);
    const ends = events.filter((e) => e.pool === pool && e.event !== 'pool-owned');
    expect(new Set(owned.map((e) => e.epoch)).size, `${pool}: an epoch owned twice`).toBe(owned.length);
    for (const end of ends)
      expect(
        owned.some((e) => e.epoch === end.epoch && e.member === end.member),
        `${pool}: ${JSON.stringify(end)} ends no reign of its member`,
      ).toBe(true);
    owned.forEach((reign, i) => {
      const end = ends.find((e) => e.epoch === reign.epoch);
      const next = owned[i + 1];
      if (next === undefined) {
        if (end === undefined) owners.set(pool, { member: reign.member, epoch: reign.epoch });
        return;
      }
      expect(end, `${pool}: epoch ${reign.epoch} (${reign.member}) never ended before epoch ${next.epoch} (${next.member})`).toBeDefined();
      expect(next.timeMs, `${pool}: epoch ${next.epoch} began before epoch ${reign.epoch} ended`).toBeGreaterThanOrEqual(
        (end?.timeMs ?? Infinity) - LOG_SLACK_MS,
      );
      expect(reign.timeMs).toBeLessThanOrEqual(next.timeMs + LOG_SLACK_MS);
    });
  }
  return owners;
}

async function waitFor(what: string, timeoutMs: number, test: () => boolean): Promise<number> {
  const startedMs = performance.now();
  while (!test()) {
    if (performance.now() - startedMs > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return performance.now() - startedMs;
}

describe('durable coordinators sharing pools', () => {
  let nats: NatsHandle;
  let redis: RedisHandle;
  beforeAll(async () => {
    [nats, redis] = await Promise.all([provideNats(), provideRedis()]);
  });
  afterAll(async () => {
    await stopAll();
    await Promise.all([nats.stop(), redis.stop()]);
  });

  it('gives every pool one owner, spreads them, and hands a stopped member’s pools over', async () => {
    const { seed, random } = seededRun(`durable-sharding`, import.meta.url);
    const prefix = `tlshard${seed}`;
    const preferred = new Map(UNITS.map((unit) => [unit, preferredOwner(unit, MEMBERS)]));
    const stopped = preferred.get('*') as string;
    const survivors = MEMBERS.filter((m) => m !== stopped);
    // The premises of this test, for these names.
    expect(new Set(preferred.values()).size).toBe(3);
    expect(POOLS.filter((p) => preferred.get(p) === stopped).length).toBeGreaterThan(0);

    const pool = { capacity: CAPACITY, refill: '120/s', leaseTtlMs: 1000, maxLeaseTokens: 10 };
    const configPath = writeConfig(scratchDir(), {
      subjectPrefix: prefix,
      pools: Object.fromEntries(POOLS.map((name) => [name, pool])),
      templates: { 'tenant:*': pool },
    });
    const coordinators = new Map<string, Child>();
    await Promise.all(
      MEMBERS.map(async (member) => {
        coordinators.set(
          member,
          await startCoordinator(nats.url, configPath, { redisUrl: redis.url, member, ownershipTtlMs: OWNERSHIP_TTL_MS }),
        );
      }),
    );

    const settleMs = await waitFor('every unit owned by its preferred member', 10_000, () => {
      const owners = currentOwners(ownershipEvents(coordinators));
      return UNITS.every((unit) => owners.get(unit)?.member === preferred.get(unit));
    });
    const settled = currentOwners(ownershipEvents(coordinators));
    const perMember = Object.fromEntries(MEMBERS.map((m) => [m, UNITS.filter((u) => settled.get(u)?.member === m)]));
    console.log(`durable-sharding: settled in ${Math.round(settleMs)} ms: ${JSON.stringify(perMember)}`);
    for (const member of MEMBERS) expect(perMember[member]?.length).toBeLessThan(UNITS.length);

    const probe = await StatusProbe.connect(nats.url);
    for (const name of POOLS) {
      const status = await probe.status(name, prefix);
      expect({ pool: status.pool, epoch: status.epoch, capacity: status.capacityTokens }).toEqual({
        pool: name,
        epoch: settled.get(name)?.epoch,
        capacity: CAPACITY,
      });
    }

    // Two agents draw from every pool at about 1.7 times its refill rate between them.
    const agents = await Promise.all(
      [0, 1].map((i) => Agent.connect({ natsUrl: nats.url, subjectPrefix: prefix, clock: hostMonoNowUs, agentId: `shard-${i}-${seed}` })),
    );
    const admissions = new Map<string, Admission[]>([...POOLS, ...TENANTS].map((name) => [name, []]));
    const driveStartUs = hostMonoNowUs();
    const drives = agents.flatMap((agent) =>
      [...admissions].map(([name, log]) =>
        driveTraffic({
          limiter: agent.limiter(name),
          traffic: { kind: 'steady', perSecond: 100 },
          random: seededRandom(random.int(0, 2 ** 31)),
          clock: hostMonoNowUs,
          durationMs: DRIVE_MS,
          onAdmit: (tUs, cost) => log.push({ tUs, cost }),
        }),
      ),
    );

    await new Promise((resolve) => setTimeout(resolve, STOP_AFTER_MS));
    const victim = coordinators.get(stopped) as Child;
    victim.proc.kill('SIGTERM');
    const exit = await victim.exited;
    const stoppedAtUs = hostMonoNowUs();
    const stoppedAtMs = Date.now();
    expect({ ...exit, stderr: victim.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
    const handedOver = ownershipEvents(new Map([[stopped, victim]]))
      .filter((e) => e.event === 'pool-handed-over')
      .map((e) => e.pool);
    const victimUnits = UNITS.filter((u) => preferred.get(u) === stopped);
    expect(handedOver).toEqual(expect.arrayContaining([...victimUnits, ...TENANTS]));

    const after = new Map(UNITS.map((unit) => [unit, preferredOwner(unit, survivors)]));
    const takeoverMs = await waitFor(`the pools of ${stopped} owned by the others`, 5000, () => {
      const owners = currentOwners(ownershipEvents(coordinators));
      return (
        UNITS.every((unit) => owners.get(unit)?.member === after.get(unit)) &&
        TENANTS.every((t) => owners.get(t)?.member === after.get('*'))
      );
    });
    console.log(
      `durable-sharding: ${stopped} handed over ${JSON.stringify(handedOver)}; all served again ${Math.round(takeoverMs)} ms after it exited`,
    );
    const owners = currentOwners(ownershipEvents(coordinators));
    for (const name of [...POOLS, ...TENANTS]) {
      const status = await probe.status(name, prefix);
      expect(status.epoch, name).toBe(owners.get(name)?.epoch);
    }
    for (const unit of victimUnits) expect((owners.get(unit)?.epoch ?? 0) > (settled.get(unit)?.epoch ?? Infinity), unit).toBe(true);
    for (const e of ownershipEvents(coordinators))
      if (e.event === 'pool-owned' && victimUnits.includes(e.pool) && e.timeMs >= stoppedAtMs)
        expect(e.timeMs - stoppedAtMs).toBeLessThan(3000);

    await Promise.all(drives);
    await Promise.all(agents.map((agent) => agent.close()));
    await probe.close();
    const events = ownershipEvents(coordinators);
    currentOwners(events);
    expect(events.filter((e) => e.event === 'stepped-down')).toEqual([]);

    const summary: Record<string, object> = {};
    for (const [name, log] of admissions) {
      const report = checkEnvelope(log, CAPACITY, REFILL);
      const late = log.filter((a) => a.tUs > stoppedAtUs + 1500_000).length;
      summary[name] = { admitted: report.admittedTokens, worstExcess: report.worstExcessTokens, afterStop: late };
      expect(report.ok, `${name}: worst window ${JSON.stringify(report.worstWindow)} over by ${report.worstExcessTokens} tokens`).toBe(
        true,
      );
      // Served again after the handover: leases of before the stop have expired by then.
      expect(late, name).toBeGreaterThan(0);
      // And the pool did its job: at least half its refill over the drive.
      expect(report.admittedTokens, name).toBeGreaterThan((0.5 * 120 * (hostMonoNowUs() - driveStartUs)) / 1e6);
    }
    console.log(`durable-sharding: ${JSON.stringify(summary)}`);

    // (Not stopAll: a private Redis is one of the children.)
    await Promise.all([...coordinators.values()].map((child) => stop(child)));
    // Leave nothing behind on a shared Redis: every owner released its pools on SIGTERM.
    const store = await connectRedisStore(redis.url, { keyPrefix: prefix });
    for (const unit of [...UNITS, ...TENANTS]) {
      const claim = await store.claim(unit, 'cleanup', 1000);
      if (claim.taken) await store.forget(unit, 'cleanup', claim.epoch);
    }
    expect((await store.heartbeat('cleanup', 0)).members).toEqual([]);
    await store.close();
  });
});
