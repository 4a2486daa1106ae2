/**
 * Command line of the chaos runner: `npm run chaos -- [flags]`.
 *
 * Guarantees: `parseChaosArgs` returns validated ChaosArgs or throws a
 * ChaosArgsError whose message is one line naming the flag and what it
 * accepts (the runner prints it and exits 2, without a stack trace).
 * Scenarios are named as the result rows print them (kebab-case). Pure: no
 * clock, no environment (the seed, when not given, is drawn by the runner).
 */
import { parseArgs } from 'node:util';

/** SCENARIO_NAMES — every chaos scenario, in the order a full run takes them; the names rows print. */
export const SCENARIO_NAMES = [
  'kill-agents',
  'pause-agent',
  'restart-nats',
  'lose-nats-node',
  'kill-coordinator',
  'failover-coordinator',
  'redis-primary-failover',
  'redis-primary-failover-unconfirmed',
  'churn-agents',
  'kill-relay',
  'cut-coordinator-redis',
  'cut-coordinator-nats',
  'one-way-coordinator-nats',
  'cut-agent-nats',
  'one-way-agent-nats',
  'flap-agent-nats',
  'flap-coordinator-redis',
  'kill-nats-server',
  'isolate-nats-server',
  'slow-agent-clock',
  'cut-slot-holder',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

const SEED_MAX = 2 ** 32 - 1;

/** ChaosArgs — one validated run: which scenarios (in the order given), how long, which seed (null: draw one). */
export interface ChaosArgs {
  readonly only: readonly ScenarioName[];
  readonly short: boolean;
  readonly json: boolean;
  /** In [0, 2^32 − 1], or null to draw one (`$SEED`, else random). */
  readonly seed: number | null;
  /** `--help` was given: print CHAOS_USAGE and run nothing. */
  readonly help: boolean;
}

/** ChaosArgsError — a refused command line; `message` is one line that starts with the flag. */
export class ChaosArgsError extends Error {
  override readonly name = 'ChaosArgsError';
  readonly code = 'bad-argument';

  constructor(
    readonly flag: string,
    problem: string,
  ) {
    super(`${flag}: ${problem}`);
  }
}

/** CHAOS_USAGE — the `--help` text. */
export const CHAOS_USAGE = `Usage: tokenlease-chaos [flags]   (in the repository: npm run chaos -- [flags])

Runs chaos scenarios against real processes (NATS, coordinators, agents),
verifies each fault really happened, and prints one row per scenario.
Exits 1 if a fault was not verified or a check failed, 2 for a bad flag.

  --only NAME,NAME   scenarios to run, as the rows name them (default: all):
                     ${SCENARIO_NAMES.slice(0, 4).join(', ')},
                     ${SCENARIO_NAMES.slice(4, 7).join(', ')},
                     ${SCENARIO_NAMES.slice(7, 10).join(', ')},
                     ${SCENARIO_NAMES.slice(10, 13).join(', ')},
                     ${SCENARIO_NAMES.slice(13, 17).join(', ')},
                     ${SCENARIO_NAMES.slice(17, 19).join(', ')} (these nine: network namespaces, root, nft),
                     ${SCENARIO_NAMES.slice(19).join(', ')} (libfaketime)
  --short            brief versions (as npm test runs them)
  --seed N           seed, 0..${SEED_MAX} (default $SEED, else random; printed)
  --json             one JSON array of rows instead of the table
  -h, --help         print this text
`;

const OPTIONS = {
  only: { type: 'string' },
  short: { type: 'boolean' },
  seed: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function isScenarioName(name: string): name is ScenarioName {
  return (SCENARIO_NAMES as readonly string[]).includes(name);
}

function readOnly(text: string): ScenarioName[] {
  const names = text.split(',');
  const unknown = names.filter((name) => !isScenarioName(name));
  if (unknown.length > 0) {
    const quoted = unknown.map((name) => JSON.stringify(name)).join(', ');
    throw new ChaosArgsError('--only', `unknown scenario ${quoted}; known: ${SCENARIO_NAMES.join(', ')}`);
  }
  return [...new Set(names.filter(isScenarioName))];
}

function readSeed(text: string): number {
  const seed = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(seed) || seed > SEED_MAX)
    throw new ChaosArgsError('--seed', `${JSON.stringify(text)} is not a seed; use a whole number in [0, ${SEED_MAX}]`);
  return seed;
}

/** parseChaosArgs — validates `argv` (the arguments after `--`); throws ChaosArgsError on anything it does not accept. */
export function parseChaosArgs(argv: readonly string[]): ChaosArgs {
  let values: { only?: string; short?: boolean; seed?: string; json?: boolean; help?: boolean };
  try {
    values = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ChaosArgsError('(arguments)', `${message.split('\n')[0] ?? message} (see --help)`);
  }
  return {
    only: values.only === undefined ? [...SCENARIO_NAMES] : readOnly(values.only),
    short: values.short === true,
    json: values.json === true,
    seed: values.seed === undefined ? null : readSeed(values.seed),
    help: values.help === true,
  };
}
