/**
 * Adapter functions are short (STYLE.md: "if an adapter function is longer
 * than a screen, it is deciding something"; issue #29): no function in the
 * adapters of shared, agent or coordinator (their tests and fixtures
 * aside) has a body longer than FUNCTION_LINES_MAX lines, counted from its
 * opening brace to its closing one, nested functions included. Functions
 * are found with the TypeScript compiler's parser: declarations,
 * expressions, arrows, methods, accessors and constructors.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** FUNCTION_LINES_MAX — the longest an adapter function's body may be, in lines (a screen is about 50). */
const FUNCTION_LINES_MAX = 60;

const ADAPTER_DIRS = ['shared/src/adapters', 'agent/src/adapters', 'coordinator/src/adapters'];

/**
 * KNOWN_LONG — functions over the limit, `path name`, let be for a time:
 * each must still be over it (an entry no longer needed fails, so that it
 * is taken out). None now.
 */
const KNOWN_LONG = new Set<string>();

interface FunctionLength {
  readonly name: string;
  /** The line of its opening brace, from 1. */
  readonly line: number;
  readonly lines: number;
}

/** functionLengths — every function with a body in `text`, and how many lines its body spans. */
function functionLengths(path: string, text: string): FunctionLength[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line + 1;
  const found: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const body = node.body as ts.Node;
      const line = lineOf(body.getStart(source));
      found.push({ name: nameOf(node, source), line, lines: lineOf(body.getEnd()) - line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** nameOf — a function's own name, else the name it is bound to, else `(anonymous)`; a constructor is `Class.constructor`. */
function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return `${node.parent.name?.getText(source) ?? '(class)'}.constructor`;
  if (node.name !== undefined) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return parent.name.getText(source);
  }
  return '(anonymous)';
}

/** adapterFiles — the adapters' own files: neither tests nor test fixtures. */
function adapterFiles(): string[] {
  return ADAPTER_DIRS.flatMap((dir) =>
    readdirSync(join(root, dir))
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('.fixtures.ts'))
      .map((file) => `${dir}/${file}`),
  );
}

/** tooLong — `path name (line): N lines` for each function over the limit in the adapters. */
function tooLong(): string[] {
  return adapterFiles().flatMap((path) =>
    functionLengths(path, readFileSync(join(root, path), 'utf8'))
      .filter((f) => f.lines > FUNCTION_LINES_MAX)
      .map((f) => `${path} ${f.name} (line ${f.line}): ${f.lines} lines`),
  );
}

const body = (lines: number): string => Array.from({ length: lines - 2 }, (_, i) => `  step(${i});`).join('\n');

describe('adapter functions', () => {
  it.each([
    ['a function declaration', (n: number) => `export function f(): void {\n${body(n)}\n}`, 'f'],
    ['an arrow bound to a name', (n: number) => `export const g = (): void => {\n${body(n)}\n};`, 'g'],
    ['a method', (n: number) => `export class C {\n  m(): void {\n${body(n)}\n  }\n}`, 'm'],
    ['a constructor', (n: number) => `export class C {\n  constructor() {\n${body(n)}\n  }\n}`, 'C.constructor'],
    ['a callback', (n: number) => `on('x', () => {\n${body(n)}\n});`, '(anonymous)'],
  ])('counts %s from its opening brace to its closing one', (_what, code, name) => {
    const atLimit = functionLengths('sample.ts', code(FUNCTION_LINES_MAX));
    expect(atLimit).toContainEqual(expect.objectContaining({ name, lines: FUNCTION_LINES_MAX }));
    const over = functionLengths('sample.ts', code(FUNCTION_LINES_MAX + 1));
    expect(over.filter((f) => f.lines > FUNCTION_LINES_MAX).map((f) => f.name)).toContain(name);
  });

  it('counts what a function nests as its own lines too, and each nested function apart', () => {
    const code = `export function outer(): void {\n  const inner = (): void => {\n${body(40)}\n  };\n${body(30)}\n}`;
    const lengths = functionLengths('sample.ts', code);
    expect(lengths.map((f) => `${f.name} ${f.lines}`)).toEqual(['outer 70', 'inner 40']);
  });

  it(`are at most ${FUNCTION_LINES_MAX} lines long: a longer one is deciding something, or carrying several things`, () => {
    const offenders = tooLong().filter((f) => !KNOWN_LONG.has(f.slice(0, f.indexOf(' ('))));
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('lists as known long only functions still too long', () => {
    const long = new Set(tooLong().map((f) => f.slice(0, f.indexOf(' ('))));
    expect([...KNOWN_LONG].filter((known) => !long.has(known))).toEqual([]);
  });
});
