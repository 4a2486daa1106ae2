// The step of `npm test` after the format check and the build: the lint and
// every package's tests, in three lanes side by side from the start.
//
// - The integration suite (test/suite: real servers and processes, several
//   files at a time, by far the longest) runs from the first second, and
//   the chaos package's short scenarios right after it, in the same lane,
//   at normal priority: they judge recovery rates against real clocks, and
//   run beside the suite at the lowest priority they were starved of CPU
//   and failed four of 37 in one CI run (rates not back within their
//   bound, a fault not verified). They add about five minutes.
// - The lint (one ESLint process over every package) runs beside it.
// - Every other package's tests run through turbo, one package at a time
//   (they are CPU-bound; the chaos suite starts servers of its own), and
//   only the tests (`--only`): the build ran before this step, and the
//   suite's own `npm run` commands start turbo builds of their own. A
//   failing package does not stop the next (`--continue`). This lane runs
//   at the lowest CPU priority (`nice -n 19`, which its processes inherit):
//   the suite spends most of its time waiting on real processes and the
//   clock, and this lane fills those gaps, but the suite's load-sensitive
//   checks (fair shares, latencies under a flood) keep first call on the
//   cores. At equal priority they lost them and failed one or another in
//   CI; run after the suite instead, this lane added about 3.5 minutes.
//
// Each lane's output keeps turbo's `<package>:<task>:` prefixes; the step
// fails, after every lane has finished, if any did, and then prints again,
// last, what each failing lane (or turbo task) said about its failure, so
// that the tail of a long CI log names the test that failed.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const SUITE = '@tokenlease/test';
const CHAOS = '@tokenlease/chaos';

const FAILURE_LINES = 60;
// Colour codes are stripped from what is printed again.
const COLOUR = /\u001b\[[0-9;]*m/g;

/** lane — runs `command args` from the repository root, each output line prefixed and kept in `seen`; resolves to its exit code. */
function lane(prefix, command, args, seen) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      let pending = '';
      from.on('data', (chunk) => {
        const lines = (pending + chunk.toString()).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          to.write(`${prefix}${line}\n`);
          seen.push(`${prefix}${line}`);
        }
      });
      from.on('end', () => {
        if (pending === '') return;
        to.write(`${prefix}${pending}\n`);
        seen.push(`${prefix}${pending}`);
      });
    }
    child.once('error', (error) => {
      process.stderr.write(`${prefix}could not start ${command}: ${error.message}\n`);
      resolve(1);
    });
    child.once('close', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

/** steps — runs each `[prefix, command, args]` after the previous one, whatever its exit; resolves to the first non-zero exit code, or 0. */
async function steps(list, seen) {
  let code = 0;
  for (const [prefix, command, args] of list) {
    const next = await lane(prefix, command, args, seen);
    if (code === 0) code = next;
  }
  return code;
}

// Each lane: its name and the commands it runs one after another, each with its output prefix.
const LANES = [
  [
    'the integration suite, then the chaos scenarios',
    [
      [`${SUITE}:test: `, 'npm', ['run', '--silent', '--workspace', SUITE, 'test']],
      ['', 'npx', ['turbo', 'run', 'test', `--filter=${CHAOS}`, '--only']],
    ],
  ],
  ['the lint', [['lint: ', 'npm', ['run', '--silent', 'lint']]]],
  [
    "the other packages' tests",
    [
      [
        '',
        'nice',
        ['-n', '19', 'npx', 'turbo', 'run', 'test', `--filter=!${SUITE}`, `--filter=!${CHAOS}`, '--only', '--concurrency=1', '--continue'],
      ],
    ],
  ],
];

/**
 * failureOf — what a failed lane said about its failure: for each turbo task
 * it names as failed, that task's lines from vitest's "Failed Tests" header
 * on (or its last lines); for a lane without turbo tasks, the same of the
 * lane. About FAILURE_LINES lines in all, shared among the failing tasks
 * (at least 15 each), colours stripped.
 */
function failureOf(seen) {
  const plain = seen.map((line) => line.replace(COLOUR, ''));
  // turbo's summary: `Failed:    @tokenlease/chaos#test, @tokenlease/sim#test`.
  const failedLists = plain.flatMap((line) => (/^\s*Failed:\s+(.*)$/.exec(line)?.[1] ?? '').split(',')).map((task) => task.trim());
  const tasks = [...new Set(failedLists.filter((task) => task.includes('#')).map((task) => `${task.replace('#', ':')}: `))];
  const groups = tasks.length > 0 ? tasks.map((task) => plain.filter((line) => line.startsWith(task))) : [plain];
  // Each failing task gets its share of the lines, so every one of them is named.
  const share = Math.max(15, Math.floor(FAILURE_LINES / groups.length));
  const out = [];
  for (const group of groups) {
    const header = group.findIndex((line) => /Failed Tests? \d+|FAIL /.test(line));
    out.push(...(header >= 0 ? group.slice(header) : group.slice(-share)).slice(0, share));
  }
  return out;
}

const seen = LANES.map(() => []);
const codes = await Promise.all(LANES.map(([, list], i) => steps(list, seen[i])));
const failed = LANES.map(([name], i) => (codes[i] === 0 ? null : `${name} (exit ${codes[i]})`)).filter((f) => f !== null);
for (const [i, [name]] of LANES.entries()) {
  if (codes[i] === 0) continue;
  process.stderr.write(`\nnpm test: ${name} failed; what it said about it:\n${failureOf(seen[i]).join('\n')}\n`);
}
if (failed.length > 0) process.stderr.write(`npm test: failed: ${failed.join(', ')}\n`);
process.exit(failed.length > 0 ? 1 : 0);
