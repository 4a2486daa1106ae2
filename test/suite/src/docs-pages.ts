/** The project's prose pages, as the docs checks (links, samples, documented commands) read them; and the generated API reference's. */
import { readdirSync } from 'node:fs';
import { join, sep } from 'node:path';
import { REPO_ROOT } from '@tokenlease/harness/paths';

/** FOLDERS — the folders of prose pages: docs/ and its generated configuration reference. */
const FOLDERS = ['docs', 'docs/reference'];

/** docsPages — README.md and every *.md of FOLDERS (sorted within each), relative to the repository root. */
export function docsPages(): string[] {
  const docs = FOLDERS.flatMap((folder) =>
    readdirSync(join(REPO_ROOT, folder))
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => `${folder}/${name}`),
  );
  return ['README.md', ...docs];
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
