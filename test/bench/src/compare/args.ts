/**
 * Command line of the comparison:
 * `npm run bench:compare -- [--duration S] [--only A,B] [--parts P,Q] [--quick] [--json] [--help]`.
 *
 * Guarantees: `parseCompareArgs` returns validated CompareArgs or throws a
 * CompareArgsError whose message is one line (the runner prints it and
 * exits 2). Pure: no clock, no environment.
 */
import { parseArgs } from 'node:util';
import { BASELINE, SYSTEMS, WINDOW_BASELINE, WINDOW_SYSTEMS } from './systems.js';

/** PARTS — the parts of the run, in the order they run. */
export const PARTS = ['fleet', 'window', 'saturation', 'hot-path', 'capacity', 'tree'] as const;
export type Part = (typeof PARTS)[number];

/** DURATION_S_DEFAULT, DURATION_S_MAX — traffic time per fleet system, seconds. */
export const DURATION_S_DEFAULT = 10;
export const DURATION_S_MAX = 600;

/** TREE_AGENTS_DEFAULT, TREE_AGENTS_MAX — simulated agents of the tree part. */
export const TREE_AGENTS_DEFAULT = 10_000;
export const TREE_AGENTS_MAX = 100_000;

/** QUICK_SATURATION_SYSTEMS — the saturation part under `--quick`: both baselines and the Redis designs they are compared with. */
export const QUICK_SATURATION_SYSTEMS: readonly string[] = [BASELINE, 'redis-lua', WINDOW_BASELINE, 'redis-window-log'];

/** QUICK_DURATION_S, QUICK_MEASURE_MS, QUICK_TREE_AGENTS — the scale of `--quick`. */
export const QUICK_DURATION_S = 1;
export const QUICK_MEASURE_MS = 500;
export const QUICK_TREE_AGENTS = 1000;

/** CompareArgs — one validated run. */
export interface CompareArgs {
  /** Traffic time of each system in the fleet, window and saturation parts, ms. */
  readonly durationMs: number;
  /** The fleet and window systems to run, by name (both baselines always among them). */
  readonly systems: readonly string[];
  /** The systems of the saturation part: `systems`, or under --quick those of them in QUICK_SATURATION_SYSTEMS. */
  readonly saturationSystems: readonly string[];
  readonly parts: readonly Part[];
  /** Simulated agents of the tree part (flat, then split under relays). */
  readonly treeAgents: number;
  /** Only JSON lines on stdout; the table goes to stderr. */
  readonly json: boolean;
  /**
   * Every part at a small scale: 1 s per system unless --duration says,
   * capacity rows of QUICK_MEASURE_MS, tree layouts counted over
   * QUICK_MEASURE_MS with QUICK_TREE_AGENTS unless --tree-agents says: a
   * check that the comparison runs, not figures to quote. Null: each part's own.
   */
  readonly measureMs: number | null;
  readonly help: boolean;
}

/** CompareArgsError — a refused command line; `message` is one line. */
export class CompareArgsError extends Error {
  override readonly name = 'CompareArgsError';
  readonly code = 'bad-argument';
}

const NAMES = [...SYSTEMS, ...WINDOW_SYSTEMS].map((s) => s.name);

