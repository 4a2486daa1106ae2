import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  filePath,
  hostPort,
  integerIn,
  matching,
  nonEmptyText,
  oneOf,
  subjectToken,
  subjectTokens,
  text,
  valueMeta,
} from './setting-values.js';

/** refusal — the one message `form` refuses `value` with, or null when it takes it. */
function refusal(form: z.ZodType, value: unknown): string | null {
  const parsed = form.safeParse(value);
  return parsed.success ? null : (parsed.error.issues[0]?.message ?? '(no message)');
}

describe('integerIn', () => {
  const form = integerIn(100, 600_000, 'ms');
  it.each<[unknown, number]>([
    ['100', 100],
    ['600000', 600_000],
    ['000150', 150],
    [5000, 5000],
  ])('takes %j as %i', (value, expected) => {
    expect(form.parse(value)).toBe(expected);
  });

  it.each<unknown>(['99', '600001', '1.5', '1e3', '0x10', ' 150', '150 ', '-150', '', '99999999999999999999', 1.5, 10 ** 9, true, null])(
    'refuses %j with one message naming the range and unit',
    (value) => {
      expect(refusal(form, value)).toBe('must be an integer of ms in [100, 600000]');
    },
  );

  it('reaches the largest safe integer and refuses past it; without a unit its placeholder is n', () => {
    const count = integerIn(1, Number.MAX_SAFE_INTEGER);
    expect(count.parse(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    expect(refusal(count, '9007199254740992')).toBe(`must be an integer in [1, ${Number.MAX_SAFE_INTEGER}]`);
    expect(valueMeta(count)).toEqual({ placeholder: 'n' });
    expect(valueMeta(form)).toEqual({ placeholder: 'ms' });
  });
});

/** Shaped like a user NKey seed (S, U, base32); no key of anyone's. */
const SEED = 'SUAKYRHVIOREXV7EUZTBUXHZIFNDAVJJJR3FGFXZJ6GHUFMOU5DMWEWUYU';

describe('the other forms', () => {
  const SEED_REFUSED = 'holds a secret itself (an NKey seed or creds), not the path of a file holding it; give the path';
  it.each<[string, z.ZodType, unknown, string | null]>([
    ['an enum, a value of it', oneOf(['info', 'debug'], 'level'), 'debug', null],
    ['an enum, another value', oneOf(['info', 'debug'], 'level'), 'verbose', 'must be one of info, debug'],
    ['text, empty', text('name', 'text'), '', null],
    ['non-empty text, empty', nonEmptyText('token', 'text'), '', 'is empty'],
    ['a file, empty', filePath('PEM file'), '', 'is empty'],
    ['a file, any path', filePath('PEM file'), '/etc/ca.pem', null],
    ['a secret file given its seed', filePath('seed file', true), SEED, SEED_REFUSED],
    ['a secret file given a creds text', filePath('creds file', true), '-----BEGIN NATS USER JWT-----\n…', SEED_REFUSED],
    ['a file that holds no secret given a seed-like path', filePath('PEM file'), SEED, null],
    ['a pattern, matched', matching(/^[a-z]{1,3}$/, 'must be 1 to 3 letters', 'name', 'letters'), 'abc', null],
    ['a pattern, not matched', matching(/^[a-z]{1,3}$/, 'must be 1 to 3 letters', 'name', 'letters'), 'abcd', 'must be 1 to 3 letters'],
    ['a subject token', subjectToken('token', 'a token'), 'ops', null],
    ['a subject token with a dot', subjectToken('token', 'a token'), 'a.b', "may not contain '.', '*' or '>'"],
    ['a subject token with a space', subjectToken('token', 'a token'), 'a b', 'may hold only printable ASCII without spaces'],
    ['subject tokens, dot-joined', subjectTokens('prefix', 'tokens'), '_INBOX.alice', null],
    [
      'subject tokens with an empty one',
      subjectTokens('prefix', 'tokens'),
      'a..b',
      "must be dot-joined subject tokens (printable ASCII, no '*' or '>')",
    ],
    [
      'subject tokens with a wildcard',
      subjectTokens('prefix', 'tokens'),
      '_INBOX.*',
      "must be dot-joined subject tokens (printable ASCII, no '*' or '>')",
    ],
  ])('%s', (_name, form, value, message) => {
    expect(refusal(form, value)).toBe(message);
  });

  it.each<[string, { host: string; port: number } | null]>([
    ['127.0.0.1:9464', { host: '127.0.0.1', port: 9464 }],
    ['[::1]:0', { host: '::1', port: 0 }],
    ['localhost:65535', { host: 'localhost', port: 65535 }],
    ['localhost:65536', null],
    ['9464', null],
    ['http://h:1', null],
    ['h :1', null],
  ])('host:port %j', (value, expected) => {
    const form = hostPort();
    if (expected === null) expect(refusal(form, value)).toBe('must be host:port (e.g. 127.0.0.1:9464)');
    else expect(form.parse(value)).toEqual(expected);
  });
});
