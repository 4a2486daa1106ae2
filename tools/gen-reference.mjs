// `npm run docs:reference` (after `tsc -b`): writes the generated reference
// pages of docs/reference/ from the built packages. PAGES is the list: each
// page is its path from the repository root and the function that renders
// it, so a new page is one line. test/suite/src/lint/reference-pages.test.ts
// renders the same list and fails while a page on disk differs from it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { commandLineReference } from '@tokenlease/coordinator/internal';

/** PAGES — every generated page: where it goes, and what writes it (a function of nothing, returning the whole file). */
export const PAGES = [{ path: 'docs/reference/command-line.md', render: commandLineReference }];

const root = fileURLToPath(new URL('..', import.meta.url));

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const page of PAGES) {
    const file = join(root, page.path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, page.render());
    console.log(`wrote ${page.path}`);
  }
}
