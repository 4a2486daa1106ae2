/**
 * A fleet of service processes limited by one concurrency pool, each
 * calling a slow downstream through the concurrency middleware, under load
 * from many clients at once, while service processes are killed (SIGKILL:
 * their calls at the downstream run on, their leases are never returned)
 * and started again, and the coordinator that owns the pool is killed and
 * a standby takes it over from Redis. The downstream counts the calls it
 * is serving itself: never more than N at once. It also reports how much
 * of N it kept busy.
 *
 * Then one process holding every slot with calls that never end is killed:
 * its slots come back no earlier than the hold bound after the kill (its
 * lease was live then), and by the lease's expiry plus the hold bound.
 */
import { createServer, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentOwner, waitForOwned } from '@tokenlease/harness/coordinator-log';
import { scratchDir, startCoordinator, startSlotService, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { stopAll, type Child } from '@tokenlease/harness/processes';
import { startPrivateRedis, type PrivateRedis } from '@tokenlease/harness/redis';
import { listen } from '../http-client.js';

const S = 1000;
const LIMIT = 6;
const HOLD_MS = 1500;
const TTL_MS = 1000;
const SERVICE_MS = 250;
const POOL = 'db';
const POOL_FIELDS = { concurrency: { limit: LIMIT, maxHoldMs: HOLD_MS }, leaseTtlMs: TTL_MS, maxLeaseTokens: LIMIT };

/** Downstream — a slow HTTP service that counts the calls it is serving (until its own work ends, whoever went away), the most at once, and their time. */
class Downstream {
  inFlight = 0;
  most = 0;
  calls = 0;
  /** Σ in flight × time, ms: over a span, divided by it, the mean in flight. */
  busyMs = 0;
  private lastMs = performance.now();
  readonly server: Server;

  constructor(private readonly serviceMs: number) {
    this.server = createServer((_req, res) => {
      this.move(1);
      this.calls += 1;
      setTimeout(() => {
        this.move(-1);
        res.end('done');
      }, this.serviceMs);
    });
  }

  /** move — the count changes by `by` now; the time at the old count is added first. */
  private move(by: number): void {
    const nowMs = performance.now();
    this.busyMs += this.inFlight * (nowMs - this.lastMs);
    this.lastMs = nowMs;
    this.inFlight += by;
    this.most = Math.max(this.most, this.inFlight);
  }

  /** settle — adds the time up to now at the current count. */
  settle(): void {
    this.move(0);
  }
}

/** Load — `clients` loops each asking a live service again as soon as answered, until stopped; counts answers by status. */
class Load {
  private stopped = false;
  readonly statuses = new Map<string, number>();
  private readonly loops: Promise<void>[];

  constructor(
    private readonly services: () => readonly string[],
    clients: number,
  ) {
    this.loops = Array.from({ length: clients }, (_, i) => this.loop(i));
  }

  private async loop(i: number): Promise<void> {
    for (let n = i; !this.stopped; n += 1) {
      const urls = this.services();
      const url = urls[n % Math.max(1, urls.length)];
      if (url === undefined) {
        await sleep(10);
        continue;
      }
      const status = await fetch(url, { signal: AbortSignal.timeout(5 * S) }).then(
        async (r) => (await r.text(), String(r.status)),
        () => 'down',
      );
      this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
      // A refused or failed answer comes at once: pause a little rather than spin.
      if (status !== '200') await sleep(5);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

describe('a fleet limited by a concurrency pool, under kills and failover', () => {
  let nats: NatsHandle;
  let redis: PrivateRedis;
  let probe: StatusProbe;
  const downstreams: Downstream[] = [];

  beforeAll(async () => {
    nats = await provideNats();
    redis = await startPrivateRedis();
    probe = await StatusProbe.connect(nats.url);
  });
  afterAll(async () => {
    for (const d of downstreams) d.server.close();
    await stopAll();
    await probe.close();
    await redis.stop();
    await nats.stop();
  });

  /**
   * waitFree — until the pool's level holds all N slots (past its quiet
   * period and hold bound). A second member joining may move the pool:
   * while it changes hands nobody answers its status, and asking again is
   * the wait.
   */
  async function waitFree(prefix: string): Promise<void> {
    const deadline = Date.now() + 20 * S;
    let last = 'no answer yet';
    for (;;) {
      const status = await probe.status(POOL, prefix).catch((error: unknown) => {
        last = error instanceof Error ? error.message : String(error);
        return null;
      });
      if (status !== null && status.levelTokens >= LIMIT) return;
      if (status !== null) last = JSON.stringify(status);
      if (Date.now() > deadline) throw new Error(`pool ${POOL} not free within 20 s: ${last}`);
      await sleep(50);
    }
  }

  it(
    `never has more than N = ${LIMIT} calls in flight at the downstream, and reports the utilization of N`,
    async () => {
      const prefix = `tlslots${process.pid}`;
      const configPath = writeConfig(scratchDir(), { subjectPrefix: prefix, pools: { [POOL]: POOL_FIELDS } });
      const durable = (member: string) => ({ redisUrl: redis.url, member: `${member}-${process.pid}`, ownershipTtlMs: 600 });
      const coordinators = [await startCoordinator(nats.url, configPath, durable('A'))];
      await waitForOwned(coordinators[0] as Child, POOL, 0, 10 * S);
      coordinators.push(await startCoordinator(nats.url, configPath, durable('B')));
      await waitFree(prefix);
      const downstream = new Downstream(SERVICE_MS);
      downstreams.push(downstream);
      const downstreamUrl = await listen(downstream.server);
      const start = (i: number, n: number): Promise<Child> =>
        startSlotService({ natsUrl: nats.url, subjectPrefix: prefix, pool: POOL, name: `svc${i}.${n}`, downstreamUrl, waitMs: 200 });
      const services: Child[] = await Promise.all([0, 1, 2].map((i) => start(i, 0)));
      const urlOf = (c: Child): string => String((JSON.parse(c.lines.find((l) => l.includes('"ready"')) ?? '{}') as { url?: string }).url);
      const live = new Set(services);
      const load = new Load(() => [...live].map(urlOf), 16);
      const startedMs = performance.now();
      const at = async (ms: number): Promise<void> => sleep(Math.max(0, startedMs + ms - performance.now()));

      /** replace — service `i` is SIGKILLed `atMs` into the run, and a new one started a second later. */
      const replace = async (i: number, atMs: number): Promise<void> => {
        await at(atMs);
        const victim = services[i] as Child;
        victim.proc.kill('SIGKILL');
        live.delete(victim);
        await at(atMs + S);
        live.add(await start(i, 1));
      };

      await replace(0, 3 * S);
      await at(6 * S);
      const owner = currentOwner(coordinators, POOL);
      expect(owner, 'an owner of the pool before the failover').toBeDefined();
      owner?.child.proc.kill('SIGKILL');
      const standby = coordinators.find((c) => c !== owner?.child) as Child;
      await waitForOwned(standby, POOL, owner?.epoch ?? 0, 10 * S);
      await replace(1, 9 * S);
      await at(14 * S);
      await load.stop();
      downstream.settle();
      const spanMs = performance.now() - startedMs;
      const utilization = downstream.busyMs / spanMs / LIMIT;
      const statuses = Object.fromEntries(load.statuses);
      console.log(
        `concurrency fleet: ${downstream.calls} calls at the downstream, at most ${downstream.most} at once of N = ${LIMIT}; ` +
          `utilization of N ${(utilization * 100).toFixed(1)}% over ${(spanMs / 1000).toFixed(1)} s with two service kills and a failover; ` +
          `answers ${JSON.stringify(statuses)}`,
      );
      expect(downstream.most).toBeLessThanOrEqual(LIMIT);
      // Not idle: the check had calls to count, and N was reached.
      expect(downstream.calls).toBeGreaterThan(100);
      expect(downstream.most).toBe(LIMIT);
      expect(load.statuses.get('503') ?? 0).toBeGreaterThan(0);
    },
    90 * S,
  );

  it(
    "gives a killed holder's slots back no earlier than the hold bound after the kill, and by its expiry plus that bound",
    async () => {
      const prefix = `tlslotkill${process.pid}`;
      const configPath = writeConfig(scratchDir(), { subjectPrefix: prefix, pools: { [POOL]: POOL_FIELDS } });
      await startCoordinator(nats.url, configPath);
      await waitFree(prefix);
      // A downstream slower than the whole check: every call holds its slot until the process dies.
      const downstream = new Downstream(8 * S);
      downstreams.push(downstream);
      const downstreamUrl = await listen(downstream.server);
      const holder = await startSlotService({
        natsUrl: nats.url,
        subjectPrefix: prefix,
        pool: POOL,
        name: 'holder',
        downstreamUrl,
        waitMs: 3000,
      });
      const url = String((JSON.parse(holder.lines.find((l) => l.includes('"ready"')) ?? '{}') as { url?: string }).url);
      const calls = Array.from({ length: LIMIT }, () => fetch(url).catch(() => null));
      const deadline = Date.now() + 10 * S;
      while (downstream.inFlight < LIMIT) {
        if (Date.now() > deadline) throw new Error(`only ${downstream.inFlight} calls reached the downstream`);
        await sleep(20);
      }
      expect((await probe.status(POOL, prefix)).levelTokens).toBe(0);
      holder.proc.kill('SIGKILL');
      const killedMs = performance.now();
      await Promise.all(calls);
      let backMs = Infinity;
      while (performance.now() - killedMs < 2 * TTL_MS + HOLD_MS + 3 * S) {
        const status = await probe.status(POOL, prefix);
        const sinceMs = performance.now() - killedMs;
        if (status.levelTokens > 0) {
          backMs = sinceMs;
          break;
        }
        await sleep(20);
      }
      console.log(
        `concurrency fleet: a killed holder's ${LIMIT} slots came back ${backMs.toFixed(0)} ms after the kill (TTL ${TTL_MS} ms, hold bound ${HOLD_MS} ms)`,
      );
      // Its lease was live at the kill: nothing comes back before the hold bound has passed since.
      expect(backMs).toBeGreaterThanOrEqual(HOLD_MS);
      // And by its expiry plus the hold bound, with a second of slack for a busy machine. The expiry is at most a TTL
      // after the kill, or two for an agent whose clock the coordinator has not verified yet (a process this young may
      // not have asked long enough for that: its leases count PROBATION_TTLS = 2 TTLs, docs/design.md "Clocks").
      expect(backMs).toBeLessThanOrEqual(2 * TTL_MS + HOLD_MS + S);
    },
    60 * S,
  );
});
