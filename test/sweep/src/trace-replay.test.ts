/**
 * A recorded trace replayed end to end through the CLI (`--trace FILE
 * --json`): a seeded bursty trace of 3 instances and 2,000 arrivals gives
 * rows for chunk and rate leases and both baselines, none over the envelope,
 * and the central baseline admits exactly what an exact token bucket
 * (capacity B, refill r, full at time 0) admits replayed over the same
 * arrivals, recomputed here in integer arithmetic apart from the sweep's code;
 * with `--key K`, the same over that key's arrivals alone.
 * The CLI is the built one (dist/main.js; `turbo run test` builds first).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/** exactBucketAdmits — requests an exact bucket admits: level in units of 1/(period µs) token, all integers. */
function exactBucketAdmits(lines: readonly Line[]): { count: number; tokens: number } {
  const unitsPerToken = REFILL_PERIOD_MS * 1000;
  const fullUnits = CAPACITY_TOKENS * unitsPerToken;
  let levelUnits = fullUnits;
  let lastUs = 0;
  let count = 0;
  let tokens = 0;
  for (const line of lines) {
    const tUs = line.tMs * 1000;
    levelUnits = Math.min(fullUnits, levelUnits + (tUs - lastUs) * REFILL_TOKENS);
    lastUs = tUs;
    if (levelUnits < line.cost * unitsPerToken) continue;
    levelUnits -= line.cost * unitsPerToken;
    count += 1;
    tokens += line.cost;
  }
  return { count, tokens };
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
});
