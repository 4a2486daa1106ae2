// ESLint for every workspace package: typescript-eslint's type-checked
// recommended rules over `*/src/**/*.ts`, tests included, and the
// architecture rules of the house style (tools/eslint-plugin-tokenlease).
// Layout is Prettier's alone: eslint-config-prettier, last, turns off every
// rule that could disagree with it.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';
import tokenlease from './tools/eslint-plugin-tokenlease/index.mjs';

const root = fileURLToPath(new URL('.', import.meta.url));
const sources = ['*/src/**/*.ts'];
const tests = ['*/src/**/*.test.ts', '*/src/**/*.fixtures.ts'];
const cores = ['*/src/core/**/*.ts', 'shared/src/protocol/**/*.ts'];

/** The workspace packages each package must not import: agent -> shared <- coordinator; test uses all. */
const forbiddenImports = {
  shared: ['agent', 'coordinator', 'test'],
  agent: ['coordinator', 'test'],
  coordinator: ['agent', 'test'],
  test: [],
};

export default defineConfig(
  globalIgnores(['**/dist/', '**/node_modules/', 'coverage/', 'reports/']),
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    files: sources,
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: root },
    },
    rules: {
      // The same conventions as tsc's noUnusedLocals/noUnusedParameters: a leading
      // underscore marks a deliberate unused name, and `{ dropped, ...rest }` omits a key.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: tests,
    rules: {
      // vitest's asymmetric matchers (expect.any(String), expect.objectContaining(...)) are typed `any`.
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },

  // The architecture, on the syntax tree.
  {
    files: sources,
    plugins: { tokenlease },
    rules: {
      'tokenlease/single-importer': [
        'error',
        { root, modules: { nats: 'shared/src/adapters/nats-bus.ts', ioredis: 'coordinator/src/adapters/redis-store.ts' } },
      ],
    },
  },
  Object.entries(forbiddenImports).map(([name, forbidden]) => ({
    files: [`${name}/src/**/*.ts`],
    rules: {
      'tokenlease/package-boundaries': [
        'error',
        { name: `@tokenlease/${name}`, dir: join(root, name), forbidden: forbidden.map((other) => `@tokenlease/${other}`) },
      ],
    },
  })),
  {
    files: cores,
    ignores: tests,
    rules: { 'tokenlease/pure-core': ['error', { modules: ['nats', 'ioredis', 'pino', 'yaml', 'prom-client', 'puppeteer-core'] }] },
  },
  {
    // One concept per file: a source file other than a test stays under 400 lines. Comment lines
    // do not count: the style asks for a doc comment on every export, and Prettier's line breaks
    // alone take the largest files (pool.ts, simulation.ts, lease-keeper.ts) past 400 in all.
    files: sources,
    ignores: tests,
    rules: { 'max-lines': ['error', { max: 399, skipBlankLines: false, skipComments: true }] },
  },
  prettier,
);
