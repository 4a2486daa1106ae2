/**
 * Every code sample in README.md and docs/*.md (and BENCHMARKS.md, should it
 * hold any) compiles against the workspace's real packages: each fenced
 * block tagged `ts` or `typescript` (`js` or `javascript`: checked as
 * JavaScript, with `checkJs`) is type-checked, strict as tsconfig.base.json
 * (unused names and `process.env.NAME` aside: a sample shows one thing, as
 * readers write it), in one compiler program
 * for all of them. A renamed option or a changed signature fails here, not
 * in a reader's editor. A problem reads `docs/agent.md:123: <tsc message>`.
 *
 * The convention (docs/development.md, "Docs: links and samples"):
 * - A block with an `import` is a complete program and is checked as one.
 * - Any other block is a fragment: it is given the shared preamble below
 *   (`agent`, `app`, `Agent`, `createHttpLimit`, …), less the names it
 *   declares itself.
 * - An HTML comment right before the fence adds declarations, to either
 *   kind: `<!-- sample: declare const res: import('express').Response; -->`,
 *   or leaves the block out, with its reason: `<!-- sample: skip (why) -->`.
 *   Skips are listed in the test's output. JavaScript blocks take neither
 *   the preamble nor declarations: they must be complete programs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { docsPages } from '../docs-pages.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * SAMPLES_DIR — where the generated files seem to be (they are never written): inside this package, so that
 * they resolve the workspace's node_modules and are ES modules (its package.json says `"type": "module"`).
 */
const SAMPLES_DIR = join(root, 'test', 'suite', 'src', 'lint', '.docs-samples');

/** PREAMBLE — the names a fragment may use without declaring them: each name and the line that declares it. */
const PREAMBLE = new Map<string, string>([
  ['Agent', "import { Agent } from '@tokenlease/agent';"],
  ['AgentMetrics', "import { AgentMetrics } from '@tokenlease/agent';"],
  ['createHttpLimit', "import { createHttpLimit } from '@tokenlease/agent/http';"],
  ['fastifyRateLimit', "import { fastifyRateLimit } from '@tokenlease/agent/fastify';"],
  ['FastifyRequest', "import type { FastifyRequest } from 'fastify';"],
  ['readFileSync', "import { readFileSync } from 'node:fs';"],
  ['os', "import os from 'node:os';"],
  ['agent', "declare const agent: import('@tokenlease/agent').Agent;"],
  ['app', "declare const app: import('express').Express;"],
  ['natsUrl', 'declare const natsUrl: string;'],
  ['keySecret', 'declare const keySecret: string;'],
  ['password', 'declare const password: string;'],
]);

/** Sample — one fenced block: where it is (`line`: the fence's, 1-based), its code, and what its comment says. */
export interface Sample {
  readonly file: string;
  readonly line: number;
  readonly language: 'ts' | 'js';
  readonly code: string;
  /** declarations — TypeScript from `<!-- sample: ... -->`, '' when there is none. */
  readonly declarations: string;
  /** skip — the reason given by `<!-- sample: skip (why) -->`, '' for a skip without one, null when not skipped. */
  readonly skip: string | null;
}

const LANGUAGES = new Map<string, 'ts' | 'js'>([
  ['ts', 'ts'],
  ['typescript', 'ts'],
  ['js', 'js'],
  ['javascript', 'js'],
]);

/** sampleComment — the text after `sample:` of an HTML comment that ends on the last non-blank line before `index`, or null. */
function sampleComment(lines: readonly string[], index: number): string | null {
  let end = index - 1;
  while (end >= 0 && (lines[end] ?? '').trim() === '') end--;
  if (end < 0 || !(lines[end] ?? '').trim().endsWith('-->')) return null;
  let start = end;
  while (start > 0 && !(lines[start] ?? '').includes('<!--')) start--;
  const text = lines.slice(start, end + 1).join('\n');
  return /<!--\s*sample:\s*([\s\S]*?)\s*-->\s*$/.exec(text)?.[1] ?? null;
}

