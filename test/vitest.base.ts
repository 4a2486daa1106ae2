import { defineConfig } from 'vitest/config';

// What every tool package's tests share: room for the simulator's and the
// sweep's longer runs. In `npm test` these run at the lowest CPU priority
// beside the integration suite (tools/run-tests.mjs), where a run of 150
// simulated scenarios that takes 20 s alone took over 60 s in CI: the bound
// is wall time on a shared machine, not a speed target, and catches only a
// test that hangs. Suites that start servers or processes say so in their
// own config (test/chaos, test/suite). Which files are tests each package
// says itself (SOURCE_TESTS, or test/suite's projects): an include here would
// be added to every project's own.
export default defineConfig({
  test: {
    testTimeout: 300_000,
    hookTimeout: 30_000,
  },
});

/** SOURCE_TESTS — the sources' tests only: the build (tsc -b) compiles them into dist/ too. */
export const SOURCE_TESTS = ['src/**/*.test.ts'];
