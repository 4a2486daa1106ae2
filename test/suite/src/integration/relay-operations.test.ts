/**
 * Operating a relay, over real processes: a root coordinator, a relay with
 * `--http` asking under a relay class, and two agent processes under it.
 * Its /metrics must show what it holds from the root, the fleet weight it
 * states and the grants it makes; /readyz and the status data must say it
 * serves; `tokenlease pools` on its prefix must list its pool. A SIGHUP
 * with a smaller lease size and a new pool applies both (the changed pool
 * starts over under a new upstream agent id) while the agents go on; one
 * that changes the upstream prefix is refused and changes nothing. The
 * root's B + r·T holds over the agents' merged logs throughout.
 *
 * Then tenant pools: a relay serving `tenant:*` makes each tenant's pool
 * at its first request under an upstream lease of its own, and once the
 * tenant's agents have gone and the pool is forgotten (`idleEvictMs`), it
 * returns that lease to the root, long before the root's TTL would.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope } from '@tokenlease/shared/testing';
import { readAdmissionLog, reloadBySighup, startRelay, StatusProbe } from '@tokenlease/harness/fleet';
import { logEvents, waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats } from '@tokenlease/harness/nats';
import { operatorCliScript } from '@tokenlease/harness/paths';
import { freePort } from '@tokenlease/harness/ports';
import { spawnNode } from '@tokenlease/harness/processes';
import { httpStatus, scrape, valueOf, waitForStatus } from '@tokenlease/harness/scrape';
import { startRelayRoot, startSteadyAgents, writeRelayConfig } from '../relay-tree.js';
import { serverForSuite } from '../servers.js';

const POOL = 'api';
const LIMITS = { capacity: 200, refill: '400/s' };
// Long enough that the agents still run well after the reload when a busy machine makes the steps before it slow (at 6 s a CI run saw none admit after it).
const RUN_MS = 12_000;

describe('a relay operated like a coordinator', () => {
  const nats = serverForSuite(provideNats);

  it('serves metrics, health and status, lists its pools, and reloads on SIGHUP', { timeout: 60_000 }, async () => {
    const rootPool = { ...LIMITS, leaseTtlMs: 1000, maxLeaseTokens: 100, relayClasses: { relay: 100 } };
    const rootDoc = (root: string): object => ({ subjectPrefix: root, pools: { [POOL]: rootPool, extra: rootPool } });
    const run = await startRelayRoot(nats().url, 'relay-operations', import.meta.url, 'tlrops', rootDoc);
    const { seed, dir, root } = run;
    const relayDoc = (pools: object, upstreamPrefix = root): object => ({
      upstreamPrefix,
      subjectPrefix: `${root}r`,
      pools,
      uplink: { refreshMs: 250, holdMs: 200, replyTimeoutMs: 250, agentClass: 'relay' },
    });
    const configPath = writeRelayConfig(dir, 'relay', relayDoc({ [POOL]: { ...LIMITS, leaseTtlMs: 600, maxLeaseTokens: 20 } }));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const relay = await startRelay(nats().url, configPath, `ops${seed}`, { http: `127.0.0.1:${port}` });
    const spec = { prefix: `${root}r`, pools: [POOL, POOL], name: 'o', durationMs: RUN_MS, perSecond: 300 };
    const { paths, agents } = await startSteadyAgents(nats().url, run, spec);

    await new Promise((resolve) => setTimeout(resolve, 1500));

    expect(await httpStatus(`${base}/healthz`)).toBe(200);
    await waitForStatus(`${base}/readyz`, 200, 5000);
    const samples = await scrape(`${base}/metrics`);
    const held = valueOf(samples, 'tokenlease_relay_upstream_tokens', { pool: POOL }) ?? 0;
    console.log(`relay-operations: the relay holds ${held} tokens from the root`);
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(rootPool.maxLeaseTokens);
    expect(valueOf(samples, 'tokenlease_relay_upstream_lease_seconds', { pool: POOL })).toBeGreaterThan(0);
    expect(valueOf(samples, 'tokenlease_relay_fleet_weight', { pool: POOL })).toBe(2);
    expect(valueOf(samples, 'tokenlease_relay_upstream_requests_total', { pool: POOL, outcome: 'granted' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'tokenlease_grants_total', { pool: POOL })).toBeGreaterThan(0);
    const status = (await (await fetch(`${base}/api/status`)).json()) as { mode: string; coordinator: string; pools: { name: string }[] };
    expect(status.mode).toBe('relay');
    expect(status.coordinator).toBe(`ops${seed}`);
    expect(status.pools.map((p) => p.name)).toEqual([POOL]);
    const listing = spawnNode('tokenlease', operatorCliScript(), ['pools', '--json', '--nats', nats().url, '--prefix', `${root}r`]);
    expect((await listing.exited).code, listing.stderr()).toBe(0);
    const listed = JSON.parse(listing.lines.join('\n')) as { pools: { pool: string; kind: string }[] };
    expect(listed.pools.map((p) => [p.pool, p.kind])).toEqual([[POOL, 'configured']]);

    // A smaller lease size and a new pool: applied, the changed pool under a new upstream agent id.
    const uplinksBefore = logEvents(relay.lines, { event: 'uplink-started' }).length;
    const next = relayDoc({ [POOL]: { ...LIMITS, leaseTtlMs: 600, maxLeaseTokens: 10 }, extra: { ...LIMITS, leaseTtlMs: 600 } });
    const reloaded = await reloadBySighup(relay, configPath, next, 0);
    const reloadedAtUs = hostMonoNowUs();
    expect(reloaded['changed']).toEqual([POOL]);
    expect(reloaded['added']).toEqual(['extra']);
    await relay.waitForLine((line) => logEvents([line], { event: 'uplink-started' }).length > 0 && line.includes(`"pool":"${POOL}"`), 3000);
    expect(logEvents(relay.lines, { event: 'uplink-started' }).length).toBeGreaterThan(uplinksBefore);

    // Another upstream prefix needs a restart: refused, nothing changes.
    writeFileSync(configPath, JSON.stringify(relayDoc({ [POOL]: { ...LIMITS, leaseTtlMs: 600, maxLeaseTokens: 10 } }, `${root}x`)));
    relay.proc.kill('SIGHUP');
    const refused = await relay.waitForLine((line) => line.includes('"event":"reload-refused"'), 5000);
    expect(refused).toContain('upstreamPrefix');
    const after = (await (await fetch(`${base}/api/status`)).json()) as { pools: { name: string }[] };
    expect(after.pools.map((p) => p.name).sort()).toEqual(['api', 'extra']);

    const exits = await Promise.all(agents.map((a) => a.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0]);
    const admissions = paths.flatMap((path) => readAdmissionLog(path));
    const report = checkEnvelope(admissions, LIMITS.capacity, makeRate(400, 1000));
    const afterReload = admissions.filter((a) => a.tUs > reloadedAtUs + 700_000).reduce((sum, a) => sum + a.cost, 0);
    console.log(`relay-operations: ${JSON.stringify(report)}; ${afterReload} tokens admitted from 0.7 s after the reload`);
    expect(report.ok, `worst window ${JSON.stringify(report.worstWindow)}`).toBe(true);
    expect(afterReload).toBeGreaterThan(0);
  });

  it(
    'relays tenant pools from a template, each under its own upstream lease, returned once the pool is forgotten',
    { timeout: 60_000 },
    async () => {
      const tenant = { capacity: 100, refill: '200/s' };
      // The root's leases last 3 s: a lease returned is gone well before one that lapses.
      const rootTemplate = { ...tenant, leaseTtlMs: 3000, maxLeaseTokens: 50, relayClasses: { relay: 100 } };
      const rootDoc = (root: string): object => ({ subjectPrefix: root, templates: { 'tenant:*': rootTemplate } });
      const run = await startRelayRoot(nats().url, 'relay-templates', import.meta.url, 'tlrtpl', rootDoc);
      const { seed, dir, root } = run;
      const rootQuietEnd = Date.now() + rootTemplate.leaseTtlMs;
      const doc = {
        upstreamPrefix: root,
        subjectPrefix: `${root}r`,
        templates: { 'tenant:*': { ...tenant, leaseTtlMs: 500, maxLeaseTokens: 10, idleEvictMs: 1000 } },
        uplink: { refreshMs: 250, holdMs: 100, replyTimeoutMs: 250, agentClass: 'relay' },
      };
      const port = await freePort();
      const relay = await startRelay(nats().url, writeRelayConfig(dir, 'relay', doc), `tpl${seed}`, { http: `127.0.0.1:${port}` });
      // Past the root's quiet period (its longest TTL), so tenant pools are made full.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, rootQuietEnd - Date.now())));
      const tenants = ['tenant:a', 'tenant:b'];
      const spec = { prefix: `${root}r`, pools: tenants, name: 'tenant', durationMs: 2500, perSecond: 300 };
      const { paths, agents } = await startSteadyAgents(nats().url, run, spec);
      // Metrics label the tenants' pools by their template, as a coordinator's do.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const samples = await scrape(`http://127.0.0.1:${port}/metrics`);
      const labels = samples.filter((x) => x.name === 'tokenlease_relay_upstream_tokens').map((x) => x.labels['pool']);
      expect(labels).toEqual(['tenant:*']);
      expect(valueOf(samples, 'tokenlease_relay_upstream_tokens', { pool: 'tenant:*' })).toBeGreaterThan(0);
      expect(valueOf(samples, 'tokenlease_relay_fleet_weight', { pool: 'tenant:*' })).toBe(2);

      expect((await Promise.all(agents.map((a) => a.exited))).map((e) => e.code)).toEqual([0, 0]);
      const closedAtUs = hostMonoNowUs();
      const uplinks = new Map(
        logEvents(relay.lines, { event: 'uplink-started' }).map((e) => [String(e.fields['pool']), String(e.fields['agentId'])]),
      );
      expect([...uplinks.keys()].sort()).toEqual(tenants);
      for (const [k, path] of paths.entries()) {
        const report = checkEnvelope(readAdmissionLog(path), tenant.capacity, makeRate(200, 1000));
        console.log(`relay-operations: ${tenants[k]}: ${JSON.stringify(report)}`);
        expect(report.ok).toBe(true);
        expect(report.admittedTokens).toBeGreaterThan(100);
      }
      // Forgotten after a second idle, the tenant pools' upstream leases go back to the root.
      const probe = await StatusProbe.connect(nats().url);
      try {
        const gone = async (pool: string): Promise<boolean> => (await probe.status(pool, root, uplinks.get(pool))).agentLease === null;
        let left = tenants;
        for (let i = 0; i < 60 && left.length > 0; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          const still = await Promise.all(left.map(async (pool) => ((await gone(pool)) ? null : pool)));
          left = still.filter((pool): pool is string => pool !== null);
        }
        const afterMs = Math.round((hostMonoNowUs() - closedAtUs) / 1000);
        console.log(
          `relay-operations: tenant pools' upstream leases returned within ${afterMs} ms of their agents' exit (root TTL 3000 ms)`,
        );
        expect(left).toEqual([]);
        expect(afterMs).toBeLessThan(rootTemplate.leaseTtlMs);
        // Returned, not lost: the relay does not report the forgotten pools' leases as ended unrenewed.
        expect(logEvents(relay.lines, { event: 'upstream-lost' })).toEqual([]);
      } finally {
        await probe.close();
      }
    },
  );

  it('says once, per pool, when its upstream lease ends unrenewed because the root is gone', { timeout: 30_000 }, async () => {
    const rootDoc = (root: string): object => ({ subjectPrefix: root, pools: { [POOL]: { ...LIMITS, leaseTtlMs: 1000 } } });
    const run = await startRelayRoot(nats().url, 'relay-lost', import.meta.url, 'tlrlost', rootDoc);
    const doc = { upstreamPrefix: run.root, subjectPrefix: `${run.root}r`, pools: { [POOL]: { ...LIMITS, leaseTtlMs: 500 } } };
    const relay = await startRelay(nats().url, writeRelayConfig(run.dir, 'relay', doc), `lost${run.seed}`);
    await waitForEvent(relay, { event: 'upstream-lease', pool: POOL }, 5000);
    run.coordinator.proc.kill('SIGKILL');
    await run.coordinator.exited;
    const killedAt = Date.now();
    await waitForEvent(relay, { event: 'upstream-lost', pool: POOL }, 5000);
    const afterMs = Date.now() - killedAt;
    console.log(`relay-operations: upstream-lost ${afterMs} ms after the root's SIGKILL (root TTL 1000 ms)`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(logEvents(relay.lines, { event: 'upstream-lost' })).toHaveLength(1);
  });
});
