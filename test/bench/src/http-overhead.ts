/**
 * The HTTP middleware's cost per request, for `npm run bench`, against a
 * bare handler, on a pool whose refill is never the limit:
 * - in process: the middleware called with a request and a response that
 *   write nothing, µs per request (median over batches), against a handler
 *   that only answers;
 * - over loopback HTTP: a node:http server with and without the
 *   middleware, 16 keep-alive connections, two runs of 1.5 s each after a
 *   warm-up, the better kept: requests per second and the difference in
 *   mean µs per request.
 */
import { Agent as HttpAgent, createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from '@tokenlease/agent';
import { createHttpLimit } from '@tokenlease/agent/http';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';

const CONNECTIONS = 16;
const WARM_MS = 300;
const BATCHES = 200;
const BATCH = 200;

export interface HttpOverheadFigures {
  readonly middlewareUsPerRequest: number;
  readonly bareUsPerRequest: number;
  readonly httpBareRequestsPerSecond: number;
  readonly httpLimitedRequestsPerSecond: number;
  readonly httpOverheadUsPerRequest: number;
}

/** A request and a response that the middleware can read and write, doing no I/O. */
function fakes(): { req: IncomingMessage; res: ServerResponse } {
  const req = { url: '/', headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
  const res = { headersSent: false, statusCode: 200, setHeader: () => res, end: () => res } as unknown as ServerResponse;
  return { req, res };
}

async function inProcess(handle: (req: IncomingMessage, res: ServerResponse) => Promise<unknown>): Promise<number> {
  const { req, res } = fakes();
  for (let i = 0; i < BATCH * 10; i += 1) await handle(req, res); // warm up
  const perRequestUs: number[] = [];
  for (let b = 0; b < BATCHES; b += 1) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i += 1) await handle(req, res);
    perRequestUs.push(Number(process.hrtime.bigint() - start) / 1000 / BATCH);
  }
  perRequestUs.sort((x, y) => x - y);
  return Math.round((perRequestUs[Math.floor(perRequestUs.length / 2)] as number) * 100) / 100;
}

/** load — `CONNECTIONS` keep-alive clients asking `url` in a loop for `ms`; requests per second. */
async function load(url: string, ms: number): Promise<number> {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: CONNECTIONS });
  const deadline = performance.now() + ms;
  let done = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      request(url, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      })
        .on('error', reject)
        .end();
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        await one();
        done += 1;
      }
    }),
  );
  agent.destroy();
  return Math.round(done / ((performance.now() - started) / 1000));
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; close(): void }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => server.close() };
}

/** httpOverheadFigures — the figures above, on a coordinator of its own reached at `natsUrl`. */
export async function httpOverheadFigures(natsUrl: string, httpMs: number): Promise<HttpOverheadFigures> {
  const prefix = `tlbenchhttp${process.pid}`;
  const pool = { capacity: 1_000_000_000, refill: '1000000000/s', leaseTtlMs: 2000, maxLeaseTokens: 100_000_000, minGrantTokens: 1 };
  await startCoordinator(natsUrl, writeConfig(scratchDir(), { subjectPrefix: prefix, pools: { http: pool } }));
  const agent = await Agent.connect({ natsUrl, subjectPrefix: prefix, keeper: { initialTokens: 50_000_000 } });
  try {
    const limit = createHttpLimit({ agent, pools: [{ name: 'http' }], graceMs: 5000 });
    const limiter = agent.limiter('http');
    while (limiter.availableTokens < 10_000_000) await limiter.take(1, { timeoutMs: 5000 });
    const bare = (_req: IncomingMessage, res: ServerResponse): Promise<void> => {
      res.end('ok');
      return Promise.resolve();
    };
    const limited = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
      if (await limit(req, res)) res.end('ok');
    };
    const bareUs = await inProcess(bare);
    const limitedUs = await inProcess(limited);
    const bareServer = await serve((req, res) => void bare(req, res));
    const limitedServer = await serve((req, res) => void limited(req, res));
    // Warm both up, then measure each twice, alternating, and keep the better run: the machine is shared.
    await load(bareServer.url, Math.min(WARM_MS, httpMs));
    await load(limitedServer.url, Math.min(WARM_MS, httpMs));
    let bareRps = 0;
    let limitedRps = 0;
    for (let run = 0; run < 2; run += 1) {
      bareRps = Math.max(bareRps, await load(bareServer.url, httpMs));
      limitedRps = Math.max(limitedRps, await load(limitedServer.url, httpMs));
    }
    bareServer.close();
    limitedServer.close();
    return {
      middlewareUsPerRequest: limitedUs,
      bareUsPerRequest: bareUs,
      httpBareRequestsPerSecond: bareRps,
      httpLimitedRequestsPerSecond: limitedRps,
      httpOverheadUsPerRequest: Math.round((1e6 / limitedRps - 1e6 / bareRps) * 10) / 10,
    };
  } finally {
    await agent.close();
  }
}
