import { describe, expect, it } from 'vitest';
import { ID_FORM, isProtocolId } from './ids.js';

describe('isProtocolId', () => {
  it.each<[string, unknown, boolean]>([
    ['one character', 'a', true],
    ['printable ASCII punctuation', 'agent-7:host/1~!', true],
    ['128 characters', 'x'.repeat(128), true],
    ['empty', '', false],
    ['129 characters', 'x'.repeat(129), false],
    ['a space', 'a b', false],
    ['a tab', 'a\tb', false],
    ['a control character', 'a\u0000', false],
    ['DEL (0x7f)', 'a\u007f', false],
    ['non-ASCII', 'agént', false],
    ['a number', 7, false],
    ['null', null, false],
  ])('%s: %s', (_name, value, ok) => {
    expect(isProtocolId(value)).toBe(ok);
  });

  it('names the form in words', () => {
    expect(ID_FORM).toBe('1 to 128 printable ASCII characters without spaces');
  });
});
