/**
 * Every `npm run …` command that README.md or a page of docs/ shows in a
 * code block works: a documented command that fails is a broken promise.
 * The README is an entry point whose only commands are `npm ci && npm
 * start` and `npm test` (run by CI itself); the tools' commands moved with
 * their sections to docs/ (tools.md, lease-sizing.md, production.md,
 * configuration.md, development.md), so this test reads README.md and every
 * docs/*.md, and a command keeps its plan wherever it is shown.
 *
 * Each command has a plan below, and a command without one fails the test,
 * so a new or changed command in the docs gets a decision:
 * - as written, when it finishes within its bound on the 2-core
 *   development machine (the bound is several times what it takes there);
 * - with `--quick` appended, when the tool has that short mode: every part
 *   of the command runs, at a small scale;
 * - with `--help` appended, when it runs for minutes and what it runs is
 *   run once elsewhere in `npm test`: the runner parses every flag
 *   strictly (an unknown or repeated flag exits 2) before it prints its
 *   usage and exits 0; the sweep's values are also parsed in process,
 *   since its --help skips their validation.
 *
 * `npm test` builds every package before this suite runs (turbo's test task
 * depends on build), so the test runs what each script runs after its
 * build step: it checks that the root package.json script is exactly
 * `turbo run build … && <bin>` (turbo's output may be sent to stderr with
 * `>&2`, so that a script's stdout is its own; <bin> is a tool package's
 * command, linked into node_modules/.bin by npm), then runs that bin with
 * node from the repository root. It does not start turbo inside turbo.
 */
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnNode, stop } from '@tokenlease/harness/processes';
import { REPO_ROOT } from '@tokenlease/harness/paths';
import { parseSweepArgs } from '@tokenlease/sweep';
import { docsPages } from '../docs-pages.js';

const S = 1000;

interface Plan {
  /** 'npm test': the root test script runs it (lint) or its check (format:check), so every CI run exercises it. */
  readonly how: 'as written' | '--quick' | '--help' | 'npm test';
  /** Longest it may take, ms. */
  readonly boundMs: number;
  /** Why this way: what it costs as written. */
  readonly why: string;
  /** A further check of the arguments, in process. */
  readonly parse?: (args: readonly string[]) => void;
  /** A check of what the command printed on stdout, after it exited 0. */
  readonly stdout?: (stdout: string) => void;
}

/** FLEET_FIELDS — what every fleet row of `bench:compare --json` carries (issue 15). */
const FLEET_FIELDS = [
  'system',
  'decisionsPerSecond',
  'latencyP50Us',
  'latencyP99Us',
  'cpuSecondsPerMillionDecisions',
  'roundTripsPer1000Admissions',
  'admittedTokens',
  'idealTokens',
  'overAdmittedTokens',
  'keptEnvelope',
  'ratios',
];

/** WINDOW_FIELDS — what every window row of `bench:compare --json` carries (issue 18). */
const WINDOW_FIELDS = [
  'system',
  'decisionsPerSecond',
  'latencyP50Us',
  'latencyP99Us',
  'roundTripsPer1000Admissions',
  'admittedTokens',
  'idealTokens',
  'fullestWindowTokens',
  'overAdmittedTokens',
  'keptWindows',
  'ratios',
];

