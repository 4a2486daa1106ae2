/**
 * Observe, record, plan: two Express services limited by a real coordinator
 * over real NATS, each recording its requests with the middleware's
 * `record` option (a global pool and a per-tenant pool keyed by an API
 * key), are hammered for 3 s; then the sweep CLI replays both recorded
 * files together and prints its rows and recommendation. Checked: every
 * request the middleware charged is one line, once, in its service's file
 * (waits and retries not counted again); no raw API key is in a file; the
 * sweep's rows for chunk and rate leases and both baselines, none over the
 * envelope; its central baseline admits exactly what an exact token bucket
 * replayed over the merged files admits, recomputed here apart from the
 * sweep's code; its text output ends with a recommendation.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { Agent } from '@tokenlease/agent';
import { createHttpLimit } from '@tokenlease/agent/http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, listen } from '../http-client.js';
import { scratchDir, startCoordinator, writeConfig } from '@tokenlease/harness/fleet';
import { provideNats, type NatsHandle } from '@tokenlease/harness/nats';
import { toolScript } from '@tokenlease/harness/paths';
import { stopAll } from '@tokenlease/harness/processes';

const PREFIX = `tlrec${process.pid}`;
const SECRET = 'the trace-recording test key secret';
const CAPACITY_TOKENS = 30;
const REFILL_PER_SECOND = 20;
const POOLS = { recapi: { capacity: CAPACITY_TOKENS, refill: `${REFILL_PER_SECOND}/s`, leaseTtlMs: 1000, maxLeaseTokens: 5 } };
const TEMPLATES = { 'rectenant:*': { capacity: 10, refill: '5/s', leaseTtlMs: 1000 } };
/** The clients hammer at least this long, ms … */
const HAMMER_MS = 3000;
/** … and on, until each service served more than HAMMER_REQUESTS, for at most this long (a busy CI run served 96 in 3 s). */
const HAMMER_MS_MAX = 20_000;
const HAMMER_REQUESTS = 100;
const API_KEYS = ['acme-raw-api-key-91c2', 'globex-raw-api-key-5d7e', 'initech-raw-api-key-0a4f'];

interface Line {
  readonly tMs: number;
  readonly instance: string;
  readonly cost: number;
  readonly key: string;
}

interface Row {
  readonly strategy: string;
  readonly admitted: number;
  readonly overAdmitted: number;
}

function linesOf(path: string): Line[] {
  const text = readFileSync(path, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Line);
}

/** exactBucketTokens — tokens an exact bucket (capacity B, refill r, full at the first arrival) admits over `lines` in order; integer units of 1/10^6 token. */
function exactBucketTokens(lines: readonly Line[]): number {
  const unitsPerToken = 1_000_000; // refill per second: units per µs = REFILL_PER_SECOND
  const fullUnits = CAPACITY_TOKENS * unitsPerToken;
  let levelUnits = fullUnits;
  let lastUs = Math.round((lines[0]?.tMs ?? 0) * 1000);
  let tokens = 0;
  for (const line of lines) {
    const tUs = Math.round(line.tMs * 1000);
    levelUnits = Math.min(fullUnits, levelUnits + (tUs - lastUs) * REFILL_PER_SECOND);
    lastUs = tUs;
    if (levelUnits < line.cost * unitsPerToken) continue;
    levelUnits -= line.cost * unitsPerToken;
    tokens += line.cost;
  }
  return tokens;
}

