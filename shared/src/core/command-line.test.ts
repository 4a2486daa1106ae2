import { describe, expect, it } from 'vitest';
import { TokenleaseError } from '../errors.js';
import { thrown } from '../testing/thrown.js';
import { checkSetting, givenSetting, parseArgsOptions, readSetting, type Setting } from './command-line.js';
import { integerIn, nonEmptyText, text } from './setting-values.js';

const TIMEOUT: Setting<number> = { flag: 'x-timeout-ms', env: 'X_TIMEOUT_MS', value: integerIn(1, 100, 'ms'), description: 'a wait' };
const PASSWORD: Setting<string> = {
  flag: 'x-password',
  env: 'X_PASSWORD',
  value: nonEmptyText('pw', 'text'),
  secret: 'value',
  description: 'a secret',
};
const SWITCH: Setting = { flag: 'x-memory', short: 'm', value: null, description: 'a switch' };
const ALONE: Setting<string> = { flag: null, env: 'X_ALONE', value: text('v', 'text'), description: 'a variable read alone' };

describe('parseArgsOptions', () => {
  it('makes a string option of a valued flag, a boolean of a switch, keeps the short flag, and skips a variable read alone', () => {
    expect(parseArgsOptions([TIMEOUT, SWITCH, ALONE])).toEqual({
      'x-timeout-ms': { type: 'string' },
      'x-memory': { type: 'boolean', short: 'm' },
    });
  });
});

describe('givenSetting', () => {
  it.each<[string, Record<string, unknown>, Record<string, string | undefined>, object | null]>([
    ['the flag over the variable', { 'x-timeout-ms': '5' }, { X_TIMEOUT_MS: '7' }, { value: '5', name: '--x-timeout-ms' }],
    ['the variable without the flag', {}, { X_TIMEOUT_MS: '7' }, { value: '7', name: 'X_TIMEOUT_MS' }],
    ['an empty flag, which is given', { 'x-timeout-ms': '' }, { X_TIMEOUT_MS: '7' }, { value: '', name: '--x-timeout-ms' }],
    ['an empty variable, which is unset', {}, { X_TIMEOUT_MS: '' }, null],
    ['neither', { other: '1' }, { OTHER: '1' }, null],
    ['a flag inherited, not given', Object.create({ 'x-timeout-ms': '5' }) as Record<string, unknown>, {}, null],
  ])('%s', (_name, flags, env, given) => {
    expect(givenSetting(TIMEOUT, flags, env)).toEqual(given);
  });

  it('reads a variable that has no flag', () => {
    expect(givenSetting(ALONE, { 'x-alone': 'no' }, { X_ALONE: 'yes' })).toEqual({ value: 'yes', name: 'X_ALONE' });
  });
});

describe('checkSetting', () => {
  it.each<[string, Setting, string, string]>([
    ['names the setting and shows the value', TIMEOUT, '500', '--x-timeout-ms must be an integer of ms in [1, 100], got "500"'],
    ['shows no empty value', TIMEOUT, '', '--x-timeout-ms must be an integer of ms in [1, 100]'],
    ['never shows a secret', PASSWORD, '', '--x-password is empty'],
  ])('%s', (_name, setting, value, message) => {
    expect(checkSetting(setting, `--${setting.flag}`, value)).toEqual({ ok: false, message });
  });

  it('never shows a secret value its form refuses', () => {
    const pin: Setting<number> = { flag: 'x-pin', env: 'X_PIN', value: integerIn(1, 2), secret: 'value', description: 'a secret number' };
    expect(checkSetting(pin, 'X_PIN', 'hunter2')).toEqual({ ok: false, message: 'X_PIN must be an integer in [1, 2]' });
  });

  it('gives the typed value its form makes', () => {
    expect(checkSetting(TIMEOUT, 'X_TIMEOUT_MS', '42')).toEqual({ ok: true, value: 42 });
  });

  it('is an assertion for a switch, which has no value', () => {
    expect(thrown(TokenleaseError, () => checkSetting(SWITCH, '--x-memory', 'true')).code).toBe('invariant');
  });
});

describe('readSetting', () => {
  it('is undefined when not given, the checked value or the refusal otherwise', () => {
    expect(readSetting(TIMEOUT, {}, {})).toEqual({ ok: true, value: undefined });
    expect(readSetting(TIMEOUT, {}, { X_TIMEOUT_MS: '9' })).toEqual({ ok: true, value: 9 });
    expect(readSetting(TIMEOUT, { 'x-timeout-ms': '0' }, { X_TIMEOUT_MS: '9' })).toEqual({
      ok: false,
      message: '--x-timeout-ms must be an integer of ms in [1, 100], got "0"',
    });
  });
});
