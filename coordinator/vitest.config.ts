import { defineConfig } from 'vitest/config';

// The sources' tests only: the build (tsc -b) type-checks the tests with the
// code and compiles them into dist/ too.
export default defineConfig({ test: { include: ['src/**/*.test.ts'] } });
