/**
 * Trace recording on a real Agent whose bus is a coordinator stand-in:
 * every take call is one line, once, in the trace format the sweep reads
 * (docs/trace-format.md); pools are chosen as asked; the file never passes
 * its size; an overflow stops the recording rather than leave a hole; bad
 * options are refused with one line; the middleware records each request
 * once, however long it waits, with keys only hashed.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Bus } from '@tokenlease/shared/nats';
import { Agent, type AgentEvent } from './agent.js';
import { grantOf, standInBus } from './bus.fixtures.js';
import { HttpLimit, type RequestView } from './http-limit.js';
import type { RecordingEvent } from './trace-recording.js';

/** A pool per name holding `tokens` in all, under one lease per pool as asked, never refilled (a short grant says come back in a minute). */
function poolsBus(tokens: number): Bus {
  const left = new Map<string, number>();
  return standInBus((_subject, req) => {
    if (req.op === 'return') return { v: 2, kind: 'receipt', seq: req.seq, tokensReturned: req.tokensLeft };
    if (req.op !== 'acquire') throw new Error('only acquires and returns here');
    const granted = Math.min(left.get(req.pool) ?? tokens, req.tokensWanted);
    left.set(req.pool, (left.get(req.pool) ?? tokens) - granted);
    const leaseId = `L-${req.pool}`;
    const held = granted + (req.leaseId === leaseId ? req.tokensLeft : 0);
    return grantOf(req.seq, leaseId, granted, held, { retryAfterMs: granted < req.tokensWanted ? 60_000 : 0 });
  });
}

interface Line {
  readonly tMs: number;
  readonly instance: string;
  readonly cost: number;
  readonly key: string;
}

function linesOf(path: string): Line[] {
  const text = readFileSync(path, 'utf8');
  if (text === '') return [];
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Line);
}

function tracePath(): string {
  return join(mkdtempSync(join(tmpdir(), 'tl-record-')), 'trace.jsonl');
}

async function agentWith(record: Parameters<Agent['record']>[0], events: AgentEvent[] = [], tokens = 1000): Promise<Agent> {
  return Agent.connect({ bus: poolsBus(tokens), keeper: { initialTokens: 10 }, record, onEvent: (e) => events.push(e) });
}

