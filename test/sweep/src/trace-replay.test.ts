/**
 * A recorded trace replayed end to end through the CLI (`--trace FILE
 * --json`): a seeded bursty trace of 3 instances and 2,000 arrivals gives
 * rows for chunk and rate leases and both baselines, none over the envelope,
 * and the central baseline admits exactly what an exact token bucket
 * (capacity B, refill r, full at time 0) admits replayed over the same
 * arrivals, recomputed here in integer arithmetic apart from the sweep's code;
 * with `--key K`, the same over that key's arrivals alone; split into one
 * file per instance with wall-clock times, the same again; with `--by-key`,
 * each key's denials are those of its own exact bucket, recomputed the same
 * way. An nginx access log with raw keys replays under the middleware's key
 * names, and no raw key reaches stdout, stderr, the JSON or the HTML.
 * The CLI is the built one (dist/main.js; `turbo run test` builds first).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashedKeyName } from '@tokenlease/shared/key-hash';
import { describe, expect, it } from 'vitest';

const SEED = Number(process.env['SEED'] ?? 35);
const MAIN = resolve(dirname(fileURLToPath(import.meta.url)), '../dist/main.js');
const CAPACITY_TOKENS = 50;
const REFILL_TOKENS = 100;
const REFILL_PERIOD_MS = 1000;

interface Line {
  readonly tMs: number;
  readonly instance: string;
  readonly cost: number;
  readonly key: string;
}

/** burstyTrace — 2,000 arrivals of 3 instances: bursts of 400 a few ms apart, 1.5 s of silence between. */
function burstyTrace(seed: number): Line[] {
  let state = seed >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
  const lines: Line[] = [];
  let tMs = 0;
  for (let i = 0; i < 2000; i += 1) {
    tMs += i > 0 && i % 400 === 0 ? 1500 : Math.floor(next() * 3);
    lines.push({ tMs, instance: `svc-${Math.floor(next() * 3)}`, cost: 1 + Math.floor(next() * 3), key: i % 3 === 0 ? 'k-a' : 'k-b' });
  }
  return lines;
}

/**
 * exactBucketAdmits — requests an exact bucket, full at `startMs` (default
 * 0), admits: level in units of 1/(period µs) token, all integers.
 */
function exactBucketAdmits(
  lines: readonly Line[],
  startMs = 0,
  capacityTokens = CAPACITY_TOKENS,
  refillTokens = REFILL_TOKENS,
): { count: number; tokens: number } {
  const unitsPerToken = REFILL_PERIOD_MS * 1000;
  const fullUnits = capacityTokens * unitsPerToken;
  let levelUnits = fullUnits;
  let lastUs = startMs * 1000;
  let count = 0;
  let tokens = 0;
  for (const line of lines) {
    const tUs = line.tMs * 1000;
    levelUnits = Math.min(fullUnits, levelUnits + (tUs - lastUs) * refillTokens);
    lastUs = tUs;
    if (levelUnits < line.cost * unitsPerToken) continue;
    levelUnits -= line.cost * unitsPerToken;
    count += 1;
    tokens += line.cost;
  }
  return { count, tokens };
}