/** compareRows — `bench:compare --json`'s stdout is only JSON objects, one a line, with a fleet row for each of its 7 systems, a window row for each of its 4, saturation rows, and the tree part's flat and tree rows. */
function compareRows(stdout: string): void {
  const rows = stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const fleet = rows.filter((row) => row['table'] === 'fleet');
  expect(fleet.map((row) => row['system'])).toHaveLength(7);
  for (const row of fleet) expect(Object.keys(row)).toEqual(expect.arrayContaining(FLEET_FIELDS));
  expect(fleet.find((row) => row['system'] === 'tokenlease-chunk')?.['keptEnvelope']).toBe(true);
  const window = rows.filter((row) => row['table'] === 'window');
  expect(window.map((row) => row['system'])).toHaveLength(4);
  for (const row of window) expect(Object.keys(row)).toEqual(expect.arrayContaining(WINDOW_FIELDS));
  expect(window.filter((row) => String(row['system']).startsWith('tokenlease')).map((row) => row['keptWindows'])).toEqual([
    true,
    true,
    true,
  ]);
  // Under --quick the saturation part runs both baselines and the Redis designs they are compared with.
  const saturation = rows.filter((row) => row['table'] === 'saturation');
  expect(saturation.map((row) => row['system'])).toEqual(['tokenlease-chunk', 'redis-lua', 'tokenlease-window', 'redis-window-log']);
  for (const row of saturation) expect(row['decisionsPerSecond']).toBeGreaterThan(0);
  expect(saturation.filter((row) => String(row['system']).startsWith('tokenlease')).map((row) => row['keptPromise'])).toEqual([true, true]);
  expect(rows.filter((row) => row['table'] === 'hot-path').length).toBeGreaterThan(0);
  const capacity = rows.filter((row) => row['table'] === 'capacity');
  expect(capacity.map((row) => row['system'])).toEqual([
    'trivial',
    'json-parse',
    'coordinator',
    'coordinator',
    'coordinator',
    'coordinator',
  ]);
  for (const row of capacity) expect(row['errors']).toBe(0);
  expect(rows.filter((row) => row['table'] === 'codec')).toHaveLength(1);
  expect(rows.filter((row) => row['table'] === 'tree').map((row) => row['layout'])).toEqual(['flat', 'tree']);
}

