/**
 * The sweep tool's one error for bad command-line input.
 *
 * Guarantees: the message is a single line that names the flag and the form
 * it accepts, so the CLI can print it as is and exit with status 2.
 */

/**
 * SweepArgsError — a refused command-line value. `flag` is the flag as typed
 * on the command line (`--agents`), or `(arguments)` for a stray positional
 * argument; `message` is one line that starts with that flag.
 */
export class SweepArgsError extends Error {
  override readonly name = 'SweepArgsError';
  readonly code = 'bad-argument';
  readonly flag: string;

  constructor(flag: string, problem: string) {
    super(`${flag}: ${problem}`.replace(/\s*\n\s*/g, ' '));
    this.flag = flag;
  }
}
