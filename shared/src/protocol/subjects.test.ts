import fc from 'fast-check';
import { thrown } from '../testing/thrown.js';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '../testing/seed.js';
import { TokenleaseError } from '../errors.js';
import {
  DEFAULT_SUBJECT_PREFIX,
  POOL_NAME_LENGTH_MAX,
  assertPoolName,
  assertSubjectPrefix,
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
  it.each<[string, Op, string, string]>([
    [P, 'acquire', 'api', 'tokenlease.v1.acquire.api'],
    [P, 'return', 'api', 'tokenlease.v1.return.api'],
    ['org.team', 'status', 'p-1', 'org.team.v1.status.p-1'],
  ])('subjectFor(%j, %j, %j) is %j and parses back', (prefix, op, pool, subject) => {
    expect(subjectFor(prefix, op, pool)).toBe(subject);
    expect(parseSubject(prefix, subject)).toEqual({ op, pool });
  });

  it('subjectFor throws invalid-pool-name for a name that is not one subject token', () => {
    for (const pool of ['a.b', '*', '>', '', 'a b']) {
      expect(thrown(TokenleaseError, () => subjectFor(P, 'acquire', pool)).code).toBe('invalid-pool-name');
    }
  });

  it('serviceSubject is the two-token wildcard under the version', () => {
    expect(serviceSubject(P)).toBe('tokenlease.v1.*.*');
    expect(serviceSubject('org.team')).toBe('org.team.v1.*.*');
  });

  it.each([
    ['wrong prefix', 'other.v1.acquire.api'],
    ['prefix as a substring', 'tokenleasex.v1.acquire.api'],
    ['prefix only', 'tokenlease'],
    ['wrong version', 'tokenlease.v2.acquire.api'],
    ['version as a prefix of another', 'tokenlease.v10.acquire.api'],
    ['no version', 'tokenlease.acquire.api'],
    ['unknown op', 'tokenlease.v1.steal.api'],
    ['op with no pool', 'tokenlease.v1.acquire'],
    ['empty pool', 'tokenlease.v1.acquire.'],
    ['extra tokens', 'tokenlease.v1.acquire.a.b'],
    ['a wildcard pool', 'tokenlease.v1.acquire.*'],
    ['a tail wildcard', 'tokenlease.v1.acquire.>'],
    ['the service wildcard', 'tokenlease.v1.*.*'],
    ['an empty subject', ''],
    ['upper-case op', 'tokenlease.v1.ACQUIRE.api'],
  ])('parseSubject returns null for %s', (_name, subject) => {
    expect(parseSubject(P, subject)).toBeNull();
  });

  it('parseSubject does not read a subject under a longer prefix as its own', () => {
    expect(parseSubject('org', 'org.team.v1.acquire.api')).toBeNull();
    expect(parseSubject('org.team', 'org.v1.acquire.api')).toBeNull();
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
  const tokenChar = fc.integer({ min: 0x21, max: 0x7e }).filter((c) => c !== 0x2e && c !== 0x2a && c !== 0x3e).map((c) => String.fromCharCode(c));
  const token = fc.string({ unit: tokenChar, minLength: 1, maxLength: POOL_NAME_LENGTH_MAX });
  const prefix = fc.array(fc.string({ unit: tokenChar, minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }).map((t) => t.join('.'));

  it('parseSubject(subjectFor(x)) is x for every valid prefix, op and pool', () => {
    fc.assert(
      fc.property(prefix, fc.constantFrom(...OPS), token, (pre, op, pool) => {
        expect(poolNameProblem(pool)).toBeNull();
        expect(() => assertSubjectPrefix(pre)).not.toThrow();
        const subject = subjectFor(pre, op, pool);
        expect(parseSubject(pre, subject)).toEqual({ op, pool });
        expect(subject.split('.')).toHaveLength(pre.split('.').length + 3);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('parseSubject never throws and only returns valid parts', () => {
    const subject = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.tuple(fc.constantFrom('tokenlease.v1.', 'tokenlease.v1.acquire.', 'tokenlease.v1.status.', 'tokenlease.v2.return.', 'x.v1.'), fc.string({ maxLength: 40 })).map(([h, t]) => h + t),
    );
    fc.assert(
      fc.property(subject, (s) => {
        const parts = parseSubject(P, s);
        if (parts === null) return;
        expect(OPS).toContain(parts.op);
        expect(poolNameProblem(parts.pool)).toBeNull();
        expect(subjectFor(P, parts.op, parts.pool)).toBe(s);
      }),
      { seed, numRuns: 1000 },
    );
  });
});
