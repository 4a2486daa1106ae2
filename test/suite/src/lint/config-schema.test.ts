/**
 * The configuration files' JSON Schemas, as an editor uses them, and the
 * generated references:
 * - the deploy files name their schema on their first line, the YAML
 *   language server's way (`# yaml-language-server: $schema=<path>`), and
 *   a JSON Schema validator (ajv, draft 2020-12, as the language server
 *   reads it) finds them valid; a misspelled pool field is flagged, at the
 *   pool that holds it, and the coordinator refuses the same file;
 * - every pools or relay file the docs show is accepted by the coordinator
 *   and valid for its schema;
 * - the schema is never stricter than the coordinator: a document the
 *   coordinator accepts is valid for the editor too (a property test over
 *   generated documents; the other way round the coordinator checks more,
 *   such as a bound that is another field);
 *
 * That the checked-in schemas are what `npm run docs:reference` writes is
 * reference-pages.test.ts's.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseCoordinatorConfig, parseRelayConfig } from '@tokenlease/coordinator';
import { propertySeed } from '@tokenlease/shared/testing';
import { docsPages } from '../docs-pages.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** validatorFor — the validator of the schema `file`'s first line names, resolved from the file as the language server does. */
function validatorFor(file: string, text: string): ValidateFunction {
  const named = /^# yaml-language-server: \$schema=(\S+)\n/.exec(text);
  expect(named, `${file} names no schema on its first line`).not.toBeNull();
  const schemaPath = join(dirname(join(root, file)), (named as RegExpExecArray)[1] as string);
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajv.addKeyword('x-default');
  ajv.addKeyword('x-form');
  return ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')) as object);
}

const said = (errors: ErrorObject[] | null | undefined): string => JSON.stringify(errors ?? [], null, 1);

describe('an editor checks the deploy files against the published JSON Schemas', () => {
  it.each([
    ['deploy/pools.yaml', parseCoordinatorConfig],
    ['deploy/relay.yaml', parseRelayConfig],
  ] as const)('%s is valid for its schema and for the coordinator', (file, parse) => {
    const text = readFileSync(join(root, file), 'utf8');
    const validate = validatorFor(file, text);
    const doc: unknown = parseYaml(text);
    expect(validate(doc), said(validate.errors)).toBe(true);
    expect(() => parse(file, doc)).not.toThrow();
  });

  it('flags a misspelled pool field in deploy/pools.yaml, at the pool that holds it', () => {
    const file = 'deploy/pools.yaml';
    const text = readFileSync(join(root, file), 'utf8');
    const misspelled = text.replace(/^( {4})leaseTtlMs:/m, '$1leaseTtl:');
    expect(misspelled).not.toBe(text);
    const validate = validatorFor(file, misspelled);
    const doc: unknown = parseYaml(misspelled);
    expect(validate(doc)).toBe(false);
    const flagged = (validate.errors ?? []).filter((e) => e.keyword === 'additionalProperties');
    expect(flagged.map((e) => [e.instancePath, String(e.params['additionalProperty'])])).toContainEqual(['/pools/api', 'leaseTtl']);
    expect(() => parseCoordinatorConfig(file, doc)).toThrow(/pool "api": field "leaseTtl" is not a known field/);
  });

  it('flags a value out of its bounds and a rate in no known unit', () => {
    const validate = validatorFor('deploy/pools.yaml', readFileSync(join(root, 'deploy/pools.yaml'), 'utf8'));
    expect(validate({ pools: { api: { capacity: 10, refill: '5/s', leaseTtlMs: 5 } } })).toBe(false);
    expect(validate({ pools: { api: { capacity: 10, refill: '5/fortnight' } } })).toBe(false);
    expect(validate({ pools: { 'a.b': { capacity: 10, refill: '5/s' } } })).toBe(false);
    expect(validate({ pools: { api: { capacity: 10, refill: '5 / 2 min', classWeights: { gold: 3 } } } }), said(validate.errors)).toBe(
      true,
    );
  });
});

describe('every configuration file shown in the docs', () => {
  // A YAML block whose document names `pools` or `templates` is a pools file (a relay's when it names
  // `upstreamPrefix`); other YAML blocks are fragments of one and are left alone.
  const blocks = docsPages().flatMap((page) => {
    const text = readFileSync(join(root, page), 'utf8');
    return [...text.matchAll(/```ya?ml\n([\s\S]*?)```/g)].flatMap((match) => {
      const doc: unknown = parseYaml(match[1] as string);
      if (typeof doc !== 'object' || doc === null || !('pools' in doc || 'templates' in doc)) return [];
      const line = text.slice(0, match.index).split('\n').length;
      return [{ where: `${page}:${line}`, doc, relay: 'upstreamPrefix' in doc }];
    });
  });

  it('there are such blocks', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
  });

  it.each(blocks.map((b) => [b.where, b] as const))('%s is accepted by the coordinator and valid for the JSON Schema', (where, block) => {
    const schemaFile = block.relay ? 'deploy/relay.yaml' : 'deploy/pools.yaml';
    const validate = validatorFor(schemaFile, readFileSync(join(root, schemaFile), 'utf8'));
    expect(() => (block.relay ? parseRelayConfig : parseCoordinatorConfig)(where, block.doc)).not.toThrow();
    expect(validate(block.doc), said(validate.errors)).toBe(true);
  });
});

