/**
 * What is generated from the configuration schemas (config-schema.ts): the
 * JSON Schema of a pools file and of a relay file, which editors read
 * (`coordinator/schema/*.schema.json`, named by the YAML language server's
 * `# yaml-language-server: $schema=…` line), and the reference pages
 * (`docs/reference/pools-file.md`, `docs/reference/relay-file.md`).
 * `npm run docs:reference` writes them; a test fails when a checked-in copy
 * differs from what these functions give.
 */
import { z } from 'zod';
import { POOL_FIELDS, POOLS_FILE, RELAY_FILE, TEMPLATE_FIELDS, UPLINK } from './config-schema.js';

type Json = Record<string, unknown>;

/** SCHEMA_BASE — where the published schemas live, for their `$id`. */
const SCHEMA_BASE = 'https://github.com/tokenlease/tokenlease/blob/main/coordinator/schema';

/**
 * tidy — a generated JSON Schema made for people and editors: an optional
 * field's `anyOf [form, null]` carries the form's description and default
 * at its own level, where editors look for a hover text.
 */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) out[key] = tidy(value);
  const anyOf = out['anyOf'];
  if (Array.isArray(anyOf) && anyOf.length === 2 && (anyOf[1] as Json)['type'] === 'null') {
    const form = anyOf[0] as Json;
    for (const key of ['description', 'x-default', 'x-form']) {
      if (form[key] === undefined) continue;
      out[key] = form[key];
      delete form[key];
    }
  }
  return out;
}

function jsonSchema(schema: z.ZodType, name: string, title: string): Json {
  const generated = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  const { $schema, ...rest } = tidy(generated) as Json;
  return { $schema, $id: `${SCHEMA_BASE}/${name}`, title, ...rest };
}

/** poolsFileJsonSchema — the JSON Schema of a coordinator's pools file (coordinator/schema/pools.schema.json). */
export function poolsFileJsonSchema(): Json {
  return jsonSchema(POOLS_FILE, 'pools.schema.json', 'tokenlease coordinator pools file');
}

/** relayFileJsonSchema — the JSON Schema of a relay's file (coordinator/schema/relay.schema.json). */
export function relayFileJsonSchema(): Json {
  return jsonSchema(RELAY_FILE, 'relay.schema.json', 'tokenlease relay file');
}

/** formOf — a field's form in words, from its JSON Schema. */
function formOf(node: Json): string {
  if (typeof node['x-form'] === 'string') return node['x-form'];
  const anyOf = node['anyOf'];
  if (Array.isArray(anyOf)) {
    const forms = (anyOf as Json[]).filter((n) => n['type'] !== 'null').map(formOf);
    return forms.join(', or ');
  }
  if (Array.isArray(node['enum'])) return (node['enum'] as unknown[]).map((v) => `\`${JSON.stringify(v)}\``).join(' or ');
  const type = node['type'];
  if (type === 'integer') {
    const [min, max] = [node['minimum'], node['maximum']];
    if (typeof max === 'number' && max < Number.MAX_SAFE_INTEGER) return `integer in [${String(min)}, ${max}]`;
    return `integer ≥ ${String(min)}`;
  }
  if (type === 'number') {
    const below = node['exclusiveMaximum'];
    return typeof below === 'number' ? `number in [${String(node['minimum'])}, ${below})` : 'number';
  }
  if (type === 'boolean') return '`true` or `false`';
  if (Array.isArray(type)) return (type as string[]).filter((t) => t !== 'null').join(' or ') + ' or `null`';
  const pattern = node['pattern'];
  if (type === 'string') return typeof pattern === 'string' ? `string matching \`${pattern}\`` : 'string';
  if (type === 'array') {
    const max = node['maxItems'];
    return `list of distinct ${formOf(node['items'] as Json)}${typeof max === 'number' ? `, at most ${max}` : ''}`;
  }
  if (type === 'object') {
    const values = node['additionalProperties'];
    if (typeof values === 'object' && values !== null && node['properties'] === undefined)
      return `mapping of name → ${formOf(values as Json)}`;
    const keys = Object.keys((node['properties'] as Json | undefined) ?? {});
    return keys.length > 0 ? `\`{ ${keys.join(', ')} }\`` : 'mapping';
  }
  return 'any';
}

/** table — one row per field of `schema` (a strict object): field, form, default, meaning. */
function table(schema: z.ZodObject, skip: ReadonlySet<string> = new Set()): string {
  const root = tidy(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as Json;
  const properties = root['properties'] as Record<string, Json>;
  const required = new Set((root['required'] as string[] | undefined) ?? []);
  const rows = Object.entries(properties)
    .filter(([field]) => !skip.has(field))
    .map(([field, node]) => {
      const stripped = { ...node };
      const form = field === 'pools' || field === 'templates' ? 'mapping of name → pool fields' : formOf(stripped);
      const fallback = required.has(field) ? 'required' : ((node['x-default'] as string | undefined) ?? '');
      const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
      return `| \`${field}\` | ${cell(form)} | ${cell(fallback === '' ? '—' : fallback)} | ${cell(typeof node['description'] === 'string' ? node['description'] : '')} |`;
    });
  return ['| Field | Form | Default | Meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

const GENERATED =
  '<!-- Generated by `npm run docs:reference` from coordinator/src/core/config-schema.ts: edit the schema, not this page. -->';

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
