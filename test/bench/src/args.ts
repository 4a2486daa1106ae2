/**
 * Command line of the bench: `npm run bench -- [--json] [--help]`.
 *
 * Guarantees: `parseBenchArgs` returns validated BenchArgs or throws a
 * BenchArgsError whose message is one line (the runner prints it and exits
 * 2, without a stack trace). Pure: no clock, no environment.
 */
import { parseArgs } from 'node:util';

/** BenchArgs — one validated run. */
export interface BenchArgs {
  /** Only the JSON line on stdout; the readable lines go to stderr. */
  readonly json: boolean;
  /** Every measurement at a small scale (QUICK_SCALE): a check that the bench runs, in seconds, not figures to quote. */
  readonly quick: boolean;
  /** `--help` was given: print BENCH_USAGE and run nothing. */
  readonly help: boolean;
}

/** BenchArgsError — a refused command line; `message` is one line. */
export class BenchArgsError extends Error {
  override readonly name = 'BenchArgsError';
  readonly code = 'bad-argument';
}

/** BENCH_USAGE — the `--help` text. */
export const BENCH_USAGE = `Usage: tokenlease-bench [flags]   (in the repository: npm run bench -- [flags])

Measures the agent's fast path, one agent end to end, the durable write,
the coordinator's acquires per second against its number of live leases,
and acquire latency on one pool while another holds 50,000 waiting
requests. Prints readable lines, then one JSON line of the figures.
Exits 1 if a measurement fails, 2 for a bad flag.

  --json       only the JSON line on stdout (the readable lines go to stderr)
  --quick      every measurement at a small scale (fewer calls, a crowd of
               5,000 held for 3 s): checks that the bench runs, in about
               20 s; its figures are not the ones to quote
  -h, --help   print this text
`;

const OPTIONS = {
  json: { type: 'boolean' },
  quick: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** parseBenchArgs — validates `argv` (the arguments after `--`); throws BenchArgsError on anything it does not accept. */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  try {
    const { values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false });
    return { json: values.json === true, quick: values.quick === true, help: values.help === true };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new BenchArgsError(`${message.split('\n')[0] ?? message} (see --help)`);
  }
}

/**
 * BenchScale — how much each measurement does. FULL_SCALE is the bench's
 * own; QUICK_SCALE (`--quick`) runs every measurement with fewer calls and
 * shorter waits.
 */
export interface BenchScale {
  /** Requests the hostile client leaves waiting on the crowded pool, and how long each is held, ms. */
  readonly crowdRequests: number;
  readonly crowdHoldMs: number;
  /** Renewals timed on the quiet pool per phase, and before the baseline. */
  readonly crowdRoundTrips: number;
  readonly crowdWarmupRoundTrips: number;
  /** One agent end to end, ms. */
  readonly endToEndMs: number;
  /** Batches of 1000 calls timed per fast-path loop (admissions; the others half as many). */
  readonly fastPathBatches: number;
  /** Calls the allocation probe makes per loop (admissions; the others half as many). */
  readonly probeCalls: number;
  /** CPU time of one turn of the lease scaling part, ms, and the turns each lease count takes (turns.ts). */
  readonly scalingTurnMs: number;
  readonly scalingTurns: number;
  /** Durable writes timed. */
  readonly durableWrites: number;
  /** Per-key limiters left idle, how long their CPU is measured, ms, and the limiters made for the drop check. */
  readonly idleLimiters: number;
  readonly idleWindowMs: number;
  readonly droppedLimiters: number;
  /** Each HTTP load run, ms. */
  readonly httpMs: number;
  /** Idle template pools a core holds at rest, and the virtual time it is driven for, ms (idle-pools.ts). */
  readonly idlePools: number;
  readonly idleRestMs: number;
  /** Renewals a second one client floods a pool with, and how long renewals of another pool are timed after its onset, ms (flooded-pool.ts). */
  readonly floodPerSecond: number;
  readonly floodSustainMs: number;
}

export const FULL_SCALE: BenchScale = {
  crowdRequests: 50_000,
  crowdHoldMs: 30_000,
  crowdRoundTrips: 2000,
  crowdWarmupRoundTrips: 6000,
  endToEndMs: 3000,
  fastPathBatches: 5000,
  probeCalls: 2_000_000,
  scalingTurnMs: 200,
  scalingTurns: 15,
  durableWrites: 2000,
  idleLimiters: 10_000,
  idleWindowMs: 5000,
  droppedLimiters: 2000,
  httpMs: 1500,
  idlePools: 100_000,
  idleRestMs: 10_000,
  floodPerSecond: 25_000,
  floodSustainMs: 10_000,
};

export const QUICK_SCALE: BenchScale = {
  crowdRequests: 5000,
  crowdHoldMs: 3000,
  crowdRoundTrips: 200,
  crowdWarmupRoundTrips: 500,
  endToEndMs: 500,
  fastPathBatches: 500,
  probeCalls: 200_000,
  scalingTurnMs: 50,
  scalingTurns: 2,
  durableWrites: 200,
  idleLimiters: 1000,
  idleWindowMs: 1000,
  droppedLimiters: 500,
  httpMs: 300,
  idlePools: 10_000,
  idleRestMs: 1000,
  floodPerSecond: 5000,
  floodSustainMs: 1000,
};
