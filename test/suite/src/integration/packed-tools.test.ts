/**
 * The tools install and run the way a user gets them: the simulator, the
 * sweep and the chaos suite packed with what they depend on, installed into
 * a fresh project with no workspace links, and each bin run from there —
 * the chaos suite against real processes it starts from the installed
 * harness and coordinator.
 */
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '@tokenlease/harness/fleet';
import { installInto, packWorkspaces } from '@tokenlease/harness/pack';
import { spawnProcess, stopAll } from '@tokenlease/harness/processes';

const S = 1000;
const PRODUCT = ['shared', 'agent', 'coordinator'];
const TOOLS = ['test/harness', 'test/sim', 'test/sweep', 'test/chaos'];

describe('the tools from their tarballs', () => {
  let app: string;

  beforeAll(async () => {
    const dir = scratchDir();
    const packed = await packWorkspaces([...PRODUCT, ...TOOLS], join(dir, 'tarballs'));
    for (const { dir: name, paths } of packed) {
      expect(
        paths.filter((p) => p.startsWith('src/') || p.includes('.test.') || p.endsWith('.map')),
        `${name}'s tarball holds sources, tests or source maps`,
      ).toEqual([]);
    }
    app = join(dir, 'app');
    await installInto(
      app,
      packed.map((p) => p.tarball),
    );
  }, 240 * S);

  afterAll(async () => {
    await stopAll();
  });

  /** runBin — an installed bin's exit code, stdout lines and stderr, from the project's folder. */
  async function runBin(bin: string, args: readonly string[]): Promise<{ code: number | null; lines: string[]; stderr: string }> {
    const child = spawnProcess(bin, join(app, 'node_modules', '.bin', bin), args);
    const { code } = await child.exited;
    return { code, lines: child.lines, stderr: child.stderr() };
  }

  it('install as real folders, each tool with its bin', () => {
    for (const name of ['harness', 'sim', 'sweep', 'chaos']) {
      const installed = join(app, 'node_modules', '@tokenlease', name);
      expect(realpathSync(installed), `${name} is linked, not installed`).toBe(installed);
    }
    for (const bin of ['tokenlease-sim', 'tokenlease-sweep', 'tokenlease-chaos'])
      expect(realpathSync(join(app, 'node_modules', '.bin', bin))).toContain(join(app, 'node_modules', '@tokenlease'));
  });

  it('tokenlease-sim runs scenarios and finds no violation', { timeout: 120 * S }, async () => {
    const { code, lines, stderr } = await runBin('tokenlease-sim', ['--scenarios', '3', '--seed', '5', '--duration', '5s']);
    expect(code, stderr).toBe(0);
    expect(lines.join('\n')).toMatch(/; 0 violations$/m);
  });

  it('tokenlease-sweep prints its rows (two settings, two baselines) as JSON, none over the envelope', { timeout: 120 * S }, async () => {
    const { code, lines, stderr } = await runBin('tokenlease-sweep', [
      ...['--agents', '4', '--capacity', '50', '--refill', '100/s', '--lease-sizes', '5,10', '--ttls', '1s'],
      ...['--lease-modes', 'chunk', '--reports', '0', '--duration', '5s', '--seed', '7', '--json'],
    ]);
    expect(code, stderr).toBe(0);
    const report = JSON.parse(lines.join('\n')) as { rows: Array<{ strategy: string; leaseSize: number | null; overAdmitted: number }> };
    expect(report.rows).toHaveLength(4);
    expect(report.rows.filter((r) => r.strategy === 'lease').map((r) => r.leaseSize)).toEqual([5, 10]);
    expect(report.rows.filter((r) => r.strategy === 'lease').map((r) => r.overAdmitted)).toEqual([0, 0]);
  });

  it('tokenlease-chaos runs a scenario against real processes and verifies its fault', { timeout: 120 * S }, async () => {
    const { code, lines, stderr } = await runBin('tokenlease-chaos', ['--short', '--only', 'kill-agents', '--seed', '7', '--json']);
    expect(code, stderr).toBe(0);
    const rows = JSON.parse(lines.join('\n')) as Array<{ scenario: string; faultVerified: boolean; envelopeViolations: number }>;
    expect(rows.map((r) => [r.scenario, r.faultVerified, r.envelopeViolations])).toEqual([['kill-agents', true, 0]]);
  });
});
