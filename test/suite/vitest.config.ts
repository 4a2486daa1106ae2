import { defineConfig, mergeConfig } from 'vitest/config';
import base from '../vitest.base.ts';

// Integration suites start real servers and processes (NATS, Redis,
// coordinators, agents, the README's commands): they run one file at a time
// (two cores; their timing checks must not compete with each other), each
// test given room; every loop inside is bounded. The architecture lint tests
// start nothing and run first. The simulator, the sweep and the chaos
// runner's pure parts are packages of their own and never wait behind these.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      projects: [
        { extends: true, test: { name: 'lint', include: ['src/lint/**/*.test.ts'], sequence: { groupOrder: 0 } } },
        {
          extends: true,
          test: { name: 'integration', include: ['src/integration/**/*.test.ts'], fileParallelism: false, sequence: { groupOrder: 1 } },
        },
      ],
    },
  }),
);
