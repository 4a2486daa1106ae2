import { defineConfig } from 'vitest/config';

// What every tool package's tests share: room for the simulator's and the
// sweep's longer runs. Suites that start servers or processes say so in their
// own config (test/chaos, test/suite). Which files are tests each package
// says itself (SOURCE_TESTS, or test/suite's projects): an include here would
// be added to every project's own.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 30_000,
  },
});

/** SOURCE_TESTS — the sources' tests only: the build (tsc -b) compiles them into dist/ too. */
export const SOURCE_TESTS = ['src/**/*.test.ts'];
