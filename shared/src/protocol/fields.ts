/**
 * Field readers for decoding: each returns the value or throws a
 * FieldProblem naming the field, so a decoder reads like a schema.
 */
import { ID_FORM, isProtocolId } from './ids.js';

/** FieldProblem — why `field` is refused; an Error so that one escaping decodeWith still carries a stack. */
export class FieldProblem extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`field "${field}" ${problem}`);
    this.name = 'FieldProblem';
  }
}

/** Fields — a decoded JSON object, before its fields are read. */
export type Fields = Readonly<Record<string, unknown>>;

export function intField(obj: Fields, field: string, min: number, max: number): number {
  const value = obj[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new FieldProblem(field, `must be an integer in [${min}, ${max}]`);
  }
  return value;
}

export function numberField(obj: Fields, field: string, min: number, max: number): number {
  const value = obj[field];
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new FieldProblem(field, `must be a number in [${min}, ${max}]`);
  }
  return value;
}

/** idField — an id (ids.ts): 1 to ID_LENGTH_MAX printable ASCII characters without spaces. */
export function idField(obj: Fields, field: string): string {
  const value = obj[field];
  if (!isProtocolId(value)) throw new FieldProblem(field, `must be ${ID_FORM}`);
  return value;
}

export function nullableIdField(obj: Fields, field: string): string | null {
  return obj[field] === null ? null : idField(obj, field);
}

export function textField(obj: Fields, field: string, lengthMax: number): string {
  const value = obj[field];
  if (typeof value !== 'string' || value.length > lengthMax) {
    throw new FieldProblem(field, `must be a string of at most ${lengthMax} characters`);
  }
  return value;
}

export function oneOf<T extends string>(obj: Fields, field: string, allowed: readonly T[]): T {
  const value = obj[field];
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new FieldProblem(field, `must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

export function boolField(obj: Fields, field: string): boolean {
  const value = obj[field];
  if (typeof value !== 'boolean') throw new FieldProblem(field, 'must be true or false');
  return value;
}
