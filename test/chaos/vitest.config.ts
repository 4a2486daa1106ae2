import { defineConfig, mergeConfig } from 'vitest/config';
import base, { SOURCE_TESTS } from '../vitest.base.ts';

// chaos.test.ts starts private NATS and Redis servers and real processes:
// files run one at a time, so its timing checks never compete with each other.
export default mergeConfig(base, defineConfig({ test: { include: SOURCE_TESTS, fileParallelism: false } }));
