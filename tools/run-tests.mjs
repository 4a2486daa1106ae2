// The step of `npm test` after the format check and the build: the lint and
// every package's tests, in three lanes that run side by side from the
// start, so that the longest suite never waits behind the others.
//
// - The integration suite (test/suite: real servers and processes, several
//   files at a time, by far the longest) runs on its own from the first second.
// - The lint (one ESLint process over every package) runs beside it.
// - Every other package's tests run through turbo, one package at a time
//   (they are CPU-bound; the chaos suite starts servers of its own), and
//   only the tests (`--only`): the build ran before this step, and the
//   suite's own `npm run` commands start turbo builds of their own.
//
// Each lane's output keeps turbo's `<package>:<task>:` prefixes; the step
// fails, after every lane has finished, if any did.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const SUITE = '@tokenlease/test';

/** lane — runs `command args` from the repository root, each output line prefixed; resolves to its exit code. */
function lane(prefix, command, args) {
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
        for (const line of lines) to.write(`${prefix}${line}\n`);
      });
      from.on('end', () => {
        if (pending !== '') to.write(`${prefix}${pending}\n`);
      });
    }
    child.once('error', (error) => {
      process.stderr.write(`${prefix}could not start ${command}: ${error.message}\n`);
      resolve(1);
    });
    child.once('close', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

const LANES = [
  ['the integration suite', `${SUITE}:test: `, 'npm', ['run', '--silent', '--workspace', SUITE, 'test']],
  ['the lint', 'lint: ', 'npm', ['run', '--silent', 'lint']],
  ["the other packages' tests", '', 'npx', ['turbo', 'run', 'test', `--filter=!${SUITE}`, '--only', '--concurrency=1']],
];
const codes = await Promise.all(LANES.map(([, prefix, command, args]) => lane(prefix, command, args)));
const failed = LANES.map(([name], i) => (codes[i] === 0 ? null : `${name} (exit ${codes[i]})`)).filter((f) => f !== null);
if (failed.length > 0) process.stderr.write(`npm test: failed: ${failed.join(', ')}\n`);
process.exit(failed.length > 0 ? 1 : 0);
