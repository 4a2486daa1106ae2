/**
 * Every relative link in README.md and docs/*.md (and BENCHMARKS.md, which
 * links into docs/, and the generated API reference, docs/api/) leads
 * somewhere: the file (or folder) it names exists, and the anchor after
 * `#`, if any, is a heading of the Markdown file it points into, slugged as
 * GitHub renders it, or an HTML anchor there (`<a id="…">`, as the API
 * reference puts before its headings). The README is an entry point whose table must reach every section in
 * one click, so a renamed heading or a moved page fails here, not in a
 * reader's browser. Links inside fenced code blocks are not links;
 * absolute URLs (http:, https:, mailto:) are not checked.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { apiPages, docsPages } from '../docs-pages.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** proseLines — the lines of `markdown` outside fenced code blocks (a fence's lines become empty, so line numbers stay). */
function proseLines(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split('\n').map((line) => {
    const open = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence === null && open !== undefined) {
      fence = open;
      return '';
    }
    if (fence !== null) {
      if (line.trim().startsWith(fence)) fence = null;
      return '';
    }
    return line;
  });
}

/** slug — a heading's anchor as GitHub makes it: the rendered text lowercased, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/[`*]/g, '') // code and emphasis marks are not rendered
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** anchors — every heading anchor of a Markdown text, repeated headings numbered `-1`, `-2`, … as GitHub does, and its HTML anchors. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(markdown)) {
    for (const html of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(html[1] ?? '');
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** brokenLinks — `file:line: target (why)` for each relative link of `files` (paths under `base`) that leads nowhere. */
export function brokenLinks(base: string, files: readonly string[]): string[] {
  const problems: string[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (path: string): Set<string> => {
    let found = anchorCache.get(path);
    if (found === undefined) {
      found = anchors(readFileSync(path, 'utf8'));
      anchorCache.set(path, found);
    }
    return found;
  };
  for (const file of files) {
    const path = resolve(base, file);
    proseLines(readFileSync(path, 'utf8')).forEach((line, index) => {
      // [text](target) or [text](target "title"); link text may hold `code` and one level of brackets.
      for (const match of line.matchAll(/\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = match[1] ?? '';
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const hash = target.indexOf('#');
        const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
        const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
        const into = pathPart === '' ? path : resolve(dirname(path), pathPart);
        const where = `${file}:${index + 1}: ${target}`;
        if (!existsSync(into)) {
          problems.push(`${where} (no such file: ${relative(base, into)})`);
          continue;
        }
        if (anchor === null) continue;
        if (statSync(into).isDirectory() || !into.endsWith('.md')) {
          problems.push(`${where} (an anchor into something that is not a Markdown file)`);
          continue;
        }
        if (!anchorsOf(into).has(anchor)) problems.push(`${where} (no heading with anchor #${anchor} in ${relative(base, into)})`);
      }
    });
  }
  return problems;
}

describe('links in README.md and docs/*.md', () => {
  it('lead to files that exist and to headings those files have (BENCHMARKS.md, which links into docs/, and docs/api/ too)', () => {
    const api = apiPages();
    const files = [...docsPages(), 'BENCHMARKS.md', ...api];
    expect(files.length).toBeGreaterThan(1);
    expect(api.length).toBeGreaterThan(1);
    expect(brokenLinks(root, files)).toEqual([]);
  });

  it('the README reaches every docs page in one click', () => {
    const readme = proseLines(readFileSync(join(root, 'README.md'), 'utf8')).join('\n');
    const linked = new Set([...readme.matchAll(/\]\((docs\/[^)#\s]+\.md)(?:#[^)\s]*)?\)/g)].map((m) => m[1]));
    expect(docsPages().filter((file) => file !== 'README.md' && !linked.has(file))).toEqual([]);
  });

  describe('the check can fail', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenlease-docs-links-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('on a missing file, a missing anchor, and an anchor into a folder; not on good links, code blocks or URLs', () => {
      mkdirSync(join(dir, 'docs'));
      writeFileSync(
        join(dir, 'docs', 'page.md'),
        ['# Page', '', '## Side by side: `npm run bench:compare`', '', '## Twice', '', '## Twice', '', '<a id="own-anchor"></a>', ''].join(
          '\n',
        ),
      );
      writeFileSync(
        join(dir, 'README.md'),
        [
          '# Sample',
          '',
          '## The promise (B + r·T)',
          '',
          'Good: [page](docs/page.md), [a heading](docs/page.md#side-by-side-npm-run-benchcompare),',
          '[the second Twice](docs/page.md#twice-1), [here](#the-promise-b--rt), [`code` in text](docs/), [an HTML anchor](docs/page.md#own-anchor),',
          '[a URL](https://example.com/missing.md#nowhere).',
          '',
          'Broken: [gone](docs/gone.md), [no such heading](docs/page.md#no-such-heading),',
          '[a third Twice](docs/page.md#twice-2), [into a folder](docs/#anchor).',
          '',
          '```md',
          '[inside a code block](docs/also-gone.md)',
          '```',
          '',
        ].join('\n'),
      );
      expect(brokenLinks(dir, ['README.md'])).toEqual([
        'README.md:9: docs/gone.md (no such file: docs/gone.md)',
        `README.md:9: docs/page.md#no-such-heading (no heading with anchor #no-such-heading in ${join('docs', 'page.md')})`,
        `README.md:10: docs/page.md#twice-2 (no heading with anchor #twice-2 in ${join('docs', 'page.md')})`,
        'README.md:10: docs/#anchor (an anchor into something that is not a Markdown file)',
      ]);
    });
  });
});
