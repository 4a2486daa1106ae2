// ESLint for every workspace package: typescript-eslint's type-checked
// recommended rules over `*/src/**/*.ts`, tests included.
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

const root = fileURLToPath(new URL('.', import.meta.url));
const tests = ['*/src/**/*.test.ts', '*/src/**/*.fixtures.ts'];

export default defineConfig(
  globalIgnores(['**/dist/', '**/node_modules/', 'coverage/', 'reports/']),
  {
    files: ['*/src/**/*.ts'],
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
);
