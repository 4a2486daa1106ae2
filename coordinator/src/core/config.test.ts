import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed, thrown } from '@tokenlease/shared/testing';
import { assertSubjectPrefix, poolNameProblem, tokenScale } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import { DEFAULT_TTL_MS, parseCoordinatorConfig, type CoordinatorConfig, type PoolConfig } from './config.js';

const SOURCE = 'etc/tokenlease/pools.yaml';

function onlyPool(config: CoordinatorConfig): PoolConfig {
  expect(config.pools).toHaveLength(1);
  const pool = config.pools[0];
  if (pool === undefined) throw new Error('no pool');
  return pool;
}

/** A document with one pool "api" of the given fields. */
const onePool = (fields: Record<string, unknown>, top: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...top,
  pools: { api: fields },
});

describe('parseCoordinatorConfig accepts a valid document and fills in defaults', () => {
  it('fills every default of a minimal two-pool document', () => {
    const config = parseCoordinatorConfig(SOURCE, {
      pools: {
        api: { capacity: 500, refill: '1000/s' },
        slow: { capacity: 7, refill: { tokens: 1, periodMs: 60_000 }, leaseTtlMs: 5000 },
      },
    });
    expect(config).toEqual({
      subjectPrefix: 'tokenlease',
      bindIdentity: false,
      operatorIdentities: new Set(),
      quietPeriodMs: 5000, // the longest TTL
      pools: [
        {
          name: 'api',
          capacity: 500,
          refill: { tokens: 1000, periodMs: 1000 },
          leaseTtlMs: DEFAULT_TTL_MS,
          maxLeaseTokens: 50, // max(1, floor(500 / 10))
          minGrantTokens: 13, // ceil(50 / 4)
          maxHoldMs: 250, // min(250, 2000 / 4)
          allowance: 0,
          classWeights: new Map(),
          relayClasses: new Map(),
          leaseMode: 'chunk',
          maxLeases: 100_000,
          maxWaiting: 10_000,
          maxLeasesPerIdentity: 50_000, // ceil(maxLeases / 2)
          maxWaitingPerIdentity: 5_000, // ceil(maxWaiting / 2)
          clockDriftLimit: 0.05,
          classIdentities: new Map(),
          shadow: false,
          window: null,
          concurrency: null,
        },
        {
          name: 'slow',
          capacity: 7,
          refill: { tokens: 1, periodMs: 60_000 },
          leaseTtlMs: 5000,
          maxLeaseTokens: 1, // max(1, floor(0.7))
          minGrantTokens: 1,
          maxHoldMs: 250,
          allowance: 0,
          classWeights: new Map(),
          relayClasses: new Map(),
          leaseMode: 'chunk',
          maxLeases: 100_000,
          maxWaiting: 10_000,
          maxLeasesPerIdentity: 50_000, // ceil(maxLeases / 2)
          maxWaitingPerIdentity: 5_000, // ceil(maxWaiting / 2)
          clockDriftLimit: 0.05,
          classIdentities: new Map(),
          shadow: false,
          window: null,
          concurrency: null,
        },
      ],
      templates: [],
      shadow: false,
    });
    expect(DEFAULT_TTL_MS).toBe(2000);
  });

  it.each<[number, number, number]>([
    // capacity, maxLeaseTokens = max(1, floor(capacity/10)), minGrantTokens = ceil(maxLeaseTokens/4)
    [1, 1, 1],
    [9, 1, 1],
    [19, 1, 1],
    [20, 2, 1],
    [59, 5, 2],
    [90, 9, 3],
    [1000, 100, 25],
    [1001, 100, 25],
    [1010, 101, 26],
  ])('capacity %i defaults to maxLeaseTokens %i and minGrantTokens %i', (capacity, maxLeaseTokens, minGrantTokens) => {
    const pool = onlyPool(parseCoordinatorConfig(SOURCE, onePool({ capacity, refill: '1/s' })));
    expect(pool.maxLeaseTokens).toBe(maxLeaseTokens);
    expect(pool.minGrantTokens).toBe(minGrantTokens);
  });

  it.each<[number, number, number, number]>([
    // maxLeases, maxLeasesPerIdentity = ceil(maxLeases/2); maxWaiting, maxWaitingPerIdentity = ceil(maxWaiting/2)
    [1, 1, 0, 0],
    [2, 1, 1, 1],
    [3, 2, 3, 2],
    [200, 100, 10_000, 5_000],
  ])(
    'maxLeases %i defaults maxLeasesPerIdentity to %i; maxWaiting %i, maxWaitingPerIdentity to %i',
    (maxLeases, leases, maxWaiting, waiting) => {
      const pool = onlyPool(parseCoordinatorConfig(SOURCE, onePool({ capacity: 10, refill: '1/s', maxLeases, maxWaiting })));
      expect([pool.maxLeasesPerIdentity, pool.maxWaitingPerIdentity]).toEqual([leases, waiting]);
    },
  );

  it('defaults a template’s maxPoolsPerIdentity to half its maxPools, and keeps an explicit one', () => {
    const config = parseCoordinatorConfig(SOURCE, {
      templates: { 'a:*': { capacity: 10, refill: '1/s' }, 'b:*': { capacity: 10, refill: '1/s', maxPools: 7, maxPoolsPerIdentity: 7 } },
    });
    expect(config.templates.map((t) => [t.maxPools, t.maxPoolsPerIdentity])).toEqual([
      [100_000, 50_000],
      [7, 7],
    ]);
  });

  it.each<[number, number]>([
    // leaseTtlMs, maxHoldMs = min(250, floor(ttl/4))
    [10, 2],
    [11, 2],
    [100, 25],
    [999, 249],
    [1000, 250],
    [2000, 250],
    [3_600_000, 250],
  ])('leaseTtlMs %i defaults maxHoldMs to %i', (leaseTtlMs, maxHoldMs) => {
    const config = parseCoordinatorConfig(SOURCE, onePool({ capacity: 100, refill: '10/s', leaseTtlMs }));
    expect(onlyPool(config).maxHoldMs).toBe(maxHoldMs);
    expect(config.quietPeriodMs).toBe(leaseTtlMs);
  });

  it('keeps explicit values at the edges of their ranges', () => {
    const config = parseCoordinatorConfig(
      SOURCE,
      onePool(
        {
          capacity: 100,
          refill: '3/7ms',
          leaseTtlMs: 1000,
          maxLeaseTokens: 100,
          minGrantTokens: 100,
          maxHoldMs: 500,
          allowance: 250,
          clockDriftLimit: 0.49,
        },
        { subjectPrefix: 'acme.limits', quietPeriodMs: 1000 },
      ),
    );
    expect(config.subjectPrefix).toBe('acme.limits');
    expect(config.quietPeriodMs).toBe(1000);
    expect(onlyPool(config)).toEqual({
      name: 'api',
      capacity: 100,
      refill: { tokens: 3, periodMs: 7 },
      leaseTtlMs: 1000,
      maxLeaseTokens: 100,
      minGrantTokens: 100,
      maxHoldMs: 500, // = floor(ttl / 2), the ceiling
      allowance: 250,
      classWeights: new Map(),
      relayClasses: new Map(),
      leaseMode: 'chunk',
      maxLeases: 100_000,
      maxWaiting: 10_000,
      maxLeasesPerIdentity: 50_000,
      maxWaitingPerIdentity: 5_000,
      clockDriftLimit: 0.49,
      classIdentities: new Map(),
      shadow: false,
      window: null,
      concurrency: null,
    });
  });

  it('reads a window pool as its limit per window, in either form, with the bucket fields that describe it', () => {
    const config = parseCoordinatorConfig(SOURCE, {
      pools: { a: { window: '100/min' }, b: { window: { limit: 7, windowMs: 1500 }, leaseTtlMs: 500 } },
    });
    expect(config.pools[0]).toMatchObject({
      window: { limit: 100, windowMs: 60_000 },
      capacity: 100,
      refill: { tokens: 100, periodMs: 60_000 },
      allowance: 0,
      leaseMode: 'chunk',
      maxLeaseTokens: 10,
    });
    expect(config.pools[1]).toMatchObject({ window: { limit: 7, windowMs: 1500 }, capacity: 7, maxLeaseTokens: 1 });
  });

  it('reads operatorIdentities as a set of identity tokens', () => {
    const pool = { capacity: 100, refill: '100/s' };
    const config = parseCoordinatorConfig(SOURCE, onePool(pool, { bindIdentity: true, operatorIdentities: ['operator', 'oncall-2'] }));
    expect(config.operatorIdentities).toEqual(new Set(['operator', 'oncall-2']));
  });

  it('accepts maxHoldMs 0 and a quiet period longer than every TTL', () => {
    const config = parseCoordinatorConfig(SOURCE, onePool({ capacity: 10, refill: '1/s', maxHoldMs: 0 }, { quietPeriodMs: 60_000 }));
    expect(onlyPool(config).maxHoldMs).toBe(0);
    expect(config.quietPeriodMs).toBe(60_000);
  });

  it('takes the quiet period default from the longest TTL of several pools', () => {
    const config = parseCoordinatorConfig(SOURCE, {
      pools: {
        a: { capacity: 10, refill: '1/s', leaseTtlMs: 300 },
        b: { capacity: 10, refill: '1/s', leaseTtlMs: 9000 },
        c: { capacity: 10, refill: '1/s' },
      },
    });
    expect(config.quietPeriodMs).toBe(9000);
    expect(config.pools.map((p) => p.name)).toEqual(['a', 'b', 'c']);
  });
});