/** extractSamples — every `ts`/`typescript`/`js`/`javascript` fenced block of `markdown` (the text of `file`), in order. */
export function extractSamples(file: string, markdown: string): Sample[] {
  const lines = markdown.split('\n');
  const samples: Sample[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^\s*(```+|~~~+)\s*([A-Za-z]*)\s*$/.exec(lines[index] ?? '');
    if (open === null) continue;
    const fence = open[1] ?? '```';
    let close = index + 1;
    while (close < lines.length && !(lines[close] ?? '').trim().startsWith(fence)) close++;
    const language = LANGUAGES.get((open[2] ?? '').toLowerCase());
    if (language !== undefined) {
      const comment = sampleComment(lines, index);
      const skip = comment === null || !/^skip\b/.test(comment) ? null : (/^skip\s*\((.+)\)$/s.exec(comment)?.[1]?.trim() ?? '');
      samples.push({
        file,
        line: index + 1,
        language,
        code: lines.slice(index + 1, close).join('\n'),
        declarations: skip === null ? (comment ?? '') : '',
        skip,
      });
    }
    index = close;
  }
  return samples;
}

/** topLevelNames — the names a source declares or imports at its top level, and whether it imports anything. */
function topLevelNames(source: string): { names: Set<string>; imports: boolean } {
  const file = ts.createSourceFile('sample.ts', source, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const names = new Set<string>();
  let imports = false;
  for (const statement of file.statements) {
    if (ts.isImportDeclaration(statement) || ts.isImportEqualsDeclaration(statement)) imports = true;
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name)) names.add(declaration.name.text);
      }
    } else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name !== undefined) {
      names.add(statement.name.text);
    }
  }
  return { names, imports };
}

/** header — the lines a sample's generated file starts with: the preamble it is given, then its comment's declarations. */
function header(sample: Sample): string[] {
  if (sample.language === 'js') return [];
  const own = topLevelNames(`${sample.declarations}\n${sample.code}`);
  const preamble = own.imports ? [] : [...PREAMBLE].filter(([name]) => !own.names.has(name)).map(([, line]) => line);
  return [...preamble, ...(sample.declarations === '' ? [] : [sample.declarations])];
}

/** compilerOptions — tsconfig.base.json's, to check and not to emit; unused names and `process.env.NAME` allowed, JavaScript checked. */
function compilerOptions(): ts.CompilerOptions {
  const path = join(root, 'tsconfig.base.json');
  const config = ts.readConfigFile(path, (name) => ts.sys.readFile(name));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root, undefined, path);
  return {
    ...parsed.options,
    noEmit: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    // `process.env.NAME` reads as readers write it; `process.env['NAME']` is this codebase's style, not a type error.
    noPropertyAccessFromIndexSignature: false,
    allowJs: true,
    checkJs: true,
    declaration: false,
    sourceMap: false,
  };
}

