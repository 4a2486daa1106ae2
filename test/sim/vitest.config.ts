import { defineConfig, mergeConfig } from 'vitest/config';
import base, { SOURCE_TESTS } from '../vitest.base.ts';

export default mergeConfig(base, defineConfig({ test: { include: SOURCE_TESTS } }));