describe('a trace recorded by the middleware under load, replayed by the sweep', () => {
  let nats: NatsHandle;
  const dir = scratchDir();
  const files = [join(dir, 'web-1.jsonl'), join(dir, 'web-2.jsonl')];
  const agents: Agent[] = [];
  const servers: Server[] = [];
  const served = [0, 0];

  beforeAll(async () => {
    nats = await provideNats();
    await startCoordinator(nats.url, writeConfig(scratchDir(), { subjectPrefix: PREFIX, pools: POOLS, templates: TEMPLATES }));
    const bases: string[] = [];
    for (const [i, path] of files.entries()) {
      const agent = await Agent.connect({ natsUrl: nats.url, subjectPrefix: PREFIX });
      agents.push(agent);
      const app = express();
      app.use(
        createHttpLimit({
          agent,
          pools: [{ name: 'recapi' }, { name: 'rectenant', key: { header: 'x-api-key' } }],
          keySecret: SECRET,
          waitMs: 20,
          record: { path, instance: `web-${i + 1}` },
        }),
      );
      app.get('/', (_req, res) => void res.send('ok'));
      const server = app.listen(0, '127.0.0.1');
      servers.push(server);
      bases.push(await listen(server));
    }
    const startedMs = Date.now();
    const going = (): boolean =>
      Date.now() < startedMs + HAMMER_MS || (Math.min(...served) <= HAMMER_REQUESTS && Date.now() < startedMs + HAMMER_MS_MAX);
    await Promise.all(
      Array.from({ length: 6 }, async (_, worker) => {
        for (let n = 0; going(); n += 1) {
          const server = (worker + n) % 2;
          const reply = await get(bases[server] as string, '/', { 'x-api-key': API_KEYS[(worker + n) % 3] as string });
          expect([200, 429]).toContain(reply.status);
          served[server] = (served[server] as number) + 1;
        }
      }),
    );
    // close() writes what the recordings hold and closes the files.
    for (const agent of agents) await agent.close();
  }, 60_000);

  afterAll(async () => {
    for (const server of servers) server.close();
    await stopAll();
    await nats?.stop();
  });

  it('writes every charged request once, in its service file, under its hashed pool names only', () => {
    for (const [i, path] of files.entries()) {
      const lines = linesOf(path);
      const text = readFileSync(path, 'utf8');
      for (const key of API_KEYS) expect(text).not.toContain(key);
      // Two pools charged per request: a line for each.
      expect(lines.length).toBe(2 * (served[i] as number));
      expect(new Set(lines.map((line) => line.instance))).toEqual(new Set([`web-${i + 1}`]));
      const keys = new Set(lines.map((line) => line.key));
      expect(keys.size).toBe(1 + API_KEYS.length);
      for (const key of keys) expect(key === 'recapi' || /^rectenant:[A-Za-z0-9_-]{22}$/.test(key)).toBe(true);
      for (let j = 1; j < lines.length; j += 1) expect((lines[j] as Line).tMs).toBeGreaterThanOrEqual((lines[j - 1] as Line).tMs);
      expect(agents[i]?.recordingStats()).toMatchObject({ writtenArrivals: lines.length, stopped: 'stopped' });
    }
    expect(Math.min(...served)).toBeGreaterThan(HAMMER_REQUESTS);
  });

  it('is replayed by the sweep: rows for chunk and rate leases and both baselines, none over, the central one exact', () => {
    const argv = [
      toolScript('sweep'),
      ...files.flatMap((path) => ['--trace', path]),
      '--key',
      'recapi',
      '--capacity',
      String(CAPACITY_TOKENS),
      '--refill',
      `${REFILL_PER_SECOND}/s`,
      '--lease-sizes',
      '1,5',
      '--ttls',
      '1s',
      '--refreshes',
      '500ms',
      '--reports',
      '0',
      // The arrivals are as bursty as the machine that served them made them: on a busy CI run no lease setting
      // reached the default 97% of the ideal (the best 95.5%). What is checked is that a recommendation is made, and
      // its form, for a target a lease setting can reach.
      '--target-utilization',
      '0.9',
      '--seed',
      '1',
    ];
    const output = JSON.parse(
      execFileSync(process.execPath, [...argv, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    ) as { parameters: { agents: number }; rows: Row[]; recommendation: unknown };
    expect(output.parameters.agents).toBe(2);
    expect(output.rows.map((row) => row.strategy)).toEqual(['lease', 'lease', 'rate', 'central', 'local']);
    expect(output.rows.map((row) => row.overAdmitted)).toEqual([0, 0, 0, 0, 0]);
    const merged = files
      .flatMap((path) => linesOf(path))
      .filter((line) => line.key === 'recapi')
      .sort((a, b) => a.tMs - b.tMs);
    const exact = exactBucketTokens(merged);
    expect(exact, 'the load must overrun the limit to test anything').toBeLessThan(merged.length / 2);
    expect(output.rows.find((row) => row.strategy === 'central')?.admitted).toBe(exact);
    expect(output.recommendation).toBeDefined();

    const text = execFileSync(process.execPath, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    console.log(
      `trace-recording: served ${served.join(' + ')} requests, ${merged.length} recorded arrivals at recapi; ` +
        `central baseline ${String(output.rows.find((row) => row.strategy === 'central')?.admitted)} = exact bucket ${exact}; ` +
        `${/^Recommendation: [^.]*\./m.exec(text)?.[0] ?? 'no recommendation'}`,
    );
    expect(text).toMatch(/^Recommendation: (maxLeaseTokens: \d+|leaseMode: rate), leaseTtlMs: \d+/m);
  });
});