/** COMPARE_USAGE — the `--help` text. */
export const COMPARE_USAGE = `Usage: tokenlease-bench-compare [flags]   (in the repository: npm run bench:compare -- [flags])

Runs one fleet workload (4 client processes, cost-1 requests offered at 4x
the refill) through tokenlease and the limiters users pick instead, each
for --duration seconds on private NATS and Redis servers; then the same
workload through the strict sliding-window limits (N per W: a tokenlease
window pool, a Redis sliding-window log); then every one of those systems
at saturation (the same clients deciding in a closed loop, as fast as the
system allows: decisions/s, and server CPU per million decisions apart
from the clients'); then the hot path next to its
neighbours in one process, the coordinator's capacity, and simulated
agents straight on a root against the same agents under 4 relays
(requests reaching the root). Prints tables,
which systems kept the envelope B + r*T and which kept N per W in every
window; exits 1 if a tokenlease row exceeded its own promise or a
measurement failed, 2 for a bad flag.

  --duration S   traffic time per fleet, window and saturation system, seconds (default ${DURATION_S_DEFAULT}, at most ${DURATION_S_MAX})
  --only A,B     fleet and window systems to run (${BASELINE} and ${WINDOW_BASELINE} always
                 run: every ratio of their table is to them):
                 ${NAMES.join(', ')}
  --parts P,Q    parts to run: ${PARTS.join(', ')} (default all)
  --tree-agents N  simulated agents of the tree part, 1..${TREE_AGENTS_MAX} (default ${TREE_AGENTS_DEFAULT})
  --quick        every part at a small scale (${QUICK_DURATION_S} s per system unless --duration
                 says, ${QUICK_MEASURE_MS} ms per capacity row and tree layout, ${QUICK_TREE_AGENTS} tree
                 agents unless --tree-agents says, saturation only for ${QUICK_SATURATION_SYSTEMS.join(', ')}):
                 checks that it runs; not figures to quote
  --json         only JSON on stdout, one object per line: a row per fleet system
                 ("table":"fleet"), per window system ("table":"window"), per system
                 at saturation ("table":"saturation"), then the hot-path, capacity,
                 codec and tree rows
  -h, --help     print this text
`;

const OPTIONS = {
  duration: { type: 'string' },
  only: { type: 'string' },
  parts: { type: 'string' },
  'tree-agents': { type: 'string' },
  quick: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function list<T extends string>(flag: string, text: string, allowed: readonly T[]): T[] {
  const items = text.split(',').map((s) => s.trim());
  const unknown = items.filter((s) => !(allowed as readonly string[]).includes(s));
  if (unknown.length > 0 || items.length === 0)
    throw new CompareArgsError(`--${flag}: unknown ${JSON.stringify(unknown)}; one of ${allowed.join(', ')}`);
  return allowed.filter((a) => items.includes(a));
}

function duration(text: string | undefined, quick: boolean): number {
  if (text === undefined) return (quick ? QUICK_DURATION_S : DURATION_S_DEFAULT) * 1000;
  const seconds = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(seconds > 0) || seconds > DURATION_S_MAX)
    throw new CompareArgsError(`--duration: a number of seconds in (0, ${DURATION_S_MAX}], got ${JSON.stringify(text)}`);
  return Math.round(seconds * 1000);
}

function treeAgents(text: string | undefined, quick: boolean): number {
  if (text === undefined) return quick ? QUICK_TREE_AGENTS : TREE_AGENTS_DEFAULT;
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= TREE_AGENTS_MAX))
    throw new CompareArgsError(`--tree-agents: a whole number in [1, ${TREE_AGENTS_MAX}], got ${JSON.stringify(text)}`);
  return n;
}

/** parseCompareArgs — validates `argv` (the arguments after `--`); throws CompareArgsError on anything it does not accept. */
export function parseCompareArgs(argv: readonly string[]): CompareArgs {
  let values;
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new CompareArgsError(`${message.split('\n')[0] ?? message} (see --help)`);
  }
  const only = values.only === undefined ? NAMES : list('only', values.only, NAMES);
  const quick = values.quick === true;
  const systems = NAMES.filter((name) => name === BASELINE || name === WINDOW_BASELINE || only.includes(name));
  return {
    durationMs: duration(values.duration, quick),
    systems,
    saturationSystems: quick ? systems.filter((name) => QUICK_SATURATION_SYSTEMS.includes(name)) : systems,
    parts: values.parts === undefined ? [...PARTS] : list('parts', values.parts, PARTS),
    treeAgents: treeAgents(values['tree-agents'], quick),
    measureMs: quick ? QUICK_MEASURE_MS : null,
    json: values.json === true,
    help: values.help === true,
  };
}
