/** The project's prose pages, as the docs checks (links, samples, documented commands) read them. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@tokenlease/harness/paths';

/** docsPages — README.md and every docs/*.md (sorted), relative to the repository root. */
export function docsPages(): string[] {
  const docs = readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}
