// ESLint for every workspace package: typescript-eslint's type-checked
// recommended rules over each package's `src/**/*.ts`, tests included, and the
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
const sources = ['*/src/**/*.ts', 'test/*/src/**/*.ts'];
const tests = ['*/src/**/*.test.ts', '*/src/**/*.fixtures.ts', 'test/*/src/**/*.test.ts', 'test/*/src/**/*.fixtures.ts'];
const cores = ['*/src/core/**/*.ts', 'shared/src/protocol/**/*.ts'];

/**
 * The workspace packages, by folder, and the packages each must not import.
 * The product points one way (agent -> shared <- coordinator) and never on a
 * tool; the simulator never starts a process (no harness), the sweep runs on
 * the simulator, the chaos suite on the harness; the integration suite uses all.
 */
const TOOLS = ['harness', 'sim', 'sweep', 'chaos', 'bench', 'demo', 'test'];
const except = (...names) => TOOLS.filter((t) => !names.includes(t));
const packages = [
  { dir: 'shared', name: 'shared', forbidden: ['agent', 'coordinator', ...TOOLS] },
  { dir: 'agent', name: 'agent', forbidden: ['coordinator', ...TOOLS] },
  { dir: 'coordinator', name: 'coordinator', forbidden: ['agent', ...TOOLS] },
  { dir: 'test/harness', name: 'harness', forbidden: except('harness') },
  { dir: 'test/sim', name: 'sim', forbidden: except('sim') },
  { dir: 'test/sweep', name: 'sweep', forbidden: except('sweep', 'sim') },
  { dir: 'test/chaos', name: 'chaos', forbidden: except('chaos', 'harness') },
  { dir: 'test/bench', name: 'bench', forbidden: except('bench', 'harness') },
  { dir: 'test/demo', name: 'demo', forbidden: except('demo', 'harness') },
  { dir: 'test/suite', name: 'test', forbidden: [] },
];

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
      // ioredis has a second importer: the comparison benchmark's Redis limiters (a token bucket in
      // one Lua script, rate-limiter-flexible's store), which measure what a user builds on Redis
      // directly, so they cannot go through the coordinator's store.
      'tokenlease/single-importer': [
        'error',
        {
          root,
          modules: {
            nats: 'shared/src/adapters/nats-bus.ts',
            ioredis: ['coordinator/src/adapters/redis-store.ts', 'test/bench/src/compare/redis-deciders.ts'],
          },
        },
      ],
    },
  },
  packages.map(({ dir, name, forbidden }) => ({
    files: [`${dir}/src/**/*.ts`],
    rules: {
      'tokenlease/package-boundaries': [
        'error',
        { name: `@tokenlease/${name}`, dir: join(root, dir), forbidden: forbidden.map((other) => `@tokenlease/${other}`) },
      ],
    },
  })),
  {
    files: cores,
    ignores: tests,
    rules: {
      'tokenlease/pure-core': ['error', { root, modules: ['nats', 'ioredis', 'pino', 'yaml', 'prom-client', 'puppeteer-core'] }],
    },
  },
  prettier,
);