const PLANS: ReadonlyMap<string, Plan> = new Map<string, Plan>([
  [
    'npm run sweep -- --agents 20 --capacity 500 --refill 1000/s --workload zipf:s=1,load=1.5 --lease-sizes 1,5,10,25,50,100,250 --ttls 1s,2s,5s --lease-modes chunk,rate --refreshes 250ms,500ms,1s,2s --seed 2026 --html report.html',
    {
      how: '--help',
      boundMs: 30 * S,
      why: '51 settings and 2 baselines, 60 simulated seconds each: about 6 minutes',
      parse: (args) => parseSweepArgs(args),
    },
  ],
  [
    'npm run sweep -- --workload zipf:s=1,load=1.5 --lease-sizes 50 --ttls 2s --lease-modes chunk --reports 0 --seed 2026 --what-if 250@500/s,500@1200/s,1000@1500/s',
    {
      how: 'as written',
      boundMs: 60 * S,
      why: 'one setting, 2 baselines and 4 what-if buckets, 60 simulated seconds each: a few seconds',
      parse: (args) => parseSweepArgs(args),
    },
  ],
  [
    'npm run sweep -- --trace traffic.jsonl --capacity 500 --refill 1000/s --lease-sizes 5,10,25,50 --seed 2026 --json',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'it replays the reader’s own trace file, which the repository does not have; trace-replay.test.ts runs --trace --json on a generated one',
      parse: (args) => parseSweepArgs(args),
    },
  ],
  [
    'npm run sweep -- --trace access.log --trace-format nginx-json --trace-field key=http_x_api_key --capacity 500 --refill 1000/s --by-key --seed 2026',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'it replays the reader’s own access log, which the repository does not have; trace-replay.test.ts runs an nginx log with --by-key on a generated one',
      parse: (args) => parseSweepArgs(args),
    },
  ],
  [
    'npm run sweep -- --trace traces/api-1.jsonl traces/api-2.jsonl --capacity 500 --refill 1000/s --what-if 100@200/s --by-key 10 --seed 2026',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'it replays the reader’s own trace files, which the repository does not have; trace-replay.test.ts replays several files with --by-key',
      parse: (args) => parseSweepArgs(args),
    },
  ],
  [
    'npm run sim -- --scenarios 1000 --seed 1',
    { how: 'as written', boundMs: 240 * S, why: 'about 30 s of CPU, 40-50 s on a busy machine' },
  ],
  [
    'npm run chaos',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'twenty full-length scenarios, nine of them in network namespaces and one under libfaketime: about 8 min',
    },
  ],
  [
    'npm run soak -- --duration 1h',
    { how: '--help', boundMs: 30 * S, why: 'an hour of churn and faults; its five-minute form runs in the chaos package’s tests' },
  ],
  [
    'npm run chaos -- --only kill-relay --seed 7',
    { how: '--help', boundMs: 30 * S, why: 'one full-length scenario, about 15 s; its short version runs in the chaos package’s tests' },
  ],
  [
    'npm run chaos -- --only cut-coordinator-redis,cut-coordinator-nats,one-way-coordinator-nats,flap-coordinator-redis,cut-agent-nats,one-way-agent-nats,flap-agent-nats',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'seven full-length partition scenarios in network namespaces, about 3 min; their short versions run in the chaos package’s tests',
    },
  ],
  [
    'npm run chaos -- --short --only kill-agents,pause-agent',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'two short scenarios, about 20 s, that run once elsewhere: in the chaos package’s tests, and through this bin in json-output.test.ts and packed.test.ts',
    },
  ],
  [
    'npm run bench',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'about 80 s: the crowded-pool figures wait out the one-minute quiet period of their coordinator; json-output.test.ts runs every measurement of it once, at its --quick scale',
    },
  ],
  [
    'npm run bench:compare',
    {
      how: '--help',
      boundMs: 30 * S,
      why: '7 fleet and 4 window systems for 10 s each, then all 11 at saturation, the hot path, the capacity and the tree: about 8 minutes',
    },
  ],
  [
    'npm run -s bench:compare -- --parts tree',
    {
      how: '--help',
      boundMs: 30 * S,
      why: 'about 30 s; the --duration 2 --json run below runs the same part',
    },
  ],
  [
    'npm run -s bench:compare -- --duration 2 --json',
    {
      how: '--quick',
      boundMs: 240 * S,
      why: '2 s per fleet, window and saturation system, the hot path, the capacity and the tree: about 3 minutes as written, 2 with --quick (4 systems at saturation, the capacity and tree parts short)',
      stdout: compareRows,
    },
  ],
  ['npm run lint', { how: 'npm test', boundMs: 0, why: 'the root test script runs it, beside the tests (tools/run-tests.mjs)' }],
  ['npm run format', { how: 'npm test', boundMs: 0, why: 'it rewrites the tree; the root test script runs its check, format:check' }],
]);

