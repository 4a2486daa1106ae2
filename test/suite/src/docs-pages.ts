/** The project's prose pages, as the docs checks (links, samples, documented commands) read them. */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
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
