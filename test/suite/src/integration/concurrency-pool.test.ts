/**
 * Concurrency pools over real NATS and real HTTP: a coordinator process
 * with pools of a few slots, Express, Fastify and node:http servers on
 * 127.0.0.1 whose handler is a slow downstream that counts its own calls
 * in flight, asked with fetch. Checked: the downstream never sees more
 * than N at once; a request that finds every slot busy gets 503 with
 * `Retry-After` and a problem body, or waits its turn with `waitMs`; a
 * slot comes back when the response ends, when the handler fails and when
 * the client goes away; beside a rate limit each pool is charged; a request
 * still running at the hold bound is aborted when asked. Operators see a
 * concurrency pool's slots (leased, free, held back) and its hold bound in
 * the coordinator's /metrics and /api/status, in `tokenlease pools`, and
 * the agent's requests in flight in its own metrics.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent } from '@tokenlease/agent';
import { createConcurrencyLimit, createHttpLimit, type ConcurrencyLimitMiddleware } from '@tokenlease/agent/http';
import { fastifyConcurrencyLimit } from '@tokenlease/agent/fastify';
import express, { type NextFunction, type Request, type Response } from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, listen, type Reply } from '../http-client.js';
import { scratchDir, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { operatorCliScript } from '@tokenlease/harness/paths';
import { freePort } from '@tokenlease/harness/ports';
import { spawnNode, stopAll } from '@tokenlease/harness/processes';
import { scrape, valueOf } from '@tokenlease/harness/scrape';

const PREFIX = `tlconc${process.pid}`;
const S = 1000;
const SLOT_POOL = { leaseTtlMs: 1000, maxLeaseTokens: 4 };
/** The pools: each test its own, all free once the quiet period (1 s) and one hold bound are over. */
const POOLS = {
  db: { ...SLOT_POOL, concurrency: { limit: 4, maxHoldMs: 2000 } },
  queued: { ...SLOT_POOL, concurrency: { limit: 4, maxHoldMs: 2000 } },
  ended: { ...SLOT_POOL, concurrency: { limit: 2, maxHoldMs: 5000 }, maxLeaseTokens: 2 },
  fx: { ...SLOT_POOL, concurrency: { limit: 3, maxHoldMs: 2000 }, maxLeaseTokens: 3 },
  plain: { ...SLOT_POOL, concurrency: { limit: 2, maxHoldMs: 2000 }, maxLeaseTokens: 2 },
  beside: { ...SLOT_POOL, concurrency: { limit: 3, maxHoldMs: 2000 }, maxLeaseTokens: 3 },
  rate: { capacity: 100, refill: '100/s', leaseTtlMs: 1000 },
  brief: { ...SLOT_POOL, concurrency: { limit: 2, maxHoldMs: 400 }, maxLeaseTokens: 2 },
  tokens: { capacity: 10, refill: '10/s', leaseTtlMs: 1000 },
  ops: { ...SLOT_POOL, concurrency: { limit: 5, maxHoldMs: 4000 }, maxLeaseTokens: 5 },
};

/** Downstream — a slow service that counts its own calls in flight, and the most it saw at once. */
class Downstream {
  inFlight = 0;
  most = 0;
  calls = 0;

  async call(ms: number): Promise<void> {
    this.inFlight += 1;
    this.calls += 1;
    this.most = Math.max(this.most, this.inFlight);
    try {
      await new Promise((r) => setTimeout(r, ms));
    } finally {
      this.inFlight -= 1;
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** until — polls `check` every 20 ms until it holds, for at most `ms`. */
async function until(check: () => boolean, ms = 5 * S): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

function expectBusy(reply: Reply, pool: string): void {
  expect(reply.status).toBe(503);
  expect(reply.headers.get('retry-after') ?? '').toMatch(/^[1-9]\d*$/);
  expect(reply.headers.get('content-type')).toBe('application/problem+json');
  expect(JSON.parse(reply.body)).toMatchObject({ type: 'urn:tokenlease:problem:concurrency-limited', status: 503, pool });
}

describe('concurrency pools through the HTTP middleware', () => {
  let nats: NatsHandle;
  let probe: StatusProbe;
  let httpBase = '';
  const agents: Agent[] = [];
  const servers: Server[] = [];
  const fastifies: FastifyInstance[] = [];

  async function newAgent(): Promise<Agent> {
    const agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: PREFIX });
    agents.push(agent);
    return agent;
  }

  /** An Express app whose `/` calls `downstream` for `ms` under `limit`; its base URL. */
  async function expressApp(limit: ConcurrencyLimitMiddleware<Request>, downstream: Downstream, ms: number): Promise<string> {
    const app = express();
    app.use(limit);
    app.get('/', async (_req, res) => {
      await downstream.call(ms);
      res.send('ok');
    });
    app.get('/boom', () => {
      throw new Error('the handler failed');
    });
    app.get('/hang', () => undefined);
    app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
      res.status(500).send(error.message);
    });
    const server = createServer(app);
    servers.push(server);
    return listen(server);
  }