/** rootScripts — the root package.json's scripts. */
function rootScripts(): Record<string, string> {
  return (JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
}

/** DOCUMENTS — README.md and every docs/*.md, relative to the repository root: where the commands are read from. */
const DOCUMENTS = docsPages();

/** readmeCommands — the `npm run` lines of a Markdown file's fenced code blocks, continuations joined and comments dropped. */
function readmeCommands(markdown: string): string[] {
  const commands: string[] = [];
  let inBlock = false;
  let pending = '';
  for (const raw of markdown.split('\n')) {
    if (raw.trimStart().startsWith('```')) {
      inBlock = !inBlock;
      pending = '';
      continue;
    }
    if (!inBlock) continue;
    const line = pending + raw.replace(/\s+#.*$/, '').trim();
    if (line.endsWith('\\')) {
      pending = `${line.slice(0, -1).trim()} `;
      continue;
    }
    pending = '';
    if (line.startsWith('npm run ')) commands.push(line.replace(/\s+/g, ' '));
  }
  return commands;
}

/** scriptFile — the bin `npm run <name>` runs after building, from the root package.json, as npm linked it. */
function scriptFile(name: string): string {
  const scripts = rootScripts();
  const script = Object.hasOwn(scripts, name) ? scripts[name] : undefined;
  const match = /^turbo run build(?: [^&]*?)?(?: >&2)? && (tokenlease-[a-z]+(?:-[a-z]+)*)$/.exec(script ?? '');
  if (match?.[1] === undefined)
    throw new Error(
      `the root script ${JSON.stringify(name)} is not "turbo run build … [>&2] && tokenlease-<tool>": ${JSON.stringify(script)}`,
    );
  return resolve(REPO_ROOT, 'node_modules', '.bin', match[1]);
}

/** split — `npm run [-s] <name> [-- args]` into the script name and its arguments (the documented commands quote nothing). */
function split(command: string): { readonly name: string; readonly args: string[] } {
  if (/['"`$]/.test(command)) throw new Error(`quoting in ${JSON.stringify(command)}: teach this test to split it`);
  // -s (npm's --silent) only keeps npm's own lines off stdout; the bin runs the same.
  const [, , name = '', ...rest] = command.replace(/^npm run -s /, 'npm run ').split(' ');
  if (rest.length > 0 && rest[0] !== '--') throw new Error(`${JSON.stringify(command)}: arguments go after --`);
  return { name, args: rest.slice(1) };
}

async function run(
  file: string,
  args: readonly string[],
  boundMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  const child = spawnNode(`readme:${file}`, resolve(REPO_ROOT, file), args);
  const timer = setTimeout(() => void stop(child, 1000), boundMs);
  const { code } = await child.exited;
  clearTimeout(timer);
  return { code, stdout: child.lines.join('\n'), stderr: child.stderr(), ms: performance.now() - started };
}

describe('the commands of README.md and docs/*.md', () => {
  const commands = [...new Set(DOCUMENTS.flatMap((file) => readmeCommands(readFileSync(resolve(REPO_ROOT, file), 'utf8'))))];

  it('are found, and each has a plan', () => {
    expect(commands.length).toBeGreaterThan(0);
    expect(
      commands.filter((c) => !PLANS.has(c)),
      'commands of README.md or docs/*.md without a plan in readme-commands.test.ts',
    ).toEqual([]);
    expect(
      [...PLANS.keys()].filter((c) => !commands.includes(c)),
      'plans for commands neither README.md nor docs/*.md shows any more',
    ).toEqual([]);
  });

  for (const [command, plan] of PLANS) {
    if (plan.how === 'npm test') {
      it(`${command} (run by npm test: ${plan.why})`, () => {
        const { name } = split(command);
        const test = rootScripts()['test'] ?? '';
        // The root test script runs the format check itself, and the lint through its test step's lanes.
        const stepFile = /node (tools\/[\w.-]+\.mjs)/.exec(test)?.[1];
        const steps = test + (stepFile === undefined ? '' : readFileSync(resolve(REPO_ROOT, stepFile), 'utf8'));
        expect(steps, `the root test script runs ${name}`).toContain(name === 'format' ? 'npm run format:check' : `'${name}'`);
        expect(rootScripts()[name], `the root script ${name}`).toBeDefined();
      });
      continue;
    }
    it(`${command} (${plan.how}: ${plan.why})`, { timeout: plan.boundMs + 10 * S }, async () => {
      const { name, args } = split(command);
      const file = scriptFile(name);
      plan.parse?.(args);
      const extra = plan.how === '--help' || plan.how === '--quick' ? [plan.how] : [];
      const result = await run(file, [...args, ...extra], plan.boundMs);
      console.log(`readme: ${command}: exit ${result.code} in ${(result.ms / S).toFixed(1)} s (${plan.how})`);
      expect({ code: result.code, stderr: result.code === 0 ? '' : result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: '' });
      expect(result.ms).toBeLessThan(plan.boundMs);
      if (plan.how === '--help')
        expect(result.stdout).toMatch(new RegExp(`^Usage: ${basename(file)} .*\\(in the repository: npm run ${name} -- `));
      plan.stdout?.(result.stdout);
    });
  }
});
