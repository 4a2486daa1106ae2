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
  -h, --help   print this text
`;

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** parseBenchArgs — validates `argv` (the arguments after `--`); throws BenchArgsError on anything it does not accept. */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  try {
    const { values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false });
    return { json: values.json === true, help: values.help === true };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new BenchArgsError(`${message.split('\n')[0] ?? message} (see --help)`);
  }
}