  beforeAll(async () => {
    nats = await provideNats();
    const port = await freePort();
    httpBase = `http://127.0.0.1:${port}`;
    await startCoordinator(nats.url, writeConfig(scratchDir(), { subjectPrefix: PREFIX, pools: POOLS }), { http: `127.0.0.1:${port}` });
    probe = await StatusProbe.connect(nats.url);
    const deadline = Date.now() + 30 * S;
    for (const [pool, config] of Object.entries(POOLS)) {
      const limit = 'concurrency' in config ? config.concurrency.limit : config.capacity;
      for (;;) {
        const status = await probe.status(pool, PREFIX);
        if (status.levelTokens >= limit && status.quietMs === 0) break;
        if (Date.now() > deadline) throw new Error(`pool ${pool} not free: ${JSON.stringify(status)}`);
        await sleep(50);
      }
    }
  }, 60 * S);

  afterAll(async () => {
    for (const f of fastifies) await f.close();
    for (const s of servers) s.close();
    for (const a of agents) await a.close({ timeoutMs: 500 });
    await probe?.close();
    await stopAll();
    await nats?.stop();
  });

  it('Express: the downstream never sees more than N at once; the rest get 503 with Retry-After', async () => {
    const agent = await newAgent();
    const downstream = new Downstream();
    const limit = createConcurrencyLimit<Request>({ agent, pool: 'db', graceMs: 3000 });
    const base = await expressApp(limit, downstream, 300);
    // One request first: the agent has heard from its pool, so the burst after it is answered at once.
    expect((await get(base)).status).toBe(200);
    const replies = await Promise.all(Array.from({ length: 30 }, () => get(base)));
    const ok = replies.filter((r) => r.status === 200);
    const busy = replies.filter((r) => r.status !== 200);
    expect(downstream.most).toBeLessThanOrEqual(4);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(busy.length).toBeGreaterThan(0);
    for (const r of busy) expectBusy(r, 'db');
    expect(await until(() => limit.inFlight === 0)).toBe(true);
  });

  it('Express with waitMs: every request waits its turn, N at a time, all of the N used', async () => {
    const agent = await newAgent();
    const downstream = new Downstream();
    const limit = createConcurrencyLimit<Request>({ agent, pool: 'queued', waitMs: 10_000, graceMs: 3000 });
    const base = await expressApp(limit, downstream, 200);
    const replies = await Promise.all(Array.from({ length: 24 }, () => get(base)));
    expect(replies.map((r) => r.status)).toEqual(Array.from({ length: 24 }, () => 200));
    expect(downstream.calls).toBe(24);
    expect(downstream.most).toBeLessThanOrEqual(4);
    // The agent's lease grows to the pool's N while requests wait: all of it serves.
    expect(downstream.most).toBe(4);
  });

  it('gives the slot back when the handler fails and when the client goes away', async () => {
    const agent = await newAgent();
    const downstream = new Downstream();
    const limit = createConcurrencyLimit<Request>({ agent, pool: 'ended', waitMs: 3000, graceMs: 3000 });
    const base = await expressApp(limit, downstream, 10);
    // More failures than slots, one after another: each must have given its slot back.
    for (let i = 0; i < 5; i += 1) expect((await get(base, '/boom')).status).toBe(500);
    expect(await until(() => limit.inFlight === 0)).toBe(true);
    // Both slots held by requests whose handler never answers, then the clients go away.
    const aborts = [new AbortController(), new AbortController()];
    const hung = aborts.map((a) => fetch(`${base}/hang`, { signal: a.signal }).catch(() => 'aborted'));
    expect(await until(() => limit.inFlight === 2)).toBe(true);
    for (const a of aborts) a.abort();
    expect(await Promise.all(hung)).toEqual(['aborted', 'aborted']);
    // Released as the connections close, long before the hold bound (5 s) would have counted them out.
    expect(await until(() => limit.inFlight === 0, 2 * S)).toBe(true);
    expect((await get(base)).status).toBe(200);
    expect((await get(base)).status).toBe(200);
  });

  it('Fastify: at most N in flight at the downstream, the rest 503', async () => {
    const agent = await newAgent();
    const downstream = new Downstream();
    const app = Fastify();
    fastifies.push(app);
    await app.register(fastifyConcurrencyLimit, { agent, pool: 'fx', graceMs: 3000 });
    app.get('/', async () => {
      await downstream.call(300);
      return 'ok';
    });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    expect((await get(base)).status).toBe(200);
    const replies = await Promise.all(Array.from({ length: 20 }, () => get(base)));
    expect(downstream.most).toBeLessThanOrEqual(3);
    const busy = replies.filter((r) => r.status !== 200);
    expect(busy.length).toBeGreaterThan(0);
    for (const r of busy) expectBusy(r, 'fx');
  });