describe('parseCoordinatorConfig refuses a bad document, naming file, pool and field', () => {
  const ok = { capacity: 100, refill: '100/s' };
  // name, document, field, pool (undefined for a top-level field), fragment of the message
  const cases: ReadonlyArray<readonly [string, unknown, string, string | undefined, string]> = [
    ['missing capacity', onePool({ refill: '100/s' }), 'capacity', 'api', 'is required'],
    ['capacity 0', onePool({ ...ok, capacity: 0 }), 'capacity', 'api', 'got 0'],
    ['capacity -5', onePool({ ...ok, capacity: -5 }), 'capacity', 'api', 'got -5'],
    ['capacity 2.5', onePool({ ...ok, capacity: 2.5 }), 'capacity', 'api', 'got 2.5'],
    ['capacity "100" (a string)', onePool({ ...ok, capacity: '100' }), 'capacity', 'api', 'integer'],
    ['capacity too large for the rate', onePool({ capacity: 100_000, refill: '1/d' }), 'capacity', 'api', '100000'],
    ['refill "fast"', onePool({ ...ok, refill: 'fast' }), 'refill', 'api', '"fast"'],
    ['missing refill', onePool({ capacity: 100 }), 'refill', 'api', 'is required'],
    ['refill 0/s', onePool({ ...ok, refill: '0/s' }), 'refill', 'api', 'rate tokens'],
    ['refill { tokens: 0 }', onePool({ ...ok, refill: { tokens: 0, periodMs: 1000 } }), 'refill', 'api', 'rate tokens'],
    ['refill { tokens } without periodMs', onePool({ ...ok, refill: { tokens: 5 } }), 'refill', 'api', 'period'],
    ['refill 42 (a number)', onePool({ ...ok, refill: 42 }), 'refill', 'api', '"500/s"'],
    [
      'refill with an unknown key',
      onePool({ ...ok, refill: { tokens: 5, periodMs: 1000, burst: 2 } }),
      'refill.burst',
      'api',
      'not a known',
    ],
    ['window beside capacity', onePool({ window: '10/s', capacity: 10 }), 'capacity', 'api', 'does not apply to a window pool'],
    ['window beside refill', onePool({ window: '10/s', refill: '10/s' }), 'refill', 'api', 'does not apply to a window pool'],
    ['window with rate leases', onePool({ window: '10/s', leaseMode: 'rate' }), 'leaseMode', 'api', '"chunk" for a window pool'],
    ['window with an allowance', onePool({ window: '10/s', allowance: 5 }), 'allowance', 'api', 'only be a larger limit'],
    ['window "often"', onePool({ window: 'often' }), 'window', 'api', '"often"'],
    ['window { limit: 0 }', onePool({ window: { limit: 0, windowMs: 1000 } }), 'window', 'api', 'rate tokens'],
    ['window without windowMs', onePool({ window: { limit: 5 } }), 'window', 'api', 'period'],
    ['window with tokens for limit', onePool({ window: { tokens: 5, windowMs: 1000 } }), 'window.tokens', 'api', 'not a known'],
    ['window 5 (a number)', onePool({ window: 5 }), 'window', 'api', '"100/min"'],
    ['unknown pool field (typo)', onePool({ ...ok, capcity: 100 }), 'capcity', 'api', 'is not a known field'],
    ['unknown pool field leaseTtl', onePool({ ...ok, leaseTtl: 100 }), 'leaseTtl', 'api', 'leaseTtlMs'],
    ['unknown top-level field', { ...onePool(ok), pool: {} }, 'pool', undefined, 'is not a known field'],
    ['maxLeaseTokens > capacity', onePool({ ...ok, maxLeaseTokens: 101 }), 'maxLeaseTokens', 'api', '[1, 100]'],
    ['maxLeaseTokens 0', onePool({ ...ok, maxLeaseTokens: 0 }), 'maxLeaseTokens', 'api', 'got 0'],
    ['minGrantTokens > maxLeaseTokens', onePool({ ...ok, maxLeaseTokens: 8, minGrantTokens: 9 }), 'minGrantTokens', 'api', '[1, 8]'],
    ['minGrantTokens 0', onePool({ ...ok, minGrantTokens: 0 }), 'minGrantTokens', 'api', 'got 0'],
    ['leaseTtlMs 5', onePool({ ...ok, leaseTtlMs: 5 }), 'leaseTtlMs', 'api', 'got 5'],
    ['leaseTtlMs over an hour', onePool({ ...ok, leaseTtlMs: 3_600_001 }), 'leaseTtlMs', 'api', 'got 3600001'],
    ['leaseTtlMs "2s"', onePool({ ...ok, leaseTtlMs: '2s' }), 'leaseTtlMs', 'api', '"2s"'],
    ['maxHoldMs over half the TTL', onePool({ ...ok, leaseTtlMs: 1000, maxHoldMs: 501 }), 'maxHoldMs', 'api', '[0, 500]'],
    ['maxHoldMs -1', onePool({ ...ok, maxHoldMs: -1 }), 'maxHoldMs', 'api', 'got -1'],
    ["pool name 'a.b'", { pools: { 'a.b': ok } }, 'name', 'a.b', "'.'"],
    ["pool name 'a*'", { pools: { 'a*': ok } }, 'name', 'a*', "'*'"],
    ["pool name 'a b'", { pools: { 'a b': ok } }, 'name', 'a b', 'printable'],
    ['pool name too long', { pools: { ['x'.repeat(129)]: ok } }, 'name', 'x'.repeat(129), '128'],
    ['pool that is not a mapping', { pools: { api: 5 } }, '(pool)', 'api', 'mapping'],
    [
      'quietPeriodMs shorter than a TTL',
      onePool({ ...ok, leaseTtlMs: 2000 }, { quietPeriodMs: 1999 }),
      'quietPeriodMs',
      undefined,
      'got 1999',
    ],
    [
      'quietPeriodMs shorter than the longest TTL',
      { quietPeriodMs: 1000, pools: { a: { ...ok, leaseTtlMs: 1000 }, b: { ...ok, leaseTtlMs: 1001 } } },
      'quietPeriodMs',
      undefined,
      '[1001,',
    ],
    ['empty pools', { pools: {} }, 'pools', undefined, 'at least one pool'],
    ['missing pools', {}, 'pools', undefined, 'at least one pool'],
    ['pools as a list', { pools: [ok] }, 'pools', undefined, 'must be a mapping'],
    ['document null', null, '(document)', undefined, 'mapping'],
    ['document a list', [], '(document)', undefined, 'mapping'],
    ['document a string', 'pools: {}', '(document)', undefined, 'mapping'],
    ['subjectPrefix with a wildcard', onePool(ok, { subjectPrefix: 'acme.*' }), 'subjectPrefix', undefined, 'without'],
    ['subjectPrefix with an empty token', onePool(ok, { subjectPrefix: 'acme..x' }), 'subjectPrefix', undefined, 'without'],
    ['subjectPrefix not a string', onePool(ok, { subjectPrefix: 5 }), 'subjectPrefix', undefined, 'must be a string'],
    ['operatorIdentities not a list', onePool(ok, { operatorIdentities: 'operator' }), 'operatorIdentities', undefined, 'must be a list'],
    [
      'operatorIdentities with a wildcard',
      onePool(ok, { operatorIdentities: ['ops', 'ops.*'] }),
      'operatorIdentities',
      undefined,
      'entry "ops.*" is no identity token',
    ],
    ['operatorIdentities with a number', onePool(ok, { operatorIdentities: [7] }), 'operatorIdentities', undefined, 'entry 7'],
    ['operatorIdentities named twice', onePool(ok, { operatorIdentities: ['ops', 'ops'] }), 'operatorIdentities', undefined, 'twice'],
    [
      'operatorIdentities over the limit',
      onePool(ok, { operatorIdentities: Array.from({ length: 101 }, (_, i) => `ops${i}`) }),
      'operatorIdentities',
      undefined,
      'at most 100',
    ],
    [
      'maxLeasesPerIdentity above maxLeases',
      onePool({ ...ok, maxLeases: 10, maxLeasesPerIdentity: 11 }),
      'maxLeasesPerIdentity',
      'api',
      '[1, 10]',
    ],
    ['maxLeasesPerIdentity 0', onePool({ ...ok, maxLeasesPerIdentity: 0 }), 'maxLeasesPerIdentity', 'api', 'got 0'],
    ['clockDriftLimit 0.5', onePool({ ...ok, clockDriftLimit: 0.5 }), 'clockDriftLimit', 'api', '[0, 0.5), got 0.5'],
    ['clockDriftLimit negative', onePool({ ...ok, clockDriftLimit: -0.01 }), 'clockDriftLimit', 'api', 'got -0.01'],
    ['clockDriftLimit as a string', onePool({ ...ok, clockDriftLimit: '2%' }), 'clockDriftLimit', 'api', 'got "2%"'],
    [
      'maxWaitingPerIdentity above maxWaiting',
      onePool({ ...ok, maxWaiting: 0, maxWaitingPerIdentity: 1 }),
      'maxWaitingPerIdentity',
      'api',
      '[0, 0]',
    ],
    [
      'maxPoolsPerIdentity above maxPools',
      { templates: { 'tenant:*': { ...ok, maxPools: 5, maxPoolsPerIdentity: 6 } } },
      'maxPoolsPerIdentity',
      'tenant:*',
      '[1, 5]',
    ],
    ['classIdentities a list', onePool({ ...ok, classIdentities: ['svc'] }), 'classIdentities', 'api', 'must be a mapping'],
    [
      'classIdentities of a class that is not weighed',
      onePool({ ...ok, classWeights: { gold: 2 }, classIdentities: { premium: ['svc'] } }),
      'classIdentities',
      'api',
      'class "premium" is in neither classWeights nor relayClasses',
    ],
    [
      'classIdentities with a bad class name',
      onePool({ ...ok, classIdentities: { 'a b': ['svc'] } }, {}),
      'classIdentities',
      'api',
      'class "a b" must be',
    ],
    [
      'classIdentities with a wildcard identity',
      onePool({ ...ok, classWeights: { gold: 2 }, classIdentities: { gold: ['svc.*'] } }),
      'classIdentities.gold',
      'api',
      'entry "svc.*" is no identity token',
    ],
    [
      'classIdentities naming an identity twice',
      onePool({ ...ok, classWeights: { gold: 2 }, classIdentities: { gold: ['svc', 'svc'] } }),
      'classIdentities.gold',
      'api',
      'names "svc" twice',
    ],
    [
      'bindIdentity null (a true/false field takes no empty value)',
      onePool(ok, { bindIdentity: null }),
      'bindIdentity',
      undefined,
      'true or false',
    ],
    ['shadow null in a pool', onePool({ ...ok, shadow: null }), 'shadow', 'api', 'true or false'],
    [
      'top-level classIdentities not a list',
      onePool(ok, { classIdentities: { gold: 'svc' } }),
      'classIdentities.gold',
      undefined,
      'must be a list of at most 1000 identity tokens',
    ],
  ];

  it.each(cases)('%s', (_name, doc, field, pool, fragment) => {
    const error = thrown(CoordinatorError, () => parseCoordinatorConfig(SOURCE, doc));
    expect(error.code).toBe('config-invalid');
    expect(error.field).toBe(field);
    expect(error.pool).toBe(pool);
    expect(error.message.startsWith(`${SOURCE}: `)).toBe(true);
    expect(error.message).toContain(`field "${field}"`);
    if (pool !== undefined) expect(error.message).toContain(`pool ${JSON.stringify(pool)}`);
    else expect(error.message).not.toContain('pool "');
    expect(error.message).toContain(fragment);
  });

  it('keeps the underlying rate error as the cause', () => {
    const error = thrown(CoordinatorError, () => parseCoordinatorConfig(SOURCE, onePool({ ...ok, refill: 'fast' })));
    expect(error.cause).toMatchObject({ name: 'TokenleaseError', code: 'invalid-rate' });
  });

  it('is deterministic about which problem of a pool it names first (refill before capacity)', () => {
    const error = thrown(CoordinatorError, () => parseCoordinatorConfig(SOURCE, onePool({ capacity: 0, refill: 'fast' })));
    expect(error.field).toBe('refill');
  });

  it('refuses a good pool next to a bad one: nothing is half-applied', () => {
    const error = thrown(CoordinatorError, () => parseCoordinatorConfig(SOURCE, { pools: { good: ok, bad: { ...ok, capacity: 0 } } }));
    expect(error.pool).toBe('bad');
    expect(error.field).toBe('capacity');
  });
});

