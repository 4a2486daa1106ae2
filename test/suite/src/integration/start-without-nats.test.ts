/**
 * A service that boots while NATS is down (`connectInBackground`): the
 * agent is ready at once, its HTTP middleware applies the unavailable
 * policy (503, or admits with `unavailable: 'allow'`), and once a NATS
 * server and a coordinator come up it connects by itself and grants.
 * NATS is a private server of this test, started only after the agent.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, type AgentEvent } from '@tokenlease/agent';
import { createHttpLimit } from '@tokenlease/agent/http';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { startPrivateNats } from '@tokenlease/harness/nats';
import { stopAll } from '@tokenlease/harness/processes';
import { get, listen } from '../http-client.js';
import { serverForSuite } from '../servers.js';

describe('a service that starts while NATS is down', () => {
  const nats = serverForSuite(startPrivateNats);
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) server.close();
    await stopAll();
  });

  it('is ready at once, answers by its unavailable policy, then connects and grants when NATS comes', async () => {
    await nats().kill();
    const events: AgentEvent[] = [];
    const startedMs = performance.now();
    const agent = await Agent.connect({ natsUrl: nats().url, connectInBackground: true, onEvent: (e) => events.push(e) });
    const readyMs = performance.now() - startedMs;
    // Without it, the same agent is refused at once: nothing listens there.
    await expect(Agent.connect({ natsUrl: nats().url, nats: { connectTimeoutMs: 500 } })).rejects.toMatchObject({ code: 'unreachable' });

    const closed = createHttpLimit({ agent, pools: [{ name: 'api' }], graceMs: 50 });
    const open = createHttpLimit({ agent, pools: [{ name: 'api' }], graceMs: 50, unavailable: 'allow' });
    const server = createServer((req, res) => {
      void (req.url === '/open' ? open : closed)(req, res).then((admitted) => {
        if (admitted) res.end('ok');
      });
    });
    servers.push(server);
    const base = await listen(server);
    const before = [(await get(base, '/')).status, (await get(base, '/open')).status];

    await nats().start();
    await startCoordinator(
      nats().url,
      writeConfig(scratchDir(), { quietPeriodMs: 500, pools: { api: { capacity: 50, refill: '50/s', leaseTtlMs: 500 } } }),
    );
    const limiter = agent.limiter('api');
    const upMs = performance.now();
    let admittedAfterMs = NaN;
    for (let i = 0; i < 300 && Number.isNaN(admittedAfterMs); i += 1) {
      if (limiter.tryTake(1)) admittedAfterMs = performance.now() - upMs;
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // And the middleware admits again (a 429 while the first lease is small is the limit, not the outage).
    let after = 0;
    for (let i = 0; i < 40 && after !== 200; i += 1) {
      after = (await get(base, '/')).status;
      if (after !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await agent.close();
    console.log(
      `start-without-nats: ready in ${readyMs.toFixed(0)} ms; while down / and /open answered ${before.join(', ')}; ` +
        `first admission ${admittedAfterMs.toFixed(0)} ms after NATS and the coordinator were up; events ${[...new Set(events.map((e) => e.type))].join(',')}`,
    );
    expect(readyMs).toBeLessThan(2000);
    expect(before).toEqual([503, 200]);
    expect(events.some((e) => e.type === 'error')).toBe(true);
    expect(events.some((e) => e.type === 'reconnect')).toBe(true);
    expect(Number.isNaN(admittedAfterMs)).toBe(false);
    expect(after).toBe(200);
  });
});