describe('the JSON Schema is never stricter than the coordinator', () => {
  // Mostly documents the coordinator accepts (dependent fields are brought within each other's bounds), now
  // and then a field of the wrong form: the property is about the accepted ones.
  const maybe = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
    fc.oneof({ arbitrary: arb, weight: 40 }, { arbitrary: fc.constantFrom(null, 'x', -1, 2.5, true, [], {}), weight: 1 });
  const bucket = fc.record({
    capacity: fc.integer({ min: 1, max: 5000 }),
    refill: fc.oneof(fc.constantFrom('500/s', '1/d', '3/7ms', ' 2 / 1000 ms ', '60/min', '5/h'), fc.constant({ tokens: 5, periodMs: 100 })),
  });
  const window = fc.record({ window: fc.constantFrom('100/min', { limit: 5, windowMs: 1000 }, '7 / 2 s') });
  const extras = fc.record(
    {
      leaseTtlMs: fc.integer({ min: 10, max: 10_000 }),
      maxLeaseTokens: fc.integer({ min: 1, max: 600 }),
      minGrantTokens: fc.integer({ min: 1, max: 100 }),
      maxHoldMs: fc.integer({ min: 0, max: 3000 }),
      allowance: fc.integer({ min: 0, max: 100 }),
      rate: fc.boolean(),
      maxLeases: fc.integer({ min: 1, max: 100 }),
      maxWaitingPerIdentity: fc.integer({ min: 0, max: 100 }),
      classWeights: fc.dictionary(fc.constantFrom('gold', 'constructor', '__proto__', 'x-1'), fc.integer({ min: 1, max: 1000 })),
      relayClasses: fc.dictionary(fc.constantFrom('relay', 'edge'), fc.integer({ min: 1, max: 1000 })),
      identities: fc.uniqueArray(fc.constantFrom('svc', 'edge', 'a_b'), { maxLength: 3 }),
      shadow: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  const pool = fc.tuple(fc.oneof(bucket, window), extras).chain(([kind, e]) => {
    const capacity = 'capacity' in kind ? kind.capacity : 5;
    const ttl = e.leaseTtlMs ?? 2000;
    const maxLease = e.maxLeaseTokens === undefined ? undefined : Math.min(e.maxLeaseTokens, capacity);
    const rate = e.rate === true && 'capacity' in kind && e.relayClasses === undefined;
    const classes = [...Object.keys(e.classWeights ?? {}), ...(rate ? [] : Object.keys(e.relayClasses ?? {}))];
    const fields: Record<string, fc.Arbitrary<unknown>> = {};
    const put = (key: string, value: unknown): void => {
      if (value !== undefined) fields[key] = maybe(fc.constant(value));
    };
    for (const [key, value] of Object.entries(kind)) put(key, value);
    put('leaseTtlMs', e.leaseTtlMs);
    put('maxLeaseTokens', maxLease);
    put('minGrantTokens', e.minGrantTokens === undefined ? undefined : Math.min(e.minGrantTokens, maxLease ?? 1));
    put('maxHoldMs', e.maxHoldMs === undefined ? undefined : Math.min(e.maxHoldMs, Math.floor(ttl / 2)));
    put('allowance', 'capacity' in kind ? e.allowance : undefined);
    put('leaseMode', rate ? 'rate' : e.rate === undefined ? undefined : 'chunk');
    put('maxLeases', e.maxLeases);
    put('maxWaitingPerIdentity', e.maxWaitingPerIdentity);
    put('classWeights', e.classWeights);
    put('relayClasses', rate ? undefined : e.relayClasses);
    put('classIdentities', classes.length === 0 || e.identities === undefined ? undefined : { [classes[0] as string]: e.identities });
    put('shadow', e.shadow);
    return fc.record(fields);
  });
  const docArb = fc.record(
    {
      pools: fc.dictionary(fc.constantFrom('api', 'b-2', '__proto__', 'constructor', 'x:y'), pool, { minKeys: 1, maxKeys: 3 }),
      templates: maybe(fc.dictionary(fc.constantFrom('tenant:*', 'k*'), pool, { maxKeys: 2 })),
      subjectPrefix: maybe(fc.constantFrom('tokenlease', 'acme.limits')),
      operatorIdentities: maybe(fc.uniqueArray(fc.constantFrom('ops', 'admin'), { maxLength: 2 })),
      bindIdentity: maybe(fc.boolean()),
    },
    { requiredKeys: ['pools'] },
  );

  it('accepts every document the coordinator accepts', () => {
    const validate = validatorFor('deploy/pools.yaml', readFileSync(join(root, 'deploy/pools.yaml'), 'utf8'));
    const seed = propertySeed('src/lint/config-schema.test.ts');
    let accepted = 0;
    fc.assert(
      fc.property(docArb, (text) => {
        // As a file holds it: a key such as __proto__ is an own key of the parsed document, as JSON.parse and YAML make it.
        const doc: unknown = JSON.parse(JSON.stringify(text));
        let ok = true;
        try {
          parseCoordinatorConfig('generated.json', doc);
        } catch {
          ok = false;
        }
        if (!ok) return;
        accepted += 1;
        expect(validate(doc), `${JSON.stringify(doc)}\n${said(validate.errors)}`).toBe(true);
      }),
      { seed, numRuns: 1500 },
    );
    process.stdout.write(`config-schema.test.ts: ${accepted} of 1500 documents accepted by the coordinator, all valid for the schema\n`);
    expect(accepted).toBeGreaterThan(500);
  });
});