  it('node:http: `await limit(req, res)` admits or answers the refusal itself', async () => {
    const agent = await newAgent();
    const downstream = new Downstream();
    const limit = createConcurrencyLimit({ agent, pool: 'plain', graceMs: 3000, waitMs: 5000 });
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      void (async () => {
        if (!(await limit(req, res))) return;
        await downstream.call(100);
        res.end('ok');
      })();
    });
    servers.push(server);
    const base = await listen(server);
    const replies = await Promise.all(Array.from({ length: 10 }, () => get(base)));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(downstream.most).toBeLessThanOrEqual(2);
    expect(downstream.most).toBe(2);
  });

  it('beside a rate limit on the same route: both pools charged, slots bound what runs at once', async () => {
    const agent = await newAgent();
    const downstream = new Downstream();
    const app = express();
    app.use(createHttpLimit({ agent, pools: [{ name: 'rate' }], graceMs: 3000 }));
    app.use(createConcurrencyLimit<Request>({ agent, pool: 'beside', waitMs: 5000, graceMs: 3000 }));
    app.get('/', async (_req, res) => {
      await downstream.call(100);
      res.send('ok');
    });
    const server = createServer(app);
    servers.push(server);
    const base = await listen(server);
    const replies = await Promise.all(Array.from({ length: 12 }, () => get(base)));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(replies.every((r) => r.headers.get('ratelimit') !== null)).toBe(true);
    expect(downstream.most).toBeLessThanOrEqual(3);
    expect(agent.limiter('rate').stats().admittedCount).toBe(12);
    expect(agent.limiter('beside').stats().admittedCount).toBe(12);
  });

  it('aborts a request still running at the hold bound, and says so', async () => {
    const agent = await newAgent();
    const overruns: string[] = [];
    const limit = createConcurrencyLimit<Request>({
      agent,
      pool: 'brief',
      graceMs: 3000,
      overrun: 'abort',
      onOverrun: (req) => overruns.push(req.url),
    });
    const base = await expressApp(limit, new Downstream(), 10);
    const started = Date.now();
    const outcome = await fetch(`${base}/hang`).then(
      (r) => `status ${r.status}`,
      () => 'aborted',
    );
    expect(outcome).toBe('aborted');
    // The bound is 400 ms less the agent's drift margin: not before, and not long after.
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(overruns).toEqual(['/hang']);
    expect(await until(() => limit.inFlight === 0)).toBe(true);
  });

  it('answers 500, naming the pool, when the pool leases tokens', async () => {
    const agent = await newAgent();
    const limit = createConcurrencyLimit<Request>({ agent, pool: 'tokens', graceMs: 3000 });
    const base = await expressApp(limit, new Downstream(), 10);
    // The first request waits for the first grant, which says the pool leases tokens.
    await agent.limiter('tokens').ready(3000);
    const reply = await get(base);
    expect(reply.status).toBe(500);
    expect(JSON.parse(reply.body)).toMatchObject({ type: 'urn:tokenlease:problem:not-concurrency', pool: 'tokens' });
  });

  it("shows operators the slots: leased, free and held back, the hold bound, and the agent's requests in flight", async () => {
    const agent = await newAgent();
    const limit = createConcurrencyLimit<Request>({ agent, pool: 'ops', graceMs: 3000, waitMs: 3000 });
    const base = await expressApp(limit, new Downstream(), 10);
    const hung = [new AbortController(), new AbortController()];
    const pending = hung.map((a) => fetch(`${base}/hang`, { signal: a.signal }).catch(() => 'aborted'));
    try {
      expect(await until(() => limit.inFlight === 2)).toBe(true);
      const samples = await scrape(`${httpBase}/metrics`);
      const pool = { pool: 'ops' };
      expect(valueOf(samples, 'tokenlease_pool_concurrency_limit', pool)).toBe(5);
      const leased = valueOf(samples, 'tokenlease_pool_leased_tokens', pool) ?? NaN;
      const free = valueOf(samples, 'tokenlease_pool_level_tokens', pool) ?? NaN;
      const heldBack = valueOf(samples, 'tokenlease_pool_cooling_tokens', pool) ?? NaN;
      expect(leased).toBeGreaterThanOrEqual(2);
      expect(leased + free + heldBack).toBe(5);
      const status = (await (await fetch(`${httpBase}/api/status`)).json()) as { pools: Record<string, unknown>[] };
      expect(status.pools.find((p) => p['name'] === 'ops')).toMatchObject({ holdMs: 4000, windowMs: null, capacityTokens: 5 });
      const run = spawnNode('tokenlease', operatorCliScript(), ['pools', '--json', '--nats', nats.url, '--prefix', PREFIX]);
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(0);
      const listed = JSON.parse(run.lines.join('\n')) as { pools: Record<string, unknown>[] };
      expect(listed.pools.find((p) => p['pool'] === 'ops')).toMatchObject({ holdMs: 4000, capacityTokens: 5 });
      expect(listed.pools.find((p) => p['pool'] === 'ops')?.['windowMs']).toBeUndefined();
      expect(agent.limiter('ops').inFlight).toBe(2);
    } finally {
      for (const a of hung) a.abort();
      await Promise.all(pending);
    }
    expect(await until(() => limit.inFlight === 0)).toBe(true);
  });
});