/** run — the CLI on `argv` with `env` over a clean environment (no key secret unless given): its status and outputs. */
function run(argv: readonly string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const { TOKENLEASE_KEY_SECRET: _unused, ...clean } = process.env;
  const result = spawnSync(process.execPath, [MAIN, ...argv], { encoding: 'utf8', env: { ...clean, ...env } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface KeyRow {
  readonly key: string;
  readonly arrivals: number;
  readonly admittedCount: number;
  readonly deniedCount: number;
}

interface ByKey {
  readonly keys: number;
  readonly limits: readonly { capacityTokens: number; keysLimited: number; deniedCount: number; top: KeyRow[] }[];
}

interface Row {
  readonly strategy: string;
  readonly admitted: number;
  readonly denialRate: number;
  readonly overAdmitted: number;
  readonly roundTripsPer1k: number;
}

describe(`--trace FILE --json (SEED=${SEED})`, () => {
  const lines = burstyTrace(SEED);
  const path = join(mkdtempSync(join(tmpdir(), 'trace-replay-')), 'bursty.jsonl');
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  const argv = ['--trace', path, '--capacity', String(CAPACITY_TOKENS), '--refill', `${REFILL_TOKENS}/${REFILL_PERIOD_MS}ms`];
  const settings = ['--lease-sizes', '5,10', '--ttls', '1s', '--refreshes', '500ms', '--reports', '0', '--seed', '1', '--json'];
  const output = JSON.parse(
    execFileSync(process.execPath, [MAIN, ...argv, ...settings], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
  ) as {
    parameters: { agents: number; durationMs: number; workload: string };
    rows: Row[];
    recommendation: unknown;
  };

  it('runs one agent per instance over the trace span, with rows for chunk and rate leases and both baselines', () => {
    expect(output.parameters).toMatchObject({ agents: 3, durationMs: (lines.at(-1)?.tMs ?? 0) + 1, workload: `trace ${path}` });
    expect(output.rows.map((row) => row.strategy)).toEqual(['lease', 'lease', 'rate', 'central', 'local']);
    expect(output.recommendation).toBeDefined();
  });

  it('never admits over the envelope on any row', () => {
    expect(output.rows.map((row) => row.overAdmitted)).toEqual([0, 0, 0, 0, 0]);
  });

  it('admits on the central baseline exactly what an exact bucket replayed over the trace admits', () => {
    const central = output.rows.find((row) => row.strategy === 'central');
    const bucket = exactBucketAdmits(lines);
    expect(bucket.count, 'the trace must overload the bucket to test anything').toBeLessThan(lines.length / 2);
    expect(central?.admitted).toBe(bucket.tokens);
    expect(central?.denialRate).toBeCloseTo((lines.length - bucket.count) / lines.length, 9);
  });

  it("replays one key alone with --key: its central baseline is the exact bucket over that key's arrivals", () => {
    const keyed = JSON.parse(
      execFileSync(process.execPath, [MAIN, ...argv, '--key', 'k-a', ...settings], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    ) as { parameters: { workload: string }; rows: Row[] };
    const ofKey = lines.filter((line) => line.key === 'k-a');
    expect(keyed.parameters.workload).toBe(`trace ${path} key k-a`);
    expect(keyed.rows.map((row) => row.overAdmitted)).toEqual([0, 0, 0, 0, 0]);
    expect(keyed.rows.find((row) => row.strategy === 'central')?.admitted).toBe(exactBucketAdmits(ofKey).tokens);
    // Not the whole trace under another name: a third of its arrivals, and the bucket refuses some of them too.
    expect(ofKey.length).toBeLessThan(lines.length / 2);
    expect(exactBucketAdmits(ofKey).count).toBeLessThan(ofKey.length);
  });

  it('stops at a bad line with exit 2, naming file, line and field, and prints no rows', () => {
    const bad = join(dirname(path), 'bad.jsonl');
    writeFileSync(bad, '{"tMs":0,"instance":"a"}\n{"tMs":1,"instance":"a","cost":-1}\n');
    let result: { status: number | null; stdout: string; stderr: string } = { status: 0, stdout: '', stderr: '' };
    try {
      execFileSync(process.execPath, [MAIN, '--trace', bad, '--json'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      result = error as typeof result;
    }
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`${bad}:2: field "cost" must be a positive integer`);
  });

  it('replays the trace split into one file per instance, with wall-clock times, exactly as the one trace', () => {
    const dir = dirname(path);
    const epochMs = 1_764_662_400_000;
    const files = ['svc-0', 'svc-1', 'svc-2'].map((instance) => {
      const file = join(dir, `${instance}.jsonl`);
      const own = lines.filter((line) => line.instance === instance).map((line) => ({ ...line, tMs: epochMs + line.tMs }));
      writeFileSync(file, `${own.map((line) => JSON.stringify(line)).join('\n')}\n`);
      return file;
    });
    const result = run(['--trace', ...files, ...argv.slice(2), ...settings]);
    expect(result.status).toBe(0);
    const split = JSON.parse(result.stdout) as {
      parameters: { tracePaths: string[]; agents: number; durationMs: number };
      rows: Row[];
      replay: string;
    };
    expect(split.parameters).toMatchObject({ tracePaths: files, agents: 3, durationMs: (lines.at(-1)?.tMs ?? 0) + 1 });
    expect(split.rows.find((row) => row.strategy === 'central')?.admitted).toBe(exactBucketAdmits(lines).tokens);
    for (const file of files) expect(split.replay).toContain(`--trace=${file}`);
  });

  it("with --by-key, denies each key what its own exact bucket, full at the key's first arrival, denies", () => {
    const result = run([...argv, ...settings, '--by-key', '--what-if', '20@40/s']);
    expect(result.status).toBe(0);
    const report = (JSON.parse(result.stdout) as { byKey: ByKey }).byKey;
    expect(report.keys).toBe(2);
    for (const [at, capacityTokens, refillTokens] of [
      [0, CAPACITY_TOKENS, REFILL_TOKENS],
      [1, 20, 40],
    ] as const) {
      const limit = report.limits[at];
      expect(limit?.capacityTokens).toBe(capacityTokens);
      for (const key of ['k-a', 'k-b']) {
        const ofKey = lines.filter((line) => line.key === key);
        const admitted = exactBucketAdmits(ofKey, ofKey[0]?.tMs ?? 0, capacityTokens, refillTokens);
        const row = limit?.top.find((one) => one.key === key);
        expect(row).toMatchObject({ arrivals: ofKey.length, admittedCount: admitted.count, deniedCount: ofKey.length - admitted.count });
        expect(row?.deniedCount, 'the key must be limited to test anything').toBeGreaterThan(0);
      }
    }
  });

  it('refuses --by-key on a trace without keys, and a span over 24 h in a second file, with exit 2 and one line', () => {
    const dir = dirname(path);
    const keyless = join(dir, 'keyless.jsonl');
    writeFileSync(keyless, '{"tMs":0,"instance":"a"}\n{"tMs":1,"instance":"a"}\n');
    const late = join(dir, 'late.csv');
    writeFileSync(late, 'tMs,instance\n5,b\n86400000.001,b\n');
    for (const [extra, message] of [
      [['--trace', keyless, '--by-key'], `sweep: --trace ${keyless}: has no keys`],
      [['--trace', keyless, '--trace', late], `sweep: --trace ${late}:3: field "tMs": this arrival comes 86400000.001 ms after`],
    ] as const) {
      const result = run([...extra, '--json']);
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^\n]*\n$`));
    }
  });
});

describe('an nginx access log with raw keys (--trace-format nginx-json)', () => {
  const SECRET = 'the-service-key-secret-0123';
  const RAW_KEYS = ['sk_live_RAW_alpha_7Qx', 'sk_live_RAW_bravo_9Zt', 'sk_live_RAW_charlie_3Lp'];
  const dir = mkdtempSync(join(tmpdir(), 'access-log-'));
  const log = join(dir, 'access.log');
  const html = join(dir, 'report.html');
  // 600 requests over 3 s at 3 hosts, logged as they complete (up to 2 s later), one key in three lines each.
  const requests = Array.from({ length: 600 }, (_, i) => ({ tMs: 1_764_662_400_000 + 5 * i, doneMs: ((i * 7919) % 2000) + 5 * i, i }));
  writeFileSync(
    log,
    [...requests]
      .sort((a, b) => a.doneMs - b.doneMs)
      .map(({ tMs, i }) =>
        JSON.stringify({
          msec: (tMs / 1000).toFixed(3),
          hostname: `api-${i % 3}`,
          remote_addr: `198.51.100.${i % 200}`,
          request: `GET /v1/items/${i} HTTP/1.1`,
          status: 200,
          http_user_agent: 'curl/8.5.0',
          http_x_api_key: RAW_KEYS[i % 3],
        }),
      )
      .join('\n'),
  );
  const argv = [
    '--trace',
    log,
    '--trace-format',
    'nginx-json',
    '--trace-field',
    'key=http_x_api_key',
    '--capacity',
    '20',
    '--refill',
    '40/s',
  ];
  const settings = ['--lease-sizes', '5', '--ttls', '1s', '--lease-modes', 'chunk', '--reports', '0', '--seed', '1', '--by-key'];
  const names = RAW_KEYS.map((raw) => hashedKeyName(new TextEncoder().encode(SECRET), 'key', raw));

  it('reports every key under the name the middleware gives its pool, and no raw key anywhere', () => {
    const json = run([...argv, ...settings, '--json', '--html', html], { TOKENLEASE_KEY_SECRET: SECRET });
    const text = run([...argv, ...settings, '--key', RAW_KEYS[1] ?? ''], { TOKENLEASE_KEY_SECRET: SECRET });
    expect([json.status, text.status]).toEqual([0, 0]);
    const output = JSON.parse(json.stdout) as { byKey: ByKey; parameters: Record<string, unknown> };
    expect(output.byKey.limits[0]?.top.map((row) => row.key).sort()).toEqual([...names].sort());
    expect(output.byKey.limits[0]?.top.every((row) => row.arrivals === 200 && row.deniedCount > 0)).toBe(true);
    expect(output.parameters).toMatchObject({ traceFormat: 'nginx-json', keyHash: { rule: 'key', secretFrom: 'environment' } });
    expect(text.stdout).toContain(`trace ${log} (nginx-json) key ${names[1]}`);
    expect(text.stdout).toContain(`--key-pool=${names[1]}`);
    const everything = [json.stdout, json.stderr, text.stdout, text.stderr, readFileSync(html, 'utf8')].join('\n');
    expect(everything).toContain(names[0]);
    for (const raw of [...RAW_KEYS, SECRET]) expect(everything).not.toContain(raw);
  });

  it('says once on stderr that the key names mean nothing outside a run without a secret', () => {
    const result = run([...argv, ...settings, '--json']);
    expect(result.status).toBe(0);
    expect(result.stderr.match(/random one/g)).toHaveLength(1);
    expect((JSON.parse(result.stdout) as { parameters: { keyHash: unknown } }).parameters.keyHash).toEqual({
      rule: 'key',
      secretFrom: 'random',
    });
  });

  it('stops at a bad line naming file, line and field, without showing the raw key on it', () => {
    const bad = join(dir, 'bad.log');
    writeFileSync(
      bad,
      `{"msec":"1764662400.000","hostname":"a"}\n{"msec":"later","hostname":"a","http_x_api_key":"${RAW_KEYS[0] ?? ''}"}\n`,
    );
    const result = run(['--trace', bad, '--trace-format', 'nginx-json', '--trace-field', 'key=http_x_api_key', '--json']);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`${bad}:2: field "msec" (time) must be seconds since the Unix epoch`);
    expect(result.stderr).not.toContain(RAW_KEYS[0]);
  });
});
