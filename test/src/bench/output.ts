/**
 * How `npm run bench` prints: readable lines, then one JSON line. With
 * `--json` stdout carries the JSON line alone, for scripts: the readable
 * lines (console.log, wherever a figure prints them) go to stderr.
 */

/** benchOutput — `emit` writes the JSON line to stdout; with `--json` in `argv`, console.log writes to stderr from now on. */
export function benchOutput(argv: readonly string[]): { readonly json: boolean; emit(json: string): void } {
  const json = argv.includes('--json');
  if (json) console.log = (...parts: unknown[]): void => console.error(...parts);
  return { json, emit: (line) => void process.stdout.write(`${line}\n`) };
}
