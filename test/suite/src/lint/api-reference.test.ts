/**
 * The API reference (docs/api/) is what `npm run docs:api` makes of the
 * sources now: tools/api-docs.mjs writes it again into a temporary folder,
 * with no TypeDoc warning (warnings are errors: a public export without a
 * doc comment, a type the public API names that no entry exports, a broken
 * `{@link}`), and every file there is in docs/api/, byte for byte, and no
 * other. So a changed doc comment or export that was not regenerated fails
 * here, and names the pages to write again. TypeDoc reads the packages'
 * sources, and shared's declarations in shared/dist (agent and coordinator
 * re-export from it): `tsc -b` has run before this, as `npm test` runs it.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const API_DIR = join(root, 'docs', 'api');
const SCRIPT = join(root, 'tools', 'api-docs.mjs');

/** TypeDoc over three packages takes some seconds, more on a busy machine. */
const GENERATE_TIMEOUT_MS = 120_000;

/** generate — runs tools/api-docs.mjs into `out`: its exit code and what it printed (its warnings, on stderr). */
function generate(out: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT, '--out', out], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, output: output.join('') }));
  });
}

/** files — every file under `dir`, relative to it with `/`, sorted. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => statSync(join(dir, name)).isFile())
    .map((name) => name.split(sep).join('/'))
    .sort();
}

/** staleFiles — how the reference in `committed` differs from the `fresh` one: each file missing, extra or different there. */
export function staleFiles(committed: string, fresh: string): string[] {
  const have = new Set(files(committed));
  const want = files(fresh);
  const problems: string[] = [];
  for (const file of want) {
    if (!have.has(file)) {
      problems.push(`${file}: missing`);
      continue;
    }
    const old = readFileSync(join(committed, file), 'utf8').split('\n');
    const now = readFileSync(join(fresh, file), 'utf8').split('\n');
    const line = now.findIndex((text, index) => old[index] !== text);
    if (line !== -1 || old.length !== now.length) {
      problems.push(`${file}: differs from line ${(line === -1 ? now.length : line) + 1}`);
    }
  }
  const wanted = new Set(want);
  for (const file of have) if (!wanted.has(file)) problems.push(`${file}: extra (no entry makes it any more)`);
  return problems;
}

describe('the API reference (docs/api/)', () => {
  it(
    'is what `npm run docs:api` makes of the sources now, file by file, with no TypeDoc warning',
    async () => {
      const out = mkdtempSync(join(tmpdir(), 'tokenlease-api-docs-'));
      try {
        const { code, output } = await generate(join(out, 'api'));
        expect(code, `tools/api-docs.mjs failed (TypeDoc's warnings are errors):\n${output}`).toBe(0);
        expect(staleFiles(API_DIR, join(out, 'api')), 'docs/api/ is stale: run `npm run docs:api` and commit docs/api/').toEqual([]);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    GENERATE_TIMEOUT_MS,
  );

  describe('the check can fail', () => {
    let dir = '';
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'tokenlease-api-stale-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('on a missing, an extra and a changed file; not on equal ones', () => {
      const write = (tree: string, file: string, text: string): void => {
        mkdirSync(join(dir, tree, file, '..'), { recursive: true });
        writeFileSync(join(dir, tree, file), text);
      };
      for (const tree of ['committed', 'fresh']) {
        write(tree, 'README.md', '# API reference\n');
        write(tree, 'agent/agent.md', '# agent\n\nthe same\n');
      }
      write('committed', 'agent/agent.http.md', '# http\n\nthe old comment\n');
      write('fresh', 'agent/agent.http.md', '# http\n\nthe new comment\n');
      write('committed', 'agent/gone.md', '# a page no entry makes\n');
      write('fresh', 'shared/shared.clock.md', '# a new page\n');
      write('committed', 'coordinator/README.md', '# coordinator\n');
      write('fresh', 'coordinator/README.md', '# coordinator\n\none more line\n');
      expect(staleFiles(join(dir, 'committed'), join(dir, 'fresh'))).toEqual([
        'agent/agent.http.md: differs from line 3',
        'coordinator/README.md: differs from line 3',
        'shared/shared.clock.md: missing',
        'agent/gone.md: extra (no entry makes it any more)',
      ]);
    });
  });
});
