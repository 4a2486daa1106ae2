/**
 * Per-key limiters over real NATS: an idle limiter holds no timer, one idle
 * past `limiterIdleMs` is dropped (its lease already returned) and made
 * again on use through the same handle, and `limiter.close()` returns the
 * lease at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent } from '@tokenlease/agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { stopAll } from '@tokenlease/harness/processes';

const PREFIX = `tlkeys${process.pid}`;

describe('per-key limiters', () => {
  let nats: NatsHandle;
  let probe: StatusProbe;
  let agent: Agent;

  beforeAll(async () => {
    nats = await provideNats();
    const config = writeConfig(scratchDir(), {
      subjectPrefix: PREFIX,
      templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000 } },
    });
    await startCoordinator(nats.url, config);
    probe = await StatusProbe.connect(nats.url);
    await sleep(1100); // past the quiet period
    agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: PREFIX, keeper: { idleReturnMs: 100 }, limiterIdleMs: 300 });
  }, 30_000);

  afterAll(async () => {
    await agent?.close({ timeoutMs: 500 });
    await probe?.close();
    await stopAll();
    await nats?.stop();
  });

  it('idle limiters hold no timer, are dropped, and come back on use', async () => {
    const limiters = Array.from({ length: 50 }, (_, i) => agent.limiter(`tenant:k${i}`));
    for (const limiter of limiters) expect(await limiter.take(1, { timeoutMs: 2000 })).toBe(true);
    expect(agent.limiterCount).toBe(50);
    const deadline = Date.now() + 5000;
    while (agent.limiterCount > 0 && Date.now() < deadline) await sleep(50);
    expect([agent.limiterCount, agent.timerCount]).toEqual([0, 0]);
    const status = await probe.status('tenant:k0', PREFIX);
    expect(status.leases).toBe(0); // returned before it was dropped
    const first = limiters[0];
    expect(agent.limiter('tenant:k0')).toBe(first); // still held: the same handle
    expect(await first?.take(1, { timeoutMs: 2000 })).toBe(true);
    expect(agent.limiterCount).toBe(1);
  });

  it('close() returns the lease at once', async () => {
    const limiter = agent.limiter('tenant:closing');
    expect(await limiter.take(1, { timeoutMs: 2000 })).toBe(true);
    expect((await probe.status('tenant:closing', PREFIX)).leases).toBe(1);
    limiter.close();
    const deadline = Date.now() + 2000;
    while ((await probe.status('tenant:closing', PREFIX)).leases > 0 && Date.now() < deadline) await sleep(20);
    expect((await probe.status('tenant:closing', PREFIX)).leases).toBe(0);
  });
});
