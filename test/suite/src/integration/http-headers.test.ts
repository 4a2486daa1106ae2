/**
 * What the HTTP middleware tells clients, read as a client would: Express,
 * Fastify and node:http servers limited by a real coordinator over real
 * NATS, hammered with fetch, their `RateLimit-Policy` and `RateLimit`
 * fields parsed by an independent structured-field parser
 * (structured-headers). Checked: no window of `w` seconds of a partition's
 * admissions ever holds more than the `q` its headers promised, on a full
 * bucket, a drained one and a sliding-window pool; a request that can
 * never fit is a 413 without `Retry-After`; key functions get the
 * framework's own request (`req.user`), a 2 KB key works, a route key is
 * the route's pattern; no raw key reaches a NATS subject, the
 * coordinator's log, its metrics, its status page or `tokenlease pools`; and operators see
 * what clients saw: the status page, `tokenlease pools` and /metrics count
 * every 429 the agents answered locally, within a lease's life.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Agent } from '@tokenlease/agent';
import { createHttpLimit, keyPoolName, type HttpLimitOptions } from '@tokenlease/agent/http';
import { fastifyRateLimit } from '@tokenlease/agent/fastify';
import { connectBus, type Bus } from '@tokenlease/shared/nats';
import express from 'express';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { parseList, type Item } from 'structured-headers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, listen, type Reply } from '../http-client.js';
import { scratchDir, startCoordinator, StatusProbe, writeConfig } from '@tokenlease/harness/fleet';
import { operatorCliScript } from '@tokenlease/harness/paths';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { freePort } from '@tokenlease/harness/ports';
import { spawnNode, stopAll, type Child } from '@tokenlease/harness/processes';

const PREFIX = `tlhdr${process.pid}`;
const S = 1000;
const SECRET = 'the http-headers test key secret';
/** One pool per case, each hammered by one server only. */
const BUCKET = { capacity: 20, refill: '10/s', leaseTtlMs: 1000, maxLeaseTokens: 5 };
const POOLS = {
  hexpress: BUCKET,
  hfastify: BUCKET,
  hnode: BUCKET,
  hdrained: BUCKET,
  hwindow: { window: { limit: 15, windowMs: 2000 }, leaseTtlMs: 1000, maxLeaseTokens: 5 },
  hcostly: { capacity: 10, refill: '10/s', leaseTtlMs: 1000 },
  hcounted: BUCKET,
};
const TEMPLATES = {
  'user:*': { capacity: 5, refill: '5/s', leaseTtlMs: 1000 },
  'route:*': { capacity: 5, refill: '5/s', leaseTtlMs: 1000 },
};
const HAMMER_MS = 3000;
/** Keys no log, subject, metric or page may show. */
const RAW_KEY = 'ann-raw-user-key-7f3a9c';
const LONG_KEY = `eyJ${'k'.repeat(2045)}`;

/** hammer — `workers` clients asking `path` back to back for `ms`; every reply. */
async function hammer(base: string, path: string, ms: number, workers = 4): Promise<Reply[]> {
  const replies: Reply[] = [];
  const until = Date.now() + ms;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (Date.now() < until) replies.push(await get(base, path));
    }),
  );
  return replies;
}

/** Promise — a policy's q and w as the structured-field parser reads them. */
interface Promised {
  readonly q: number;
  readonly w: number;
}

/** promisesOf — every distinct (q, w) that replies' `RateLimit-Policy` stated for `policy`; each `RateLimit` item checked for form. */
function promisesOf(replies: readonly Reply[], policy: string): Promised[] {
  const seen = new Map<string, Promised>();
  for (const reply of replies) {
    const field = reply.headers.get('ratelimit-policy');
    if (field === null) continue;
    const item = parseList(field).find((member): member is Item => member[0] === policy);
    if (item === undefined) continue;
    const [q, w] = [item[1].get('q'), item[1].get('w')];
    if (typeof q !== 'number' || typeof w !== 'number' || !Number.isInteger(q) || !Number.isInteger(w) || w < 1)
      throw new Error(`RateLimit-Policy ${field}: q and w must be integers, w >= 1`);
    seen.set(`${q};${w}`, { q, w });
    const limit = reply.headers.get('ratelimit');
    const now = limit === null ? undefined : parseList(limit).find((member): member is Item => member[0] === policy);
    if (now === undefined) throw new Error(`a reply states a policy for ${policy} but no RateLimit item`);
    const [r, t] = [now[1].get('r'), now[1].get('t')];
    if (typeof r !== 'number' || r < 0 || typeof t !== 'number' || t < 0) throw new Error(`RateLimit ${limit}: r and t must be >= 0`);
  }
  return [...seen.values()];
}

