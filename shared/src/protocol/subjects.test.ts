import fc from 'fast-check';
import { thrown } from '../testing/thrown.js';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '../testing/seed.js';
import { TokenleaseError } from '../errors.js';
import {
  ANONYMOUS_IDENTITY,
  DEFAULT_SUBJECT_PREFIX,
  legacySubject,
  poolSubject,
  subjectVersion,
  POOL_NAME_LENGTH_MAX,
  assertPoolName,
  assertSubjectPrefix,
  isOperatorSubject,
  parseSubject,
  poolNameProblem,
  serviceSubject,
  subjectFor,
  type Op,
} from './subjects.js';

const OPS: readonly Op[] = ['acquire', 'return', 'status'];
const P = DEFAULT_SUBJECT_PREFIX;

describe('poolNameProblem', () => {
  it.each(['a', 'api', 'API_calls-2', 'x'.repeat(POOL_NAME_LENGTH_MAX), '!#$%&()+,/:;<=?@[]^`{|}~', 'v1', 'acquire'])(
    'accepts %j',
    (name) => {
      expect(poolNameProblem(name)).toBeNull();
      expect(() => assertPoolName(name)).not.toThrow();
    },
  );

  it.each<[string, unknown]>([
    ['a dot', 'a.b'],
    ['a star', '*'],
    ['a greater-than', 'a>'],
    ['a space', 'a b'],
    ['a tab', 'a\tb'],
    ['a control char', 'a\u0000'],
    ['a DEL', '\u007f'],
    ['a non-ASCII char', 'café'],
    ['an empty string', ''],
    ['129 chars', 'x'.repeat(POOL_NAME_LENGTH_MAX + 1)],
    ['a number', 5],
    ['undefined', undefined],
    ['null', null],
  ])('rejects %s', (_name, name) => {
    expect(typeof poolNameProblem(name)).toBe('string');
    if (typeof name === 'string') {
      const error = thrown(TokenleaseError, () => assertPoolName(name));
      expect(error.code).toBe('invalid-pool-name');
      expect(error.pool).toBe(name);
    }
  });
});