describe('an empty value (null) is the field left out, but for the true/false fields', () => {
  it('fills the defaults of null fields', () => {
    const fields = {
      capacity: 100,
      refill: '100/s',
      leaseTtlMs: null,
      classWeights: null,
      relayClasses: null,
      leaseMode: null,
      window: null,
      concurrency: null,
    };
    const config = parseCoordinatorConfig(SOURCE, {
      pools: { api: fields },
      templates: null,
      operatorIdentities: null,
      subjectPrefix: null,
    });
    expect(onlyPool(config)).toMatchObject({ leaseTtlMs: DEFAULT_TTL_MS, leaseMode: 'chunk', window: null });
    expect(onlyPool(config).classWeights.size).toBe(0);
    expect(config.subjectPrefix).toBe('tokenlease');
    expect(config.operatorIdentities.size).toBe(0);
  });

  it('still requires capacity and refill given as null', () => {
    expect(thrown(CoordinatorError, () => parseCoordinatorConfig(SOURCE, onePool({ capacity: null, refill: '1/s' }))).field).toBe(
      'capacity',
    );
    expect(thrown(CoordinatorError, () => parseCoordinatorConfig(SOURCE, onePool({ capacity: 5, refill: null }))).field).toBe('refill');
  });
});

describe('parseCoordinatorConfig on arbitrary documents', () => {
  /** Mostly `arb`, sometimes any JSON value. */
  const maybe = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
    fc.oneof({ arbitrary: arb, weight: 12 }, { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 });
  const poolFields = {
    capacity: maybe(fc.oneof(fc.integer({ min: 1, max: 2000 }), fc.integer({ min: -2, max: 2000 }), fc.constant(100_000))),
    refill: maybe(
      fc.oneof(
        fc.constantFrom('500/s', '1/d', '3/7ms', '10/5s', ' 2 / 1000 ms ', '500/s', '0/s', 'fast'),
        fc.record({ tokens: fc.integer({ min: 0, max: 1e9 }), periodMs: fc.integer({ min: 0, max: 90_000_000 }) }),
      ),
    ),
    leaseTtlMs: maybe(fc.oneof(fc.integer({ min: 5, max: 5000 }), fc.integer({ min: 0, max: 4_000_000 }))),
    maxLeaseTokens: maybe(fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: -1, max: 2000 }))),
    minGrantTokens: maybe(fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: -1, max: 500 }))),
    maxHoldMs: maybe(fc.oneof(fc.integer({ min: 0, max: 10 }), fc.integer({ min: -1, max: 3000 }))),
    capcity: fc.constant(1), // a typo
  };
  const poolArb = fc
    .oneof(
      { arbitrary: fc.record(poolFields, { requiredKeys: ['capacity', 'refill'] }), weight: 4 },
      { arbitrary: fc.record(poolFields, { requiredKeys: [] }), weight: 1 },
    )
    .map((pool) => {
      // The typo stays only in pools without the real field, so that some documents are valid.
      if (!('capacity' in pool)) return pool;
      const { capcity: _typo, ...rest } = pool;
      return rest;
    });
  const poolNameArb = fc.oneof(
    { arbitrary: fc.constantFrom('api', 'b-2', 'C_3'), weight: 8 },
    { arbitrary: fc.constantFrom('a.b', 'x*', '', 'a b'), weight: 1 },
    { arbitrary: fc.string({ maxLength: 4 }), weight: 1 },
  );
  const docArb = fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record(
        {
          pools: fc.oneof(
            { arbitrary: fc.dictionary(poolNameArb, poolArb, { minKeys: 1, maxKeys: 3 }), weight: 8 },
            { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 },
          ),
          quietPeriodMs: maybe(fc.oneof(fc.integer({ min: 5000, max: 10_000 }), fc.integer({ min: 0, max: 5_000_000 }))),
          subjectPrefix: maybe(fc.constantFrom('tokenlease', 'acme.rl', 'acme.rl', 'a..b', 'a.>', '')),
        },
        { requiredKeys: ['pools'] },
      ),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );

  it('returns a config within every documented limit, or throws CoordinatorError(config-invalid) and nothing else', () => {
    const seed = propertySeed('src/core/config.test.ts');
    let accepted = 0;
    fc.assert(
      fc.property(docArb, (doc) => {
        let config: CoordinatorConfig;
        try {
          config = parseCoordinatorConfig(SOURCE, doc);
        } catch (error) {
          expect(error).toBeInstanceOf(CoordinatorError);
          const e = error as CoordinatorError;
          expect(e.code).toBe('config-invalid');
          expect(e.field).toBeDefined();
          expect(e.message.startsWith(`${SOURCE}: `)).toBe(true);
          return;
        }
        accepted += 1;
        expect(() => assertSubjectPrefix(config.subjectPrefix)).not.toThrow();
        expect(config.pools.length).toBeGreaterThan(0);
        for (const p of config.pools) {
          expect(poolNameProblem(p.name)).toBeNull();
          expect(() => tokenScale(p.capacity, p.refill)).not.toThrow();
          expect(p.leaseTtlMs).toBeGreaterThanOrEqual(10);
          expect(p.leaseTtlMs).toBeLessThanOrEqual(3_600_000);
          expect(p.maxLeaseTokens).toBeGreaterThanOrEqual(1);
          expect(p.maxLeaseTokens).toBeLessThanOrEqual(p.capacity);
          expect(p.minGrantTokens).toBeGreaterThanOrEqual(1);
          expect(p.minGrantTokens).toBeLessThanOrEqual(p.maxLeaseTokens);
          expect(p.maxHoldMs).toBeGreaterThanOrEqual(0);
          expect(p.maxHoldMs).toBeLessThanOrEqual(p.leaseTtlMs / 2);
          expect(config.quietPeriodMs).toBeGreaterThanOrEqual(p.leaseTtlMs);
        }
      }),
      { seed, numRuns: 2000 },
    );
    console.log(`config.test.ts: ${accepted} of 2000 documents accepted`);
    expect(accepted).toBeGreaterThan(0);
  });
});
