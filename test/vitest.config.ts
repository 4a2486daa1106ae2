import { configDefaults, defineConfig } from 'vitest/config';

// Integration suites start real servers and processes (NATS, Redis,
// coordinators, agents, the README's commands): they run one file at a time
// (two cores; their timing checks must not compete with each other), each
// test given room; every loop inside is bounded. The other suites (the
// simulator, the sweep, the harness's and the chaos runner's pure parts)
// start nothing: they run first, in parallel with each other, so they never
// wait behind the integration suites.
const INTEGRATION = ['src/integration/**/*.test.ts', 'src/chaos/chaos.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['src/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...INTEGRATION],
          maxWorkers: '100%',
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: INTEGRATION,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
