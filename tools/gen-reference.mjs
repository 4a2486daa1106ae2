// `npm run docs:reference` (after `tsc -b`): writes the generated references
// from the built packages: the pages of docs/reference/ and the JSON Schemas
// of the configuration files, which the coordinator package ships for
// editors (coordinator/schema/). PAGES is the list: each is its path from
// the repository root and the function that renders it, so a new one is
// one line. test/suite/src/lint/reference-pages.test.ts renders the same
// list and fails while a file on disk differs from it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { httpOptionsReference, keeperOptionsReference } from '@tokenlease/agent/internal';
import {
  commandLineReference,
  poolsFileJsonSchema,
  poolsFileReference,
  relayFileJsonSchema,
  relayFileReference,
} from '@tokenlease/coordinator/internal';

const json = (schema) => () => `${JSON.stringify(schema(), null, 2)}\n`;

/** PAGES — every generated file: where it goes, and what writes it (a function of nothing, returning the whole file). */
export const PAGES = [
  { path: 'docs/reference/command-line.md', render: commandLineReference },
  { path: 'docs/reference/pools-file.md', render: poolsFileReference },
  { path: 'docs/reference/relay-file.md', render: relayFileReference },
  { path: 'docs/reference/agent-options.md', render: keeperOptionsReference },
  { path: 'docs/reference/http-options.md', render: httpOptionsReference },
  { path: 'coordinator/schema/pools.schema.json', render: json(poolsFileJsonSchema) },
  { path: 'coordinator/schema/relay.schema.json', render: json(relayFileJsonSchema) },
];

const root = fileURLToPath(new URL('..', import.meta.url));

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const page of PAGES) {
    const file = join(root, page.path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, page.render());
    console.log(`wrote ${page.path}`);
  }
}
