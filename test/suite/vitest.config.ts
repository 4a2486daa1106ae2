import { defineConfig, mergeConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import base from '../vitest.base.ts';

/**
 * The integration files that take longest in a full run on the 2-core
 * machine (readme-commands about 3.5 minutes, the others 50–90 s), started
 * first so that the two workers end together instead of one waiting on a
 * long file begun late; the rest in vitest's own order.
 */
const LONGEST_FIRST = ['readme-commands', 'hostile-clients', 'secured-nats', 'json-output', 'packed'];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const i = LONGEST_FIRST.findIndex((name) => file.moduleId.endsWith(`/${name}.test.ts`));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    return [...(await super.sort(files))].sort((a, b) => rank(a) - rank(b));
  }
}

// Integration suites start real servers and processes (NATS, Redis,
// coordinators, agents, the documented commands), each on ports and subject
// prefixes of its own: two files run at a time, one per core, since most of
// their time is spent waiting on real processes and the clock; every loop
// inside is bounded and nothing in them is timed to the millisecond. (Three
// at a time, beside the other packages' tests, starve the ones that
// measure throughput.) The
// architecture lint tests start nothing and run first. The simulator, the
// sweep and the chaos runner's pure parts are packages of their own and
// never wait behind these.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      maxWorkers: 2,
      sequence: { sequencer: LongestFirst },
      projects: [
        { extends: true, test: { name: 'lint', include: ['src/lint/**/*.test.ts'], sequence: { groupOrder: 0 } } },
        {
          extends: true,
          test: { name: 'integration', include: ['src/integration/**/*.test.ts'], sequence: { groupOrder: 1 } },
        },
      ],
    },
  }),
);
