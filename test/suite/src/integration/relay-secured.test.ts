/**
 * A relay on the shipped permission model (deploy/nats/secured.conf, its
 * `edge` relay user), with an agent user of the relay's prefix added in the
 * shipped agent blocks' form: the root runs with `bindIdentity`, the relay
 * asks it under `uplink.identity: edge` and reads its replies from
 * `_INBOX_edge`, and its agent, logged in as itself, admits through it.
 * A relay asking under an identity its user may not publish under is
 * stopped by the server, and gets no lease.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NATS_ENV } from '@tokenlease/shared/nats';
import { readAdmissionLog, scratchDir, startAgentProcess, startCoordinator, startRelay, writeConfig } from '@tokenlease/harness/fleet';
import { logEvents } from '@tokenlease/harness/log-events';
import { startShippedNats, type ShippedNats } from '@tokenlease/harness/nats-config';
import { stopAll } from '@tokenlease/harness/processes';

const POOL = 'api';
const LIMITS = { capacity: 100, refill: '200/s' };
/** No NATS setting of the parent's leaks into a child: each logs in as the test says. */
const CLEAN_ENV: NodeJS.ProcessEnv = Object.fromEntries(Object.values(NATS_ENV).map((name) => [name, '']));

describe('a relay on the shipped secured NATS', () => {
  let dir: string;
  let nats: ShippedNats;
  const login = (user: string): NodeJS.ProcessEnv => ({
    ...CLEAN_ENV,
    [NATS_ENV.url]: nats.url,
    [NATS_ENV.user]: user,
    [NATS_ENV.password]: nats.password(user),
  });
  const relayConfig = (identity: string): string => {
    const path = join(dir, `relay-${identity}.json`);
    const doc = {
      upstreamPrefix: 'tokenlease',
      subjectPrefix: 'tokenlease-edge',
      pools: { [POOL]: { ...LIMITS, leaseTtlMs: 600, maxLeaseTokens: 20 } },
      uplink: { identity, agentClass: 'relay', refreshMs: 250, holdMs: 100, replyTimeoutMs: 250 },
    };
    writeFileSync(path, JSON.stringify(doc));
    return path;
  };

  beforeAll(async () => {
    dir = scratchDir();
    nats = await startShippedNats(dir, [{ user: 'edgeagent', prefix: 'tokenlease-edge' }]);
    const root = { ...LIMITS, leaseTtlMs: 1000, maxLeaseTokens: 50, relayClasses: { relay: 100 } };
    await startCoordinator(nats.url, writeConfig(dir, { subjectPrefix: 'tokenlease', bindIdentity: true, pools: { [POOL]: root } }), {
      env: login('coordinator'),
    });
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await nats.stop();
  });

  it('leases from a root with bindIdentity under its identity and serves its agent on its own prefix', { timeout: 60_000 }, async () => {
    const relay = await startRelay(nats.url, relayConfig('edge'), 'eu1', { env: login('edge') });
    const logPath = join(dir, 'edgeagent.log');
    const agent = await startAgentProcess(
      {
        natsUrl: nats.url,
        identity: 'edgeagent',
        subjectPrefix: 'tokenlease-edge',
        pool: POOL,
        name: 'e',
        seed: 1,
        durationMs: 3000,
        logPath,
        traffic: { kind: 'steady', perSecond: 100 },
      },
      login('edgeagent'),
    );
    expect((await agent.exited).code).toBe(0);
    const admitted = readAdmissionLog(logPath).reduce((sum, a) => sum + a.cost, 0);
    const uplinkId = logEvents(relay.lines, { event: 'uplink-started' })[0]?.fields['agentId'];
    console.log(`relay-secured: the agent admitted ${admitted} tokens through relay ${String(uplinkId)}`);
    expect(String(uplinkId)).toMatch(/^edge\.eu1\.[0-9a-f]{12}$/);
    expect(logEvents(relay.lines, { event: 'upstream-lease' }).length).toBeGreaterThan(0);
    expect(relay.lines.filter((line) => line.includes('permissions violation'))).toEqual([]);
    expect(admitted).toBeGreaterThan(100);
  });

  it('is stopped by the server when it asks under an identity its user may not use', { timeout: 30_000 }, async () => {
    const relay = await startRelay(nats.url, relayConfig('search'), 'eu2', { env: login('edge') });
    const refused = await relay.waitForLine((line) => line.includes('permissions violation') && line.includes('acquire.api.search'), 5000);
    expect(refused).toContain('tokenlease.v2.acquire.api.search');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(logEvents(relay.lines, { event: 'upstream-lease' })).toEqual([]);
  });
});