/** mostInWindow — the most admissions (µs instants) in any window of `windowUs`. */
function mostInWindow(instantsUs: readonly number[], windowUs: number): number {
  const sorted = [...instantsUs].sort((a, b) => a - b);
  let most = 0;
  for (let start = 0, end = 0; end < sorted.length; end++) {
    while ((sorted[end] as number) - (sorted[start] as number) >= windowUs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

/** kept — asserts the promises hold over `admittedUs`, and that there was one to keep. */
function kept(name: string, replies: readonly Reply[], policy: string, admittedUs: readonly number[]): void {
  const promises = promisesOf(replies, policy);
  expect(promises.length, `${name}: a RateLimit-Policy for ${policy}`).toBeGreaterThan(0);
  for (const { q, w } of promises) {
    const most = mostInWindow(admittedUs, w * 1_000_000);
    console.log(`http-headers ${name}: q=${q} w=${w}: at most ${most} admitted in any ${w} s (${admittedUs.length} in all)`);
    expect(most, `${name}: admissions in a window of ${w} s against q=${q}`).toBeLessThanOrEqual(q);
  }
}

describe('HTTP headers a client can trust', () => {
  let nats: NatsHandle;
  let probe: StatusProbe;
  let coordinator: Child;
  let watcher: Bus;
  let statusBase: string;
  const subjects = new Set<string>();
  const agents: Agent[] = [];
  const servers: Server[] = [];
  const fastifies: FastifyInstance[] = [];

  /** poolsListing — what `tokenlease pools --json` prints. */
  async function poolsListing(): Promise<string> {
    const child = spawnNode('tokenlease', operatorCliScript(), ['pools', '--json', '--nats', nats.url, '--prefix', PREFIX]);
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(0);
    return child.lines.join('\n');
  }

  async function newAgent(): Promise<Agent> {
    const agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: PREFIX });
    agents.push(agent);
    return agent;
  }

  /** An Express app: the limit under `app.use`, or on the route, logging each admission on the agent's clock. */
  async function expressServer(agent: Agent, options: Omit<HttpLimitOptions<IncomingMessage>, 'agent'>, log: number[]): Promise<string> {
    const app = express();
    app.get('/', createHttpLimit({ agent, ...options }), (_req, res) => {
      log.push(agent.clock());
      res.send('ok');
    });
    const server = createServer(app);
    servers.push(server);
    return listen(server);
  }

  beforeAll(async () => {
    nats = await provideNats();
    watcher = await connectBus(nats.url, { name: 'http-headers-watcher' });
    watcher.serve('>', null, (subject) => void subjects.add(subject));
    await watcher.flush();
    const port = await freePort();
    statusBase = `http://127.0.0.1:${port}`;
    coordinator = await startCoordinator(
      nats.url,
      writeConfig(scratchDir(), { subjectPrefix: PREFIX, pools: POOLS, templates: TEMPLATES }),
      {
        http: `127.0.0.1:${port}`,
        logLevel: 'debug',
      },
    );
    probe = await StatusProbe.connect(nats.url);
    const deadline = Date.now() + 20 * S;
    for (const pool of Object.keys(POOLS)) {
      for (;;) {
        const status = await probe.status(pool, PREFIX);
        if (status.quietMs === 0 && status.levelTokens >= status.capacityTokens) break;
        if (Date.now() > deadline) throw new Error(`pool ${pool} not full: ${JSON.stringify(status)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }, 60 * S);

  afterAll(async () => {
    for (const f of fastifies) await f.close();
    for (const s of servers) s.close();
    for (const a of agents) await a.close({ timeoutMs: 500 });
    await watcher?.close();
    await probe?.close();
    await stopAll();
    await nats?.stop();
  });

  it('Express, full bucket: no window of w seconds exceeds q', async () => {
    const log: number[] = [];
    const base = await expressServer(await newAgent(), { pools: [{ name: 'hexpress' }], graceMs: 0 }, log);
    const replies = await hammer(base, '/', HAMMER_MS);
    expect(replies.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    kept('express full', replies, 'hexpress', log);
  });

  it('operators see what clients saw: the status page, `tokenlease pools` and /metrics count every 429 agents answered locally', async () => {
    const agent = await newAgent();
    const app = express();
    app.get('/', createHttpLimit({ agent, pools: [{ name: 'hcounted' }], graceMs: 0 }), (_req, res) => {
      res.send('ok');
    });
    const server = createServer(app);
    servers.push(server);
    const replies = await hammer(await listen(server), '/', HAMMER_MS);
    const seen = { admitted: replies.filter((r) => r.status === 200).length, denied: replies.filter((r) => r.status === 429).length };
    expect(seen.denied, 'the hammer got 429s').toBeGreaterThan(0);
    expect(seen.admitted + seen.denied).toBe(replies.length);
    const endedAt = Date.now();
    // The agent tells its calls with its next request to the coordinator: a lease's life (1 s) at most after the last 429.
    type Counted = { admitted: number; denied: number };
    const fromPage = async (): Promise<Counted | undefined> => {
      const api = (await (await fetch(`${statusBase}/api/status`)).json()) as { pools: { name: string; calls?: Counted }[] };
      return api.pools.find((p) => p.name === 'hcounted')?.calls;
    };
    const fromCli = async (): Promise<Counted | undefined> => {
      const listed = JSON.parse(await poolsListing()) as { pools: { pool: string; calls?: Counted }[] };
      return listed.pools.find((p) => p.pool === 'hcounted')?.calls;
    };
    let page: Counted | undefined;
    while (Date.now() - endedAt < 10 * S) {
      page = await fromPage();
      if (page !== undefined && page.denied >= seen.denied && page.admitted >= seen.admitted) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const tookMs = Date.now() - endedAt;
    console.log(
      `http-headers counted: clients saw ${JSON.stringify(seen)}; the status page showed ${JSON.stringify(page)} ${tookMs} ms after the last reply`,
    );
    expect(page).toMatchObject(seen);
    expect(tookMs, 'the denials shown within a lease life (1 s) and a second of slack').toBeLessThan(2 * S);
    expect(await fromCli()).toMatchObject(seen);
    // The metrics take what the core counted once a second.
    const fromMetrics = async (): Promise<Counted> => {
      const text = await (await fetch(`${statusBase}/metrics`)).text();
      const count = (decision: string): number =>
        Number(new RegExp(`^tokenlease_agent_calls_total\\{pool="hcounted",decision="${decision}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
      return { admitted: count('admitted'), denied: count('denied') };
    };
    let counted = await fromMetrics();
    for (const by = Date.now() + 3 * S; (counted.admitted !== seen.admitted || counted.denied !== seen.denied) && Date.now() < by;) {
      await new Promise((r) => setTimeout(r, 200));
      counted = await fromMetrics();
    }
    expect(counted).toEqual(seen);
  });

  it('Fastify, full bucket: no window of w seconds exceeds q', async () => {
    const agent = await newAgent();
    const log: number[] = [];
    const app = Fastify();
    fastifies.push(app);
    await app.register(fastifyRateLimit, { agent, pools: [{ name: 'hfastify' }], graceMs: 0 });
    app.get('/', () => {
      log.push(agent.clock());
      return 'ok';
    });
    const replies = await hammer(await app.listen({ port: 0, host: '127.0.0.1' }), '/', HAMMER_MS);
    expect(replies.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    kept('fastify full', replies, 'hfastify', log);
  });

  it('node:http, full bucket, then a drained one: no window of w seconds exceeds q', async () => {
    const agent = await newAgent();
    const logs = { hnode: [] as number[], hdrained: [] as number[] };
    const limits = {
      hnode: createHttpLimit({ agent, pools: [{ name: 'hnode' }] }),
      hdrained: createHttpLimit({ agent, pools: [{ name: 'hdrained' }] }),
    };
    const server = createServer((req, res) => {
      const pool = req.url === '/drained' ? 'hdrained' : 'hnode';
      void limits[pool](req, res).then((admitted) => {
        if (!admitted) return;
        logs[pool].push(agent.clock());
        res.end('ok');
      });
    });
    servers.push(server);
    const base = await listen(server);
    kept('node full', await hammer(base, '/', HAMMER_MS), 'hnode', logs.hnode);

    // Another agent empties the pool and keeps what it took; then the server is hammered.
    const drainer = (await newAgent()).limiter('hdrained');
    while (await drainer.take(5, { timeoutMs: 300 }).catch(() => false));
    const status = await probe.status('hdrained', PREFIX);
    expect(status.levelTokens).toBeLessThan(5);
    kept('node drained', await hammer(base, '/drained', HAMMER_MS), 'hdrained', logs.hdrained);
  });

  it('a sliding-window pool: no window of w seconds exceeds q', async () => {
    const log: number[] = [];
    const base = await expressServer(await newAgent(), { pools: [{ name: 'hwindow' }], graceMs: 0 }, log);
    const replies = await hammer(base, '/', HAMMER_MS);
    kept('window', replies, 'hwindow', log);
  });

  it('a request that can never fit: 413 with its own problem type and no Retry-After', async () => {
    const log: number[] = [];
    const base = await expressServer(await newAgent(), { pools: [{ name: 'hcostly', cost: 50 }] }, log);
    const replies = [await get(base), await get(base)];
    for (const reply of replies) {
      expect(reply.status).toBe(413);
      expect(reply.headers.get('retry-after')).toBeNull();
      expect(JSON.parse(reply.body)).toMatchObject({ type: 'urn:tokenlease:problem:never-fits', status: 413, pool: 'hcostly' });
    }
    expect(log).toEqual([]);
  });

  it('key functions get req.user in Express and Fastify; a 2 KB key works; a route key is the pattern', async () => {
    const agent = await newAgent();
    interface WithUser {
      user?: { id: string };
    }
    const app = express();
    app.use((req: express.Request & WithUser, _res, next) => {
      const id = req.get('x-user');
      if (id !== undefined) req.user = { id };
      next();
    });
    app.get(
      '/me',
      createHttpLimit({
        agent,
        keySecret: SECRET,
        graceMs: 5000,
        pools: [{ name: 'user', key: (req: express.Request & WithUser) => req.user?.id }],
      }),
      (_q, s) => {
        s.send('ok');
      },
    );
    app.get(
      '/items/:id',
      createHttpLimit({ agent, keySecret: SECRET, graceMs: 5000, pools: [{ name: 'route', key: { route: true } }] }),
      (_q, s) => {
        s.send('ok');
      },
    );
    const server = createServer(app);
    servers.push(server);
    const base = await listen(server);
    expect((await get(base, '/me', { 'x-user': RAW_KEY })).status).toBe(200);
    expect((await get(base, '/me', { 'x-user': LONG_KEY })).status).toBe(200);
    expect((await get(base, '/me')).status).toBe(400);
    expect(agent.limiter(keyPoolName('user', RAW_KEY, SECRET)).stats().admittedTokens).toBe(1);
    expect(agent.limiter(keyPoolName('user', LONG_KEY, SECRET)).stats().admittedTokens).toBe(1);
    for (const id of ['1', '2', '3']) expect((await get(base, `/items/${id}`)).status).toBe(200);
    expect(agent.limiter(keyPoolName('route', '/items/:id', SECRET)).stats().admittedTokens).toBe(3);

    const fastify = Fastify();
    fastifies.push(fastify);
    fastify.addHook('onRequest', async (request: FastifyRequest & WithUser) => {
      const id = request.headers['x-user'];
      if (typeof id === 'string') request.user = { id };
      return Promise.resolve();
    });
    const fastAgent = await newAgent();
    await fastify.register(fastifyRateLimit, {
      agent: fastAgent,
      keySecret: SECRET,
      // Each key's first request waits for its new pool's first grant, however busy the machine.
      graceMs: 5000,
      pools: [{ name: 'user', key: async (request: FastifyRequest & WithUser) => Promise.resolve(request.user?.id) }],
    });
    fastify.get('/me', () => 'ok');
    const fastBase = await fastify.listen({ port: 0, host: '127.0.0.1' });
    expect((await get(fastBase, '/me', { 'x-user': RAW_KEY })).status).toBe(200);
    expect((await get(fastBase, '/me', { 'x-user': LONG_KEY })).status).toBe(200);
    expect(fastAgent.limiter(keyPoolName('user', RAW_KEY, SECRET)).stats().admittedTokens).toBe(1);
  });

  it('no raw key in a NATS subject, the coordinator log, its metrics, its status page or the pool listing; the hashed pools are there', async () => {
    // Renewals and the coordinator's debug lines of the keyed pools of the test above have had time to flow.
    await new Promise((r) => setTimeout(r, 500));
    const hashed = keyPoolName('user', RAW_KEY, SECRET);
    const page = await (await fetch(`${statusBase}/`)).text();
    const api = await (await fetch(`${statusBase}/api/status`)).text();
    const metrics = await (await fetch(`${statusBase}/metrics`)).text();
    const places = {
      subjects: [...subjects].join('\n'),
      log: `${coordinator.lines.join('\n')}\n${coordinator.stderr()}`,
      metrics,
      page: `${page}\n${api}`,
      'pool listings': await poolsListing(),
    };
    for (const [where, text] of Object.entries(places)) {
      expect(text.includes(RAW_KEY), `the raw key in ${where}`).toBe(false);
      expect(text.includes(LONG_KEY.slice(0, 40)), `the long key in ${where}`).toBe(false);
    }
    // Not vacuous: the hashed pool is where the raw key would have been.
    expect(places.subjects).toContain(hashed);
    expect(places.log).toContain(hashed);
    expect(places.page).toContain(hashed);
    expect(places['pool listings']).toContain(hashed);
  });
});
