/**
 * The packages install the way a user installs them: `npm pack` makes the
 * three tarballs (each built by its `prepack`), `npm install <tarballs>`
 * puts them into a fresh project with no workspace links (third-party
 * dependencies from the registry, or npm's cache), and that project imports
 * the agent and its HTTP middleware (without Express or Fastify: they are
 * optional peers), runs the coordinator's `bin` and admits through it over NATS.
 */
import { readdirSync, writeFileSync, existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { installInto, packWorkspaces } from '@tokenlease/harness/pack';
import { spawnNode, spawnProcess, stopAll } from '@tokenlease/harness/processes';

const PACKAGES = ['shared', 'agent', 'coordinator'] as const;
const S = 1000;

/** The user's program: connect, admit a few requests through pool `api`, print one JSON line. */
const APP = `
import { Agent, AgentError } from '@tokenlease/agent';
import { createHttpLimit } from '@tokenlease/agent/http';
import { fastifyRateLimit } from '@tokenlease/agent/fastify';
const [natsUrl, subjectPrefix] = process.argv.slice(2);
const agent = await Agent.connect({ natsUrl, subjectPrefix });
const api = agent.limiter('api');
let admitted = 0;
for (let i = 0; i < 5; i += 1) if (await api.take(1, { timeoutMs: 5000 })) admitted += 1;
const limits = api.limits;
await agent.close();
const middleware = typeof createHttpLimit === 'function' && typeof fastifyRateLimit === 'function';
console.log(JSON.stringify({ admitted, limits, middleware, errorClass: typeof AgentError }));
`;

describe('the packed tarballs', () => {
  let nats: NatsHandle;
  let app: string;
  const tarballs: string[] = [];

  beforeAll(async () => {
    nats = await provideNats();
    const dir = scratchDir();
    for (const { dir: name, tarball, paths } of await packWorkspaces(PACKAGES, join(dir, 'tarballs'))) {
      expect(paths, `${name}'s tarball`).toContain('dist/index.js');
      expect(paths, `${name}'s tarball`).toContain('dist/index.d.ts');
      expect(
        paths.filter((p) => p.startsWith('src/') || p.includes('.test.')),
        `${name}'s tarball holds sources or tests`,
      ).toEqual([]);
      tarballs.push(tarball);
    }
    app = join(dir, 'app');
    await installInto(app, tarballs);
    writeFileSync(join(app, 'main.mjs'), APP);
  }, 180 * S);

  afterAll(async () => {
    await stopAll();
    await nats?.stop();
  });

  it('install as real folders (no workspace links), with the coordinator and relay bins', () => {
    for (const name of PACKAGES) {
      const installed = join(app, 'node_modules', '@tokenlease', name);
      expect(realpathSync(installed), `${name} is linked, not installed`).toBe(installed);
    }
    expect(existsSync(join(app, 'node_modules', '.bin', 'tokenlease-coordinator'))).toBe(true);
    expect(existsSync(join(app, 'node_modules', '.bin', 'tokenlease-relay'))).toBe(true);
    expect(readdirSync(join(app, 'node_modules', '@tokenlease')).sort()).toEqual([...PACKAGES].sort());
  });

  it('run: the bin serves a pool, the relay bin relays it, and the imported agent admits through both', { timeout: 60 * S }, async () => {
    const prefix = `tlpacked${process.pid}`;
    const config = join(app, 'pools.json');
    writeFileSync(config, JSON.stringify({ subjectPrefix: prefix, pools: { api: { capacity: 20, refill: '20/s', leaseTtlMs: 500 } } }));
    const coordinator = spawnProcess('packed-coordinator', join(app, 'node_modules', '.bin', 'tokenlease-coordinator'), [
      '--config',
      config,
      '--nats',
      nats.url,
      '--memory',
    ]);
    await waitForEvent(coordinator, { event: 'serving' }, 15 * S);
    // The installed relay serves the same pool on a prefix of its own; the app admits through either.
    const relayConfig = join(app, 'relay.json');
    const relayPool = { capacity: 20, refill: '20/s', leaseTtlMs: 500 };
    writeFileSync(relayConfig, JSON.stringify({ upstreamPrefix: prefix, subjectPrefix: `${prefix}r`, pools: { api: relayPool } }));
    const relay = spawnProcess('packed-relay', join(app, 'node_modules', '.bin', 'tokenlease-relay'), [
      '--config',
      relayConfig,
      '--nats',
      nats.url,
    ]);
    await waitForEvent(relay, { event: 'relay-serving' }, 15 * S);
    for (const through of [prefix, `${prefix}r`]) {
      const user = spawnNode(`packed-app:${through}`, join(app, 'main.mjs'), [nats.url, through]);
      const { code } = await user.exited;
      expect(code, user.stderr()).toBe(0);
      const result = JSON.parse(user.lines.at(-1) ?? '{}') as { admitted: number; errorClass: string };
      expect(result, through).toEqual({
        admitted: 5,
        limits: { capacityTokens: 20, maxLeaseTokens: 2, refillTokens: 20, refillPeriodMs: 1000 },
        middleware: true,
        errorClass: 'function',
      });
    }
  });
});
