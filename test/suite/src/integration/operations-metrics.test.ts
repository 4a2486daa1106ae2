/**
 * Operations, over real processes: a coordinator with `--http` and agent
 * processes that serve their AgentMetrics, under load at about three times
 * the refill rate. Every scrape of the coordinator must be one consistent
 * picture (level + leased ≤ capacity + allowance per pool, counters never
 * going back), grants must be counted once (against the coordinator's own
 * debug log of grants, deduplicated by pool, lease and sequence number: a reply
 * repeated to a retry is logged again but is no new grant), and the agents'
 * counts must agree with the coordinator's. Then `/readyz` must turn
 * unready when a private NATS is killed, and ready again after it is back;
 * likewise for a private Redis in durable mode.
 */
import { describe, expect, it } from 'vitest';
import { readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { logEvents, waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats, startPrivateNats } from '@tokenlease/harness/nats';
import { freePort } from '@tokenlease/harness/ports';
import { stop, type Child } from '@tokenlease/harness/processes';
import { startPrivateRedis } from '@tokenlease/harness/redis';
import { httpStatus, scrape, sumOf, valueOf, waitForStatus, type Sample } from '@tokenlease/harness/scrape';
import { join } from 'node:path';
import { waitUntil } from '@tokenlease/harness/wait';
import { seededRun, serverForSuite } from '../servers.js';

const POOL = 'api';
const CAPACITY = 100;
const ALLOWANCE = 20;
const RUN_MS = 4000;

function metricsUrlOf(child: Child): string {
  const ready = child.lines.map((l) => JSON.parse(l) as { type?: string; metricsUrl?: string }).find((l) => l.type === 'ready');
  if (typeof ready?.metricsUrl !== 'string') throw new Error(`${child.name} serves no metrics`);
  return ready.metricsUrl;
}

/** checkScrape — one scrape is one consistent picture: per pool label, level + leased ≤ capacity + allowance. */
function checkScrape(samples: readonly Sample[]): void {
  for (const s of samples.filter((x) => x.name === 'tokenlease_pool_capacity_tokens')) {
    const pool = { pool: s.labels['pool'] ?? '' };
    const level = valueOf(samples, 'tokenlease_pool_level_tokens', pool) ?? NaN;
    const leased = valueOf(samples, 'tokenlease_pool_leased_tokens', pool) ?? NaN;
    const allowance = valueOf(samples, 'tokenlease_pool_allowance_tokens', pool) ?? NaN;
    expect(level + leased, `level ${level} + leased ${leased} of ${pool.pool}`).toBeLessThanOrEqual(s.value + allowance);
    expect(level).toBeLessThanOrEqual(s.value);
  }
}

describe('metrics and health endpoints of real processes', () => {
  const nats = serverForSuite(provideNats);

  it('scrapes consistent pool gauges under load, counts each grant once, and agrees with the agents and the status op', async () => {
    const { seed, random } = seededRun(`operations-metrics`, import.meta.url);
    const dir = scratchDir();
    const prefix = `tlmetrics${seed}`;
    const configPath = writeConfig(dir, {
      subjectPrefix: prefix,
      pools: { [POOL]: { capacity: CAPACITY, allowance: ALLOWANCE, refill: '300/s', leaseTtlMs: 1000, maxLeaseTokens: 20 } },
      templates: { 'tenant:*': { capacity: 50, refill: '50/s', leaseTtlMs: 1000 } },
    });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const coordinator = await startCoordinator(nats().url, configPath, { http: `127.0.0.1:${port}`, logLevel: 'debug' });
    expect(await httpStatus(`${base}/healthz`)).toBe(200);
    await waitForStatus(`${base}/readyz`, 200, 5000);

    const logs = [join(dir, 'a.log'), join(dir, 'b.log'), join(dir, 'c.log')];
    const agents = await Promise.all([
      startAgentProcess({
        natsUrl: nats().url,
        subjectPrefix: prefix,
        pool: POOL,
        name: 'bursty',
        seed: random.int(0, 2 ** 31),
        durationMs: RUN_MS,
        logPath: logs[0] as string,
        metricsPort: 0,
        traffic: { kind: 'bursty', perSecond: 900, onMs: 300, offMs: 300, costMin: 1, costMax: 3 },
      }),
      startAgentProcess({
        natsUrl: nats().url,
        subjectPrefix: prefix,
        pool: POOL,
        name: 'steady',
        seed: random.int(0, 2 ** 31),
        durationMs: RUN_MS,
        logPath: logs[1] as string,
        metricsPort: 0,
        traffic: { kind: 'steady', perSecond: 300 },
      }),
      startAgentProcess({
        natsUrl: nats().url,
        subjectPrefix: prefix,
        pool: 'tenant:acme',
        name: 'tenant',
        seed: random.int(0, 2 ** 31),
        durationMs: RUN_MS,
        logPath: logs[2] as string,
        metricsPort: 0,
        traffic: { kind: 'steady', perSecond: 100 },
      }),
    ]);
    const probe = await StatusProbe.connect(nats().url);
    let scrapes = 0;
    let lastGrants = 0;
    let sawLeases = false;
    const running = Promise.all(agents.map((a) => a.exited));
    let done = false;
    void running.then(() => (done = true));
    while (!done) {
      const samples = await scrape(`${base}/metrics`);
      const status = await probe.status(POOL, prefix);
      scrapes += 1;
      checkScrape(samples);
      expect(status.levelTokens + status.leasedTokens).toBeLessThanOrEqual(CAPACITY + ALLOWANCE);
      const grants = valueOf(samples, 'tokenlease_grants_total', { pool: POOL }) ?? 0;
      expect(grants).toBeGreaterThanOrEqual(lastGrants);
      lastGrants = grants;
      if ((valueOf(samples, 'tokenlease_pool_leases', { pool: POOL }) ?? 0) > 0) sawLeases = true;
      // Template pools are one label, their template's.
      expect(samples.some((s) => s.labels['pool'] === 'tenant:acme')).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    expect((await running).map((e) => e.code)).toEqual([0, 0, 0]);
    expect(scrapes).toBeGreaterThan(10);
    expect(sawLeases).toBe(true);

    // After the agents returned their leases (each says so in its last line): the coordinator's counts against its own
    // grant log and the agents', once its metrics count every return the agents made.
    const done2 = agents.map((a) => JSON.parse(a.lines.find((l) => l.includes('"type":"done"')) ?? '{}') as Record<string, number>);
    const agentGranted = done2.reduce((sum, d) => sum + (d['tokensGranted'] ?? 0), 0);
    const agentReturned = done2.reduce((sum, d) => sum + (d['tokensReturned'] ?? 0), 0);
    await waitUntil(
      'the returns counted in the metrics',
      5000,
      async () => sumOf(await scrape(`${base}/metrics`), 'tokenlease_returned_tokens_total') === agentReturned,
    );
    const samples = await scrape(`${base}/metrics`);
    checkScrape(samples);
    const grantLines = logEvents(coordinator.lines, { event: 'grant' }).map((e) => e.fields);
    const distinct = new Map(
      grantLines.map((g) => [`${String(g['pool'])}#${String(g['leaseId'])}#${String(g['seq'])}`, Number(g['tokensGranted'])]),
    );
    const grantsTotal = sumOf(samples, 'tokenlease_grants_total');
    const grantedTokens = sumOf(samples, 'tokenlease_granted_tokens_total');
    console.log(
      `operations-metrics: ${scrapes} scrapes; ${grantsTotal} grants (${grantLines.length} grant replies logged, ${distinct.size} distinct), ${grantedTokens} tokens`,
    );
    expect(grantsTotal).toBe(distinct.size);
    expect(grantedTokens).toBe([...distinct.values()].reduce((a, b) => a + b, 0));
    const tenantGrants = valueOf(samples, 'tokenlease_grants_total', { pool: 'tenant:*' }) ?? 0;
    expect(tenantGrants).toBeGreaterThan(0);

    // The agent processes have exited (their collector is scraped live in the next test): their final stats lines.
    expect(agentGranted).toBe(grantedTokens);
    expect(sumOf(samples, 'tokenlease_returned_tokens_total')).toBe(agentReturned);
    const admitted = logs.flatMap((p) => readAdmissionLog(p)).reduce((sum, a) => sum + a.cost, 0);
    expect(admitted).toBeLessThanOrEqual(grantedTokens);
    expect(sumOf(samples, 'tokenlease_leases_opened_total')).toBeGreaterThanOrEqual(3);
    expect(sumOf(samples, 'tokenlease_request_handling_seconds_count')).toBeGreaterThan(grantsTotal / 2);

    // Idle again: the gauges and the status op tell the same story.
    const status = await probe.status(POOL, prefix);
    const idle = await scrape(`${base}/metrics`);
    expect(valueOf(idle, 'tokenlease_pool_leases', { pool: POOL })).toBe(status.leases);
    expect(valueOf(idle, 'tokenlease_pool_waiting_requests', { pool: POOL })).toBe(status.waiting);
    expect(valueOf(idle, 'tokenlease_pool_capacity_tokens', { pool: POOL })).toBe(status.capacityTokens);
    await probe.close();
    await stop(coordinator);
  });

  it('serves the agent collector while the agent runs: admissions, denials by reason, round-trips and their latency', async () => {
    const dir = scratchDir();
    const prefix = `tlagentmetrics${process.pid}`;
    const configPath = writeConfig(dir, {
      subjectPrefix: prefix,
      pools: { [POOL]: { capacity: 50, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 10 } },
    });
    await startCoordinator(nats().url, configPath);
    const agent = await startAgentProcess({
      natsUrl: nats().url,
      subjectPrefix: prefix,
      pool: POOL,
      name: 'scraped',
      seed: 7,
      durationMs: 3000,
      metricsPort: 0,
      traffic: { kind: 'steady', perSecond: 400 },
    });
    const pool = { pool: POOL };
    // While it runs, once its collector has seen a few round-trips, admissions and an exhausted lease's denials.
    let samples = await scrape(metricsUrlOf(agent));
    await waitUntil('the agent collector to see the traffic', 10_000, async () => {
      samples = await scrape(metricsUrlOf(agent));
      const exhausted = valueOf(samples, 'tokenlease_agent_denied_tokens_total', { pool: POOL, reason: 'exhausted' }) ?? 0;
      return (
        (valueOf(samples, 'tokenlease_agent_round_trips_total', pool) ?? 0) > 3 &&
        (valueOf(samples, 'tokenlease_agent_admitted_tokens_total', pool) ?? 0) > 50 &&
        exhausted > 0
      );
    });
    const roundTrips = valueOf(samples, 'tokenlease_agent_round_trips_total', pool) ?? 0;
    expect(roundTrips).toBeGreaterThan(3);
    expect(valueOf(samples, 'tokenlease_agent_round_trip_seconds_count', pool)).toBe(roundTrips);
    expect(valueOf(samples, 'tokenlease_agent_admitted_tokens_total', pool)).toBeGreaterThan(50);
    // Demand is four times the refill: most denials are of an exhausted lease, and the first ones of no lease (quiet period).
    expect(valueOf(samples, 'tokenlease_agent_denied_tokens_total', { pool: POOL, reason: 'exhausted' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'tokenlease_agent_denied_tokens_total', { pool: POOL, reason: 'no-lease' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'tokenlease_agent_balance_tokens', pool)).toBeGreaterThanOrEqual(0);
    expect(valueOf(samples, 'tokenlease_agent_fallback_admissions_total', pool) ?? 0).toBe(0);
    await agent.exited;
  });

  it('turns /readyz unready while NATS is down and ready again after it is back', async () => {
    const privateNats = await startPrivateNats();
    try {
      const dir = scratchDir();
      const configPath = writeConfig(dir, { pools: { [POOL]: { capacity: 10, refill: '10/s' } } });
      const port = await freePort();
      const readyz = `http://127.0.0.1:${port}/readyz`;
      const coordinator = await startCoordinator(privateNats.url, configPath, { http: `127.0.0.1:${port}` });
      await waitForStatus(readyz, 200, 5000);
      await privateNats.kill();
      const unreadyMs = await waitForStatus(readyz, 503, 5000);
      expect(await httpStatus(`http://127.0.0.1:${port}/healthz`)).toBe(200);
      await privateNats.start();
      const readyMs = await waitForStatus(readyz, 200, 10_000);
      console.log(`readyz: unready ${unreadyMs.toFixed(0)} ms after NATS was killed, ready ${readyMs.toFixed(0)} ms after it was back`);
      await stop(coordinator);
    } finally {
      await privateNats.stop();
    }
  });

  it('turns /readyz unready while Redis is down (durable mode) and ready again after it is back', async () => {
    const redis = await startPrivateRedis();
    try {
      const dir = scratchDir();
      const configPath = writeConfig(dir, { subjectPrefix: `tlready${process.pid}`, pools: { [POOL]: { capacity: 10, refill: '10/s' } } });
      const port = await freePort();
      const readyz = `http://127.0.0.1:${port}/readyz`;
      const coordinator = await startCoordinator(nats().url, configPath, {
        redisUrl: redis.url,
        ownershipTtlMs: 600,
        member: 'ready-1',
        http: `127.0.0.1:${port}`,
      });
      await waitForEvent(coordinator, { event: 'pool-owned', pool: POOL }, 10_000);
      await waitForStatus(readyz, 200, 5000);
      const owned = await scrape(`http://127.0.0.1:${port}/metrics`);
      expect(valueOf(owned, 'tokenlease_pool_owned', { pool: POOL })).toBe(1);
      expect(valueOf(owned, 'tokenlease_store_up')).toBe(1);
      // The status page's data says who owns what.
      const page = (await (await fetch(`http://127.0.0.1:${port}/api/status`)).json()) as {
        mode: string;
        ownership: { member: string; storeUp: boolean; owned: { unit: string; epoch: number }[] };
      };
      expect(page.mode).toBe('durable');
      expect(page.ownership).toMatchObject({ member: 'ready-1', storeUp: true });
      expect(page.ownership.owned.map((o) => o.unit).sort()).toEqual(['*', POOL]);
      await redis.kill();
      const unreadyMs = await waitForStatus(readyz, 503, 10_000);
      await redis.start();
      const readyMs = await waitForStatus(readyz, 200, 15_000);
      console.log(`readyz: unready ${unreadyMs.toFixed(0)} ms after Redis was killed, ready ${readyMs.toFixed(0)} ms after it was back`);
      await stop(coordinator);
    } finally {
      await redis.stop();
    }
  });
});
