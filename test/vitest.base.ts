import { defineConfig } from 'vitest/config';

// What every tool package's tests share: room for the simulator's and the
// sweep's longer runs. Suites that start servers or processes say so in their
// own config (test/chaos, test/suite).
export default defineConfig({
  test: {
    // The sources' tests only: the build compiles them into dist/ too.
    include: ['src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
  },
});
