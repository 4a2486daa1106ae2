/** The project's prose pages, as the docs checks (links, samples, documented commands) read them. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
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
