/** The project's prose pages, as the docs checks (links, samples, documented commands) read them; and the generated API reference's. */
import { existsSync, readdirSync } from 'node:fs';
import { join, sep } from 'node:path';
import { REPO_ROOT } from '@tokenlease/harness/paths';

/** markdownIn — the `.md` files of `folder` (relative to the repository root), sorted, as paths from the root; none if it is missing. */
function markdownIn(folder: string): string[] {
  const dir = join(REPO_ROOT, folder);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `${folder}/${name}`);
}

/** docsPages — README.md, every docs/*.md and every generated docs/reference/*.md (each folder sorted), relative to the repository root. */
export function docsPages(): string[] {
  return ['README.md', ...markdownIn('docs'), ...markdownIn('docs/reference')];
}

/**
 * apiPages — every page of the generated API reference (docs/api/, `npm run docs:api`), sorted, relative to the
 * repository root: the links check follows their links too; the other checks leave them to their doc comments.
 */
export function apiPages(): string[] {
  return readdirSync(join(REPO_ROOT, 'docs', 'api'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/api/${name.split(sep).join('/')}`)
    .sort();
}
