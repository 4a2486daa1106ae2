/**
 * What is generated from the configuration schemas (config-schema.ts): the
 * JSON Schema of a pools file and of a relay file, which editors read
 * (`coordinator/schema/*.schema.json`, named by the YAML language server's
 * `# yaml-language-server: $schema=…` line), and the reference pages
 * (`docs/reference/pools-file.md`, `docs/reference/relay-file.md`).
 * `npm run docs:reference` writes them; a test fails when a checked-in copy
 * differs from what these functions give.
 */
import { fieldTable, generatedNote, tidySchema, type JsonSchema } from '@tokenlease/shared/reference';
import { z } from 'zod';
import { POOL_FIELDS, POOLS_FILE, RELAY_FILE, TEMPLATE_FIELDS, UPLINK } from './config-schema.js';

/** SCHEMA_BASE — where the published schemas live, for their `$id`. */
const SCHEMA_BASE = 'https://github.com/tokenlease/tokenlease/blob/main/coordinator/schema';

/** tidied — `schema`'s JSON Schema (as written: defaults not filled in), tidied for people and editors. */
function tidied(schema: z.ZodType): JsonSchema {
  return tidySchema(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as JsonSchema;
}

function jsonSchema(schema: z.ZodType, name: string, title: string): JsonSchema {
  const { $schema, ...rest } = tidied(schema);
  return { $schema, $id: `${SCHEMA_BASE}/${name}`, title, ...rest };
}

/** poolsFileJsonSchema — the JSON Schema of a coordinator's pools file (coordinator/schema/pools.schema.json). */
export function poolsFileJsonSchema(): JsonSchema {
  return jsonSchema(POOLS_FILE, 'pools.schema.json', 'tokenlease coordinator pools file');
}

/** relayFileJsonSchema — the JSON Schema of a relay's file (coordinator/schema/relay.schema.json). */
export function relayFileJsonSchema(): JsonSchema {
  return jsonSchema(RELAY_FILE, 'relay.schema.json', 'tokenlease relay file');
}

/** table — the reference table of a strict object's fields; a pools file's `pools` and `templates` are mappings of pool fields. */
function table(schema: z.ZodObject, skip: ReadonlySet<string> = new Set()): string {
  const forms = new Map([
    ['pools', 'pool name → pool fields'],
    ['templates', '`"<prefix>*"` → pool and template fields'],
  ]);
  return fieldTable(tidied(schema), skip, forms);
}

const GENERATED = generatedNote('coordinator/src/core/config-schema.ts');

/** poolsFileReference — docs/reference/pools-file.md. */
export function poolsFileReference(): string {
  const templateOnly = new Set(Object.keys(POOL_FIELDS.shape));
  return [
    GENERATED,
    '',
    '# Pools file reference',
    '',
    'Every field a coordinator’s configuration file (`pools.yaml`, or JSON) may hold, with its form, default and meaning.',
    'Written by hand elsewhere: [what each setting is for](../configuration.md). An empty value (`null`) is the same as',
    'leaving a field out, except for the `true`/`false` fields. A default in words is derived from the fields it names.',
    '',
    'Editors with the YAML language server check a file against the JSON Schema',
    '[`coordinator/schema/pools.schema.json`](../../coordinator/schema/pools.schema.json) (in an npm project:',
    '`node_modules/@tokenlease/coordinator/schema/pools.schema.json`) when its first line names it, relative to the file:',
    '',
    '```yaml',
    '# yaml-language-server: $schema=node_modules/@tokenlease/coordinator/schema/pools.schema.json',
    '```',
    '',
    '## Top level',
    '',
    table(POOLS_FILE),
    '',
    '## Pool fields',
    '',
    'Each entry of `pools` (and of `templates`). A pool is a bucket (`capacity` and `refill`) or a window (`window`).',
    '',
    table(POOL_FIELDS),
    '',
    '## Template fields',
    '',
    'An entry of `templates` takes every pool field, and these:',
    '',
    table(TEMPLATE_FIELDS, templateOnly),
    '',
  ].join('\n');
}

/** relayFileReference — docs/reference/relay-file.md. */
export function relayFileReference(): string {
  return [
    GENERATED,
    '',
    '# Relay file reference',
    '',
    'A relay’s configuration file: a coordinator’s ([pools file reference](pools-file.md)) whose pools are relayed, with',
    'the root’s prefix and the uplink’s settings. A relayed pool leases chunks, without an allowance or shadow mode, and',
    'its `capacity` and `refill` (or `window`) are the root’s. JSON Schema:',
    '[`coordinator/schema/relay.schema.json`](../../coordinator/schema/relay.schema.json).',
    '',
    '## Top level',
    '',
    table(RELAY_FILE),
    '',
    '## `uplink`',
    '',
    table(UPLINK),
    '',
  ].join('\n');
}
