/**
 * The generated reference pages (docs/reference/) say what their schemas
 * say: every page of the list in tools/gen-reference.mjs (`npm run
 * docs:reference`) is rendered from the built packages and compared with
 * the file on disk. A flag, default or description changed without
 * regenerating fails here (and so does a JSON Schema of coordinator/schema/), naming the first line that differs and the
 * command that fixes it. The pages are docs pages too: the link and sample
 * checks read them (docs-pages.ts).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { docsPages } from '../docs-pages.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** ReferencePage — one entry of the script's list: where the page goes, and what writes it. */
export interface ReferencePage {
  readonly path: string;
  readonly render: () => string;
}

/** referencePages — the script's list, PAGES of tools/gen-reference.mjs (importing it writes nothing). */
async function referencePages(): Promise<readonly ReferencePage[]> {
  const script = (await import(pathToFileURL(join(root, 'tools', 'gen-reference.mjs')).href)) as { PAGES: readonly ReferencePage[] };
  return script.PAGES;
}

/** firstDifference — the first line (1-based) where `a` and `b` differ, and each one's text there. */
function firstDifference(a: string, b: string): { line: number; onDisk: string; rendered: string } {
  const [left, right] = [a.split('\n'), b.split('\n')];
  let i = 0;
  while (i < left.length && i < right.length && left[i] === right[i]) i++;
  return { line: i + 1, onDisk: left[i] ?? '(end of file)', rendered: right[i] ?? '(end of file)' };
}

/** stalePages — one line for each page under `base` that is missing or differs from what renders it, saying how to fix it. */
export function stalePages(base: string, pages: readonly ReferencePage[]): string[] {
  return pages.flatMap((page) => {
    const file = join(base, page.path);
    if (!existsSync(file)) return [`${page.path} is missing: run npm run docs:reference`];
    const rendered = page.render();
    const onDisk = readFileSync(file, 'utf8');
    if (onDisk === rendered) return [];
    const { line, onDisk: was, rendered: is } = firstDifference(onDisk, rendered);
    return [`${page.path}:${line} is stale (${JSON.stringify(was)}, the schemas say ${JSON.stringify(is)}): run npm run docs:reference`];
  });
}

describe('generated reference pages', () => {
  it('are what their schemas render (after a change to one: npm run docs:reference)', async () => {
    const pages = await referencePages();
    expect(pages.map((page) => page.path)).toEqual(
      expect.arrayContaining(['docs/reference/command-line.md', 'docs/reference/pools-file.md', 'coordinator/schema/pools.schema.json']),
    );
    expect(stalePages(root, pages)).toEqual([]);
  });

  it('are docs pages: the link and sample checks read them', async () => {
    const pages = await referencePages();
    const markdown = pages.map((page) => page.path).filter((path) => path.endsWith('.md'));
    expect(docsPages()).toEqual(expect.arrayContaining(markdown));
  });

  describe('the check can fail', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenlease-reference-pages-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('on a stale page and a missing one; not on a fresh one', () => {
      const page = (path: string, text: string): ReferencePage => ({ path, render: () => text });
      mkdirSync(join(dir, 'docs', 'reference'), { recursive: true });
      writeFileSync(join(dir, 'docs/reference/fresh.md'), '# Fresh\n\n| `--a` | one |\n');
      writeFileSync(join(dir, 'docs/reference/stale.md'), '# Stale\n\n| `--a` | one |\n');
      const pages = [
        page('docs/reference/fresh.md', '# Fresh\n\n| `--a` | one |\n'),
        page('docs/reference/stale.md', '# Stale\n\n| `--a` | two |\n'),
        page('docs/reference/missing.md', '# Missing\n'),
      ];
      expect(stalePages(dir, pages)).toEqual([
        'docs/reference/stale.md:3 is stale ("| `--a` | one |", the schemas say "| `--a` | two |"): run npm run docs:reference',
        'docs/reference/missing.md is missing: run npm run docs:reference',
      ]);
    });
  });
});
