import { defineConfig } from 'vitest/config';

// Integration suites start real servers and processes: run files one at a
// time (two cores) and give each test room; every loop inside is bounded.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 30_000,
  },
});