/** sampleProblems — `file:line: message` for each sample that does not compile, or that a skip leaves without a reason. */
export function sampleProblems(samples: readonly Sample[]): string[] {
  const problems: string[] = [];
  const generated = new Map<string, { sample: Sample; headerLines: number; text: string }>();
  for (const sample of samples) {
    if (sample.skip === '') problems.push(`${sample.file}:${sample.line}: a skipped sample must say why: <!-- sample: skip (why) -->`);
    if (sample.language === 'js' && sample.declarations !== '') {
      problems.push(`${sample.file}:${sample.line}: a JavaScript sample takes no declarations; tag it ts, or make it a complete program`);
    }
    if (sample.skip !== null) continue;
    const lines = header(sample);
    // `export {}` makes every sample a module: its names are its own, and top-level await is allowed.
    const text = [...lines, sample.code, 'export {};', ''].join('\n');
    const name = `${sample.file.replace(/[^A-Za-z0-9]/g, '_')}_${sample.line}.${sample.language}`;
    generated.set(join(SAMPLES_DIR, name), {
      sample,
      headerLines: lines.join('\n').split('\n').length - (lines.length === 0 ? 1 : 0),
      text,
    });
  }
  if (generated.size === 0) return problems;
  const options = compilerOptions();
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.fileExists = (name) => generated.has(name) || fileExists(name);
  host.readFile = (name) => generated.get(name)?.text ?? readFile(name);
  host.getSourceFile = (name, language, ...rest) => {
    const entry = generated.get(name);
    return entry === undefined ? getSourceFile(name, language, ...rest) : ts.createSourceFile(name, entry.text, language, true);
  };
  const program = ts.createProgram([...generated.keys()], options, host);
  for (const diagnostic of [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
    problems.push(`(compiler): ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`);
  }
  for (const [name, { sample, headerLines }] of generated) {
    const source = program.getSourceFile(name);
    if (source === undefined) continue;
    for (const diagnostic of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const at = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line;
      // A line of the header is the comment's (or the preamble's): blame the fence; the code starts on the line after it.
      const line = at < headerLines ? sample.line : sample.line + 1 + at - headerLines;
      const where = at < headerLines ? ' (in its declarations)' : '';
      problems.push(`${sample.file}:${line}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}${where}`);
    }
  }
  return problems;
}

describe('code samples in README.md and docs/*.md', () => {
  it('compile against the workspace packages, strict (skips listed, each with its reason)', () => {
    const samples = [...docsPages(), 'BENCHMARKS.md'].flatMap((file) => extractSamples(file, readFileSync(join(root, file), 'utf8')));
    const skipped = samples.filter((sample) => sample.skip !== null);
    for (const sample of skipped) console.info(`skipped: ${sample.file}:${sample.line}: ${sample.skip}`);
    expect(samples.length).toBeGreaterThan(10);
    expect(skipped.length).toBeLessThanOrEqual(3);
    expect(sampleProblems(samples)).toEqual([]);
  });

  describe('the check can fail', () => {
    it('on a misspelt option, a name no preamble gives, an unexplained skip; not on good fragments, programs or skips', () => {
      const markdown = [
        '# Sample', //                                                                 1
        '',
        '```ts',
        "const agent = await Agent.connect({ natsUrll: '' });", //                    4: misspelt
        '```',
        '',
        '```ts',
        "agent.limiter('api').tryTake();", //                                          8: fragment, preamble's agent
        'app.get("/", (_req, res) => res.send("ok"));',
        '```',
        '',
        "<!-- sample: declare const res: import('express').Response; -->",
        '```typescript',
        "import { Agent } from '@tokenlease/agent';", //                              14: a program, its comment's res
        "const agent = await Agent.connect({ natsUrl: 'nats://127.0.0.1:4222' });",
        "res.setHeader('Retry-After', '1');",
        'await agent.close();',
        'app.listen(3000);', //                                                       18: a program gets no preamble
        '```',
        '',
        '<!-- sample: skip (pseudo-code) -->',
        '```ts',
        'this is not TypeScript',
        '```',
        '',
        '<!-- sample: skip -->',
        '```ts', //                                                                   27: a skip without its reason
        'neither is this',
        '```',
        '',
        '```js',
        "import Fastify from 'fastify';",
        'const app = Fastify();',
        'await app.listen({ prot: 3000 });', //                                       34: misspelt, in JavaScript
        '```',
        '',
        '```sh',
        'npm test',
        '```',
        '',
      ].join('\n');
      const samples = extractSamples('README.md', markdown);
      expect(samples.map((sample) => [sample.line, sample.language, sample.skip])).toEqual([
        [3, 'ts', null],
        [7, 'ts', null],
        [13, 'ts', null],
        [22, 'ts', 'pseudo-code'],
        [27, 'ts', ''],
        [31, 'js', null],
      ]);
      const problems = sampleProblems(samples);
      expect(problems).toHaveLength(4);
      expect(problems[0]).toMatch(/^README\.md:27: a skipped sample must say why/);
      expect(problems[1]).toMatch(/^README\.md:4: .*'natsUrll' does not exist/);
      expect(problems[2]).toMatch(/^README\.md:18: Cannot find name 'app'/);
      expect(problems[3]).toMatch(/^README\.md:34: .*'prot' does not exist/);
    });
  });
});
