/**
 * The packages install the way a user installs them, packed once for both
 * kinds of user: `npm pack` makes every tarball (each built by its
 * `prepack`); the three product tarballs go into a fresh project of their
 * own, with no workspace links (third-party dependencies from the registry,
 * or npm's cache), which imports the agent and its HTTP middleware (without
 * Express or Fastify: they are optional peers), runs the coordinator's and
 * the relay's bins and admits through both over NATS; and the tools (the
 * simulator, the sweep and the chaos suite, with what they depend on) go
 * into another, where each bin runs, the chaos suite against real
 * processes it starts from the installed harness and coordinator.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '@tokenlease/harness/fleet';
import { waitForEvent } from '@tokenlease/harness/log-events';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { installInto, packWorkspaces } from '@tokenlease/harness/pack';
import { spawnNode, spawnProcess, stopAll } from '@tokenlease/harness/processes';

const PACKAGES = ['shared', 'agent', 'coordinator'] as const;
const TOOLS = ['test/harness', 'test/sim', 'test/sweep', 'test/chaos'];
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
  /** The product's user: the three product tarballs alone. */
  let app: string;
  /** The tools' user: the tool tarballs with the product's. */
  let toolsApp: string;

  beforeAll(async () => {
    nats = await provideNats();
    const dir = scratchDir();
    const packed = await packWorkspaces([...PACKAGES, ...TOOLS], join(dir, 'tarballs'));
    for (const { dir: name, paths } of packed) {
      expect(
        paths.filter((p) => p.startsWith('src/') || p.includes('.test.') || p.includes('.fixtures.') || p.endsWith('.map')),
        `${name}'s tarball holds sources, tests or source maps`,
      ).toEqual([]);
      expect(paths, `${name}'s tarball holds the build information`).not.toContain('dist/.tsbuildinfo');
    }
    const product = packed.filter((p) => (PACKAGES as readonly string[]).includes(p.dir));
    for (const { dir: name, paths } of product) {
      expect(paths, `${name}'s tarball`).toContain('dist/index.js');
      expect(paths, `${name}'s tarball`).toContain('dist/index.d.ts');
    }
    // Every tarball, the tools' too, says what it is and where it comes from, as `npm view` would show it.
    for (const { dir: name, paths, tarball } of packed) {
      expect(paths, `${name}'s tarball`).toContain('README.md');
      expect(paths, `${name}'s tarball`).toContain('LICENSE');
      const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<
        string,
        unknown
      >;
      expect(manifest, `${name}'s package.json`).toMatchObject({
        license: 'Apache-2.0',
        homepage: expect.stringMatching(/^https:\/\//) as unknown,
        repository: { type: 'git', url: expect.stringMatching(/^git\+https:\/\/.*\.git$/) as unknown, directory: name },
        bugs: { url: expect.stringMatching(/^https:\/\//) as unknown },
      });
      expect((manifest['keywords'] as unknown[] | undefined)?.length ?? 0, `${name}'s keywords`).toBeGreaterThan(0);
    }
    app = join(dir, 'app');
    toolsApp = join(dir, 'tools-app');
    await installInto(
      app,
      product.map((p) => p.tarball),
    );
    await installInto(
      toolsApp,
      packed.map((p) => p.tarball),
    );
    writeFileSync(join(app, 'main.mjs'), APP);
  }, 300 * S);

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
    for (const name of PACKAGES) {
      const manifest = JSON.parse(readFileSync(join(app, 'node_modules', '@tokenlease', name, 'package.json'), 'utf8')) as {
        license?: string;
        keywords?: string[];
      };
      expect(manifest.license, name).toBe('Apache-2.0');
      expect(manifest.keywords, name).toContain('rate-limit');
    }
  });

  it('the installed bins say their version', async () => {
    const { version } = JSON.parse(readFileSync(join(app, 'node_modules', '@tokenlease', 'coordinator', 'package.json'), 'utf8')) as {
      version: string;
    };
    for (const bin of ['tokenlease-coordinator', 'tokenlease-relay', 'tokenlease']) {
      const child = spawnProcess(bin, join(app, 'node_modules', '.bin', bin), ['--version']);
      expect((await child.exited).code, child.stderr()).toBe(0);
      expect(child.lines).toEqual([`${bin} ${version}`]);
    }
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
        limits: { capacityTokens: 20, maxLeaseTokens: 2, refillTokens: 20, refillPeriodMs: 1000, allowanceTokens: 0, window: false },
        middleware: true,
        errorClass: 'function',
      });
    }
  });

  /** runBin — an installed tool's exit code, stdout lines and stderr, from the tools' project folder. */
  async function runBin(bin: string, args: readonly string[]): Promise<{ code: number | null; lines: string[]; stderr: string }> {
    const child = spawnProcess(bin, join(toolsApp, 'node_modules', '.bin', bin), args);
    const { code } = await child.exited;
    return { code, lines: child.lines, stderr: child.stderr() };
  }

  it('install the tools as real folders, each with its bin', () => {
    for (const name of ['harness', 'sim', 'sweep', 'chaos']) {
      const installed = join(toolsApp, 'node_modules', '@tokenlease', name);
      expect(realpathSync(installed), `${name} is linked, not installed`).toBe(installed);
    }
    for (const bin of ['tokenlease-sim', 'tokenlease-sweep', 'tokenlease-chaos'])
      expect(realpathSync(join(toolsApp, 'node_modules', '.bin', bin))).toContain(join(toolsApp, 'node_modules', '@tokenlease'));
  });

  it('tokenlease-sim runs scenarios and finds no violation', { timeout: 120 * S }, async () => {
    const { code, lines, stderr } = await runBin('tokenlease-sim', ['--scenarios', '3', '--seed', '5', '--duration', '5s']);
    expect(code, stderr).toBe(0);
    expect(lines.join('\n')).toMatch(/; 0 violations$/m);
  });

  it('tokenlease-sweep prints its rows (two settings, two baselines) as JSON, none over the envelope', { timeout: 120 * S }, async () => {
    const { code, lines, stderr } = await runBin('tokenlease-sweep', [
      ...['--agents', '4', '--capacity', '50', '--refill', '100/s', '--lease-sizes', '5,10', '--ttls', '1s'],
      ...['--lease-modes', 'chunk', '--reports', '0', '--duration', '5s', '--seed', '7', '--json'],
    ]);
    expect(code, stderr).toBe(0);
    const report = JSON.parse(lines.join('\n')) as { rows: Array<{ strategy: string; leaseSize: number | null; overAdmitted: number }> };
    expect(report.rows).toHaveLength(4);
    expect(report.rows.filter((r) => r.strategy === 'lease').map((r) => r.leaseSize)).toEqual([5, 10]);
    expect(report.rows.filter((r) => r.strategy === 'lease').map((r) => r.overAdmitted)).toEqual([0, 0]);
  });

  it('tokenlease-chaos runs a scenario against real processes and verifies its fault', { timeout: 120 * S }, async () => {
    const { code, lines, stderr } = await runBin('tokenlease-chaos', ['--short', '--only', 'kill-agents', '--seed', '7', '--json']);
    expect(code, stderr).toBe(0);
    const rows = JSON.parse(lines.join('\n')) as Array<{ scenario: string; faultVerified: boolean; envelopeViolations: number }>;
    expect(rows.map((r) => [r.scenario, r.faultVerified, r.envelopeViolations])).toEqual([['kill-agents', true, 0]]);
  });
});
