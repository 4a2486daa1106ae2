/**
 * All-or-nothing admission across two pools over real NATS: every request
 * is charged to a global pool and a tenant pool together. Both pools'
 * envelopes hold, and neither pool is ever charged without the other.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from '@tokenlease/agent';
import { makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import { checkEnvelope, type Admission, seedFromEnv } from '@tokenlease/shared/testing';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats } from '@tokenlease/harness/nats';
import { serverForSuite } from '../servers.js';

describe('tryTakeAll over two pools', () => {
  const nats = serverForSuite(provideNats);

  it('charges the global and the tenant pool together or not at all', async () => {
    const prefix = `tlmulti${seedFromEnv()}`;
    await startCoordinator(
      nats().url,
      writeConfig(scratchDir(), {
        subjectPrefix: prefix,
        pools: {
          global: { capacity: 200, refill: '400/s', leaseTtlMs: 1000, maxLeaseTokens: 40 },
          'tenant-acme': { capacity: 30, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 10 },
        },
      }),
    );
    const agent = await Agent.connect({ natsUrl: nats().url, subjectPrefix: prefix, clock: hostMonoNowUs });
    const global = agent.limiter('global');
    const tenant = agent.limiter('tenant-acme');
    const charges = [
      { limiter: global, cost: 1 },
      { limiter: tenant, cost: 1 },
    ];
    const admitted: Admission[] = [];
    let tenantDenials = 0;
    const endUs = hostMonoNowUs() + 4_000_000;
    while (hostMonoNowUs() < endUs) {
      for (let i = 0; i < 20; i += 1) {
        const tUs = hostMonoNowUs();
        if (agent.tryTakeAll(charges)) admitted.push({ tUs, cost: 1 });
        else if (agent.lastDeniedIndex === 1) tenantDenials += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await agent.close();
    const g = global.stats();
    const t = tenant.stats();
    console.log(
      `multi-pool: ${admitted.length} admitted; global ${g.admittedTokens}, tenant ${t.admittedTokens}; ${tenantDenials} denials by the tenant pool`,
    );
    expect(g.admittedTokens).toBe(admitted.length);
    expect(t.admittedTokens).toBe(admitted.length);
    expect(checkEnvelope(admitted, 30, makeRate(100, 1000)).ok).toBe(true);
    expect(checkEnvelope(admitted, 200, makeRate(400, 1000)).ok).toBe(true);
    expect(tenantDenials).toBeGreaterThan(0);
    expect(admitted.length).toBeGreaterThan(100);
  });
});