describe('subjects', () => {
  it.each<[string, Op, string, string | undefined, string]>([
    [P, 'acquire', 'api', undefined, 'tokenlease.v2.acquire.api.anon'],
    [P, 'return', 'api', 'alice', 'tokenlease.v2.return.api.alice'],
    ['org.team', 'status', 'p-1', 'ops:1', 'org.team.v2.status.p-1.ops:1'],
  ])('subjectFor(%j, %j, %j, %j) is %j and parses back', (prefix, op, pool, identity, subject) => {
    expect(subjectFor(prefix, op, pool, identity)).toBe(subject);
    expect(parseSubject(prefix, subject)).toEqual({ op, pool, identity: identity ?? ANONYMOUS_IDENTITY });
  });

  it('subjectFor throws for a pool name or identity that is not one subject token', () => {
    for (const pool of ['a.b', '*', '>', '', 'a b']) {
      expect(thrown(TokenleaseError, () => subjectFor(P, 'acquire', pool)).code).toBe('invalid-pool-name');
      expect(thrown(TokenleaseError, () => subjectFor(P, 'acquire', 'api', pool)).code).toBe('invalid-identity');
    }
  });

  it('serviceSubject is the three-token wildcard under the version; poolSubject pins the pool; legacySubject is all of v1', () => {
    expect(serviceSubject(P)).toBe('tokenlease.v2.*.*.*');
    expect(serviceSubject('org.team')).toBe('org.team.v2.*.*.*');
    expect(poolSubject(P, 'api')).toBe('tokenlease.v2.*.api.*');
    expect(legacySubject(P)).toBe('tokenlease.v1.>');
  });

  it.each<[string, number | null]>([
    ['tokenlease.v1.acquire.api', 1],
    ['tokenlease.v2.acquire.api.anon', 2],
    ['tokenlease.v10.x', 10],
    ['tokenlease.v1', 1],
    ['tokenlease.vx.acquire', null],
    ['tokenlease.v01.acquire', null],
    ['other.v1.acquire.api', null],
  ])('subjectVersion(%j) is %j', (subject, version) => {
    expect(subjectVersion(P, subject)).toBe(version);
  });

  it.each([
    ['wrong prefix', 'other.v2.acquire.api.anon'],
    ['prefix as a substring', 'tokenleasex.v2.acquire.api.anon'],
    ['prefix only', 'tokenlease'],
    ['the old version', 'tokenlease.v1.acquire.api'],
    ['the old version with an identity', 'tokenlease.v1.acquire.api.anon'],
    ['version as a prefix of another', 'tokenlease.v20.acquire.api.anon'],
    ['no version', 'tokenlease.acquire.api.anon'],
    ['unknown op', 'tokenlease.v2.steal.api.anon'],
    ['no identity', 'tokenlease.v2.acquire.api'],
    ['op with no pool', 'tokenlease.v2.acquire'],
    ['empty pool', 'tokenlease.v2.acquire..anon'],
    ['empty identity', 'tokenlease.v2.acquire.api.'],
    ['extra tokens', 'tokenlease.v2.acquire.a.b.c'],
    ['a wildcard pool', 'tokenlease.v2.acquire.*.anon'],
    ['a wildcard identity', 'tokenlease.v2.acquire.api.*'],
    ['a tail wildcard', 'tokenlease.v2.acquire.>'],
    ['the service wildcard', 'tokenlease.v2.*.*.*'],
    ['an empty subject', ''],
    ['upper-case op', 'tokenlease.v2.ACQUIRE.api.anon'],
  ])('parseSubject returns null for %s', (_name, subject) => {
    expect(parseSubject(P, subject)).toBeNull();
  });

  it('parseSubject does not read a subject under a longer prefix as its own', () => {
    expect(parseSubject('org', 'org.team.v2.acquire.api.anon')).toBeNull();
    expect(parseSubject('org.team', 'org.v2.acquire.api.anon')).toBeNull();
  });

  it('parseSubject reads the same subject alike under each prefix, asked in turn, and its answer cannot be changed', () => {
    const subject = 'org.team.v2.acquire.api.anon';
    expect(parseSubject('org.team', subject)).toEqual({ op: 'acquire', pool: 'api', identity: 'anon' });
    expect(parseSubject('org', subject)).toBeNull();
    const parts = parseSubject('org.team', subject);
    expect(parts).toEqual({ op: 'acquire', pool: 'api', identity: 'anon' });
    expect(() => Object.assign(parts as object, { pool: 'other' })).toThrow(TypeError);
    expect(parseSubject('org.team', subject)?.pool).toBe('api');
  });

  it('isOperatorSubject: an operator op on the pool token _ only', () => {
    expect(isOperatorSubject(P, `${P}.v2.pools._.ops`)).toBe(true);
    expect(isOperatorSubject(P, `${P}.v2.reload._.ops`)).toBe(true);
    expect(isOperatorSubject(P, `${P}.v2.pools.api.ops`)).toBe(false);
    expect(isOperatorSubject(P, `${P}.v2.acquire._.ops`)).toBe(false);
    expect(isOperatorSubject(P, `other.v2.pools._.ops`)).toBe(false);
  });

  it.each(['tokenlease', 'a.b.c', 'org-1.team_2'])('assertSubjectPrefix accepts %j', (prefix) => {
    expect(() => assertSubjectPrefix(prefix)).not.toThrow();
  });

  it.each(['', '.', 'a.', '.a', 'a..b', 'a.*', '>', 'a b', 'a.\u0001'])('assertSubjectPrefix rejects %j', (prefix) => {
    expect(thrown(TokenleaseError, () => assertSubjectPrefix(prefix)).code).toBe('invalid-subject');
  });
});

describe('subject properties', () => {
  const seed = propertySeed('src/protocol/subjects.test.ts');
  const tokenChar = fc
    .integer({ min: 0x21, max: 0x7e })
    .filter((c) => c !== 0x2e && c !== 0x2a && c !== 0x3e)
    .map((c) => String.fromCharCode(c));
  const token = fc.string({ unit: tokenChar, minLength: 1, maxLength: POOL_NAME_LENGTH_MAX });
  const prefix = fc
    .array(fc.string({ unit: tokenChar, minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 })
    .map((t) => t.join('.'));

  it('parseSubject(subjectFor(x)) is x for every valid prefix, op, pool and identity', () => {
    fc.assert(
      fc.property(prefix, fc.constantFrom(...OPS), token, token, (pre, op, pool, identity) => {
        expect(poolNameProblem(pool)).toBeNull();
        expect(() => assertSubjectPrefix(pre)).not.toThrow();
        const subject = subjectFor(pre, op, pool, identity);
        expect(parseSubject(pre, subject)).toEqual({ op, pool, identity });
        expect(subject.split('.')).toHaveLength(pre.split('.').length + 4);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('parseSubject never throws and only returns valid parts', () => {
    const subject = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc
        .tuple(
          fc.constantFrom('tokenlease.v2.', 'tokenlease.v2.acquire.', 'tokenlease.v2.status.api.', 'tokenlease.v1.return.', 'x.v2.'),
          fc.string({ maxLength: 40 }),
        )
        .map(([h, t]) => h + t),
    );
    fc.assert(
      fc.property(subject, (s) => {
        const parts = parseSubject(P, s);
        if (parts === null) return;
        expect(OPS).toContain(parts.op);
        expect(poolNameProblem(parts.pool)).toBeNull();
        expect(subjectFor(P, parts.op, parts.pool, parts.identity)).toBe(s);
      }),
      { seed, numRuns: 1000 },
    );
  });
});