describe('trace recording', () => {
  it('writes one line per take call of a chosen pool, in the trace format, times never decreasing', async () => {
    const path = tracePath();
    const startedMs = Date.now();
    const agent = await agentWith({ path, pools: ['api', 'tenant:*'], instance: 'svc-1' });
    const api = agent.limiter('api');
    const tenantA = agent.limiter('tenant:AAA');
    const tenantB = agent.limiter('tenant:BBB');
    const other = agent.limiter('other');
    expect(await api.fits(1)).toBe(true); // a probe: not an arrival
    api.tryTake();
    api.tryTake(3);
    api.tryTakeReceipt(2);
    api.tryTakeAt(1, agent.clock() - 5_000_000); // a caller's time from 5 s ago: written no earlier than the line before
    expect(await api.take(1)).toBe(true);
    expect(await tenantA.takeReceipt(4)).toBeGreaterThan(0);
    other.tryTake();
    await other.take(1);
    const both = [
      { limiter: api, cost: 1 },
      { limiter: tenantB, cost: 2 },
    ];
    agent.tryTakeAll(both);
    expect(await agent.takeAll(both)).toBe(true);
    expect(() => api.tryTake(0)).toThrow(); // a bad cost is no arrival
    await expect(api.take(-1)).rejects.toThrow();
    expect(agent.recordingStats()).toMatchObject({ path, stopped: null, pools: 3 });
    await agent.close();

    const lines = linesOf(path);
    expect(lines.map((l) => [l.key, l.cost])).toEqual([
      ['api', 1],
      ['api', 3],
      ['api', 2],
      ['api', 1],
      ['api', 1],
      ['tenant:AAA', 4],
      ['api', 1],
      ['tenant:BBB', 2],
      ['api', 1],
      ['tenant:BBB', 2],
    ]);
    for (const line of lines) expect(Object.keys(line)).toEqual(['tMs', 'instance', 'cost', 'key']);
    expect(new Set(lines.map((l) => l.instance))).toEqual(new Set(['svc-1']));
    for (let i = 1; i < lines.length; i += 1) expect((lines[i] as Line).tMs).toBeGreaterThanOrEqual((lines[i - 1] as Line).tMs);
    expect((lines[0] as Line).tMs).toBeGreaterThanOrEqual(startedMs);
    expect((lines[lines.length - 1] as Line).tMs).toBeLessThanOrEqual(Date.now() + 1);
    expect(agent.recordingStats()).toMatchObject({ writtenArrivals: 10, pendingArrivals: 0, stopped: 'stopped' });
  });

  it('appends to a file and never lets it pass maxBytes, counting what it held: the last write is cut at a whole line', async () => {
    const path = tracePath();
    const before = '{"tMs":0,"instance":"earlier","cost":1,"key":"api"}\n';
    writeFileSync(path, before);
    const events: AgentEvent[] = [];
    const maxBytes = 1000;
    const agent = await agentWith({ path, maxBytes, flushMs: 10 }, events);
    const api = agent.limiter('api');
    for (let i = 0; i < 100; i += 1) api.tryTake();
    await agent.close();
    const text = readFileSync(path, 'utf8');
    expect(text.startsWith(before)).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxBytes);
    expect(Buffer.byteLength(text)).toBeGreaterThan(maxBytes - 100); // filled up to the last line that fits
    const lines = linesOf(path);
    expect(lines.length).toBeGreaterThan(5);
    const stopped = events.filter((e): e is RecordingEvent => e.type === 'recording-stopped');
    expect(stopped.map((e) => e.reason)).toEqual(['full']);
    expect(stopped[0]?.message).toContain(`limit of ${maxBytes} bytes`);
    expect(agent.recordingStats()).toMatchObject({ writtenArrivals: lines.length - 1, stopped: 'full' });
  });

  it('stops whole when the buffer overflows between two writes, and writes what it held', async () => {
    const path = tracePath();
    const events: AgentEvent[] = [];
    const agent = await agentWith({ path, bufferArrivals: 4, flushMs: 60_000 }, events);
    const api = agent.limiter('api');
    for (let i = 0; i < 6; i += 1) api.tryTake();
    await agent.close();
    expect(linesOf(path)).toHaveLength(4);
    expect(events.filter((e) => e.type === 'recording-stopped').map((e) => e.reason)).toEqual(['overflow']);
  });

  it('samples pools by name and records nothing of the others; stopRecording puts the take path back to no recording', async () => {
    const path = tracePath();
    const agent = await agentWith({ path, pools: ['k:*'], sample: 0.5 });
    const limiters = Array.from({ length: 40 }, (_, i) => agent.limiter(`k:${i}`));
    for (const limiter of limiters) limiter.tryTake();
    await agent.stopRecording();
    for (const limiter of limiters) expect(limiter.slot.arrivals).toBeNull();
    for (const limiter of limiters) limiter.tryTake();
    const keys = linesOf(path).map((l) => l.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBeGreaterThan(5);
    expect(keys.length).toBeLessThan(35);
    // A second recording of the same pools samples the same ones.
    const again = tracePath();
    agent.record({ path: again, pools: ['k:*'], sample: 0.5 });
    for (const limiter of limiters) limiter.tryTake();
    await agent.close();
    expect(linesOf(again).map((l) => l.key)).toEqual(keys);
  });

  it('refuses bad options with one line each, and a second recording while one runs', async () => {
    const agent = await Agent.connect({ bus: poolsBus(10) });
    try {
      const bad: Array<[unknown, RegExp]> = [
        [{ path: '' }, /path must name a file/],
        [{ path: tracePath(), sample: 0 }, /sample must be in \(0, 1\]/],
        [{ path: tracePath(), pools: [] }, /pools must be a non-empty list/],
        [{ path: tracePath(), maxBytes: 0 }, /maxBytes must be a whole number/],
        [{ path: tracePath(), flushMs: 1.5 }, /flushMs must be a whole number/],
        [{ path: tracePath(), instance: 'x'.repeat(257) }, /instance must be 1 to 256 characters/],
        [{ path: join(tracePath(), 'no', 'such', 'dir') }, /cannot open .*dir for appending \(ENOENT\)/],
      ];
      for (const [options, message] of bad) {
        expect(() => agent.record(options as Parameters<Agent['record']>[0])).toThrow(message);
        expect(agent.recordingStats()).toBeNull();
      }
      agent.record({ path: tracePath() });
      expect(() => agent.record({ path: tracePath() })).toThrow(/records to .* already/);
    } finally {
      await agent.close();
    }
    expect(() => agent.record({ path: tracePath() })).toThrow(/closed/);
  });

  it('the middleware records each charged request once, however long it waits, with keys only hashed', async () => {
    const path = tracePath();
    // 5 tokens a pool: the later requests wait (waitMs) and are denied.
    const agent = await Agent.connect({ bus: poolsBus(5), keeper: { initialTokens: 5 } });
    const secret = 'a key secret of 16 bytes or more';
    const limit = new HttpLimit<null>({
      agent,
      pools: [{ name: 'api' }, { name: 'tenant', key: { header: 'x-api-key' } }],
      keySecret: secret,
      waitMs: 30, // the denied ones wait: a try, a wait in line, a last try each
      record: { path, instance: 'web-1' },
    });
    const request = (key: string | undefined): RequestView<null> => ({
      header: (name) => (name === 'x-api-key' ? key : undefined),
      ip: '127.0.0.1',
      route: '/',
      native: null,
    });
    const verdicts: boolean[] = [];
    for (let i = 0; i < 8; i += 1) verdicts.push((await limit.check(request('raw-key-of-acme'))).admitted);
    await limit.check(request(undefined)); // no key: refused before any charge, no arrival
    expect(() => new HttpLimit<null>({ agent, pools: [{ name: 'x' }], record: { path: tracePath() } })).toThrow(/already/);
    await agent.close();
    expect(verdicts.filter(Boolean)).toHaveLength(5);
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain('raw-key-of-acme');
    const lines = linesOf(path);
    expect(lines).toHaveLength(16);
    const keys = new Set(lines.map((l) => l.key));
    expect(keys.size).toBe(2);
    expect(keys.has('api')).toBe(true);
    const tenant = [...keys].find((k) => k !== 'api') as string;
    expect(tenant).toMatch(/^tenant:[A-Za-z0-9_-]{22}$/);
    expect(agent.recordingStats()?.writtenArrivals).toBe(16);
  });
});
