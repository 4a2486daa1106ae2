/**
 * Every `--json` command prints nothing on stdout but its JSON: a script
 * that pipes `npm run -s sweep -- --json` into a parser must not meet
 * turbo's banner or a readable line first. Each command runs as a user
 * types it (npm, then the script's turbo build step, then node), with the
 * shortest options it has (the bench's `--quick`), and all of its stdout
 * must parse; the bench's must say it ran at the quick scale. The
 * simulator's is JSON Lines, a line per scenario.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@tokenlease/harness/paths';

const S = 1000;

/** npmRun — `npm run -s <args>` from the repository root: exit code, stdout, stderr; killed after `boundMs`. */
function npmRun(args: readonly string[], boundMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn('npm', ['run', '-s', ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
    const timer = setTimeout(() => child.kill('SIGTERM'), boundMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

const COMMANDS: ReadonlyArray<readonly [string, readonly string[], number]> = [
  [
    'sweep',
    [
      'sweep',
      '--',
      '--json',
      '--agents',
      '2',
      '--lease-sizes',
      '5',
      '--ttls',
      '1s',
      '--lease-modes',
      'chunk',
      '--reports',
      '0',
      '--duration',
      '2s',
      '--seed',
      '1',
    ],
    60 * S,
  ],
  ['chaos', ['chaos', '--', '--json', '--short', '--only', 'kill-agents', '--seed', '1'], 120 * S],
  // The bench's own short mode: every measurement at a small scale (the full bench is `npm run bench`).
  ['bench', ['bench', '--', '--json', '--quick'], 120 * S],
];

describe('--json commands print only JSON on stdout', () => {
  for (const [name, args, boundMs] of COMMANDS) {
    it(`npm run -s ${args.join(' ')}`, { timeout: boundMs + 10 * S }, async () => {
      const { code, stdout, stderr } = await npmRun(args, boundMs);
      expect(code, `${name} exited ${code}: ${stderr}`).toBe(0);
      expect(stdout.trim().length).toBeGreaterThan(0);
      expect(() => JSON.parse(stdout) as unknown, `stdout of ${name}: ${stdout.slice(0, 400)}`).not.toThrow();
      if (name === 'bench') expect((JSON.parse(stdout) as { quick?: unknown }).quick).toBe(true);
    });
  }

  // The simulator's --json is JSON Lines: one object per scenario, its summary on stderr.
  it('npm run -s sim -- --json --scenarios 3 --seed 1 --duration 2s', { timeout: 70 * S }, async () => {
    const { code, stdout, stderr } = await npmRun(['sim', '--', '--json', '--scenarios', '3', '--seed', '1', '--duration', '2s'], 60 * S);
    expect(code, `sim exited ${code}: ${stderr}`).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { seed?: unknown }).seed)).toEqual([1, 2, 3]);
    expect(stderr).toContain('3 passed, 0 failed');
  });
});
