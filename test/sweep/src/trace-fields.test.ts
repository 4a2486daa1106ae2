/**
 * --trace-field: PATHs into nested objects, names holding `-`, `:` or an
 * escaped dot, the time's unit, unmapping, a round trip through
 * formatTraceFields; lookups see own properties only.
 */
import { describe, expect, it } from 'vitest';
import { fieldValue, formatTraceFields, parseTraceFields, type FieldPath } from './trace-fields.js';

const path = (text: string): FieldPath => {
  const fields = parseTraceFields('envoy-json', [`key=${text}`]);
  if (fields.key === null) throw new Error('no key');
  return fields.key;
};

describe('--trace-field PATHs', () => {
  it.each([
    ['user', ['user']],
    ['request.headers.x-api-key', ['request', 'headers', 'x-api-key']],
    ['http\\.request\\.header.x', ['http.request.header', 'x']],
    ['a\\\\b', ['a\\b']],
    ['k:v', ['k:v']],
    ['é.__proto__', ['é', '__proto__']],
  ])('reads %j as the names %j', (text, names) => {
    expect(path(text).names).toEqual(names);
  });

  it.each([
    ['time=ts', { text: 'ts', names: ['ts'] }, 's'],
    ['time=ts:ms', { text: 'ts', names: ['ts'] }, 'ms'],
    ['time=a.b:us', { text: 'a.b', names: ['a', 'b'] }, 'us'],
    ['time=x:y', { text: 'x:y', names: ['x:y'] }, 's'],
    ['time=t\\:ms', { text: 't\\:ms', names: ['t:ms'] }, 's'],
    ['time=t:ms:s', { text: 't:ms', names: ['t:ms'] }, 's'],
  ])('reads %j as the time at %j in %s', (text, time, unit) => {
    const fields = parseTraceFields('nginx-json', [text]);
    expect(fields.time).toEqual(time);
    expect(fields.timeUnit).toBe(unit);
    expect(parseTraceFields('nginx-json', formatTraceFields(fields))).toEqual(fields);
  });

  it('prints every field, so that unmapping and the unit survive a replay', () => {
    expect(formatTraceFields(parseTraceFields('nginx-json', ['instance=', 'cost=w', 'key=h\\.k']))).toEqual([
      'time=msec:s',
      'instance=',
      'cost=w',
      'key=h\\.k',
    ]);
  });

  it('looks up own properties of nested objects only', () => {
    const line = JSON.parse('{"a":{"b-c":{"d":1}},"arr":[{"x":2}],"__proto__":{"polluted":3}}') as unknown;
    expect(fieldValue(line, path('a.b-c.d'))).toBe(1);
    expect(fieldValue(line, path('a.b-c'))).toEqual({ d: 1 });
    expect(fieldValue(line, path('arr.0.x'))).toBeUndefined();
    expect(fieldValue(line, path('a.toString'))).toBeUndefined();
    expect(fieldValue(line, path('__proto__.polluted'))).toBe(3);
    expect(fieldValue(line, path('missing.d'))).toBeUndefined();
  });
});
