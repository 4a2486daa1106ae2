// Writes the generated references: the configuration pages in
// docs/reference/ and the JSON Schemas editors read, from the schemas in
// the packages' sources (built first: `npm run docs:reference` runs
// `tsc -b`). `--check` writes nothing and exits 1, naming each stale file,
// when a checked-in copy differs from what would be written.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** PAGES — every generated file: its path from the repository root and what renders it (a string). */
export async function pages() {
  const coordinator = await import('@tokenlease/coordinator/internal');
  const agent = await import('@tokenlease/agent/internal');
  const json = (value) => `${JSON.stringify(value, null, 2)}\n`;
  return [
    { path: 'docs/reference/pools-file.md', render: () => coordinator.poolsFileReference() },
    { path: 'docs/reference/relay-file.md', render: () => coordinator.relayFileReference() },
    { path: 'docs/reference/agent-options.md', render: () => agent.keeperOptionsReference() },
    { path: 'coordinator/schema/pools.schema.json', render: () => json(coordinator.poolsFileJsonSchema()) },
    { path: 'coordinator/schema/relay.schema.json', render: () => json(coordinator.relayFileJsonSchema()) },
  ];
}

/** stale — the pages whose file differs from what they render. */
export async function stale() {
  const found = [];
  for (const page of await pages()) {
    let onDisk = null;
    try {
      onDisk = readFileSync(new URL(page.path, `file://${root}`), 'utf8');
    } catch {
      onDisk = null;
    }
    if (onDisk !== page.render()) found.push(page.path);
  }
  return found;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const found = await stale();
    for (const path of found) process.stderr.write(`${path} is stale: run npm run docs:reference\n`);
    process.exit(found.length === 0 ? 0 : 1);
  }
  for (const page of await pages()) {
    writeFileSync(new URL(page.path, `file://${root}`), page.render());
    process.stdout.write(`wrote ${page.path}\n`);
  }
}
