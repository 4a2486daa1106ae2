import { defineConfig, mergeConfig } from 'vitest/config';
import base from '../vitest.base.ts';

// Integration suites start real servers and processes (NATS, Redis,
// coordinators, agents, the documented commands), each on ports and subject
// prefixes of its own: two files run at a time, one per core, since most of
// their time is spent waiting on real processes and the clock; every loop
// inside is bounded and nothing in them is timed to the millisecond. (Three
// at a time, beside the other packages' tests, starve the ones that
// measure throughput.) The
// architecture lint tests start nothing and run first. The hostile clients'
// suite runs last and alone (its own group): it judges fair shares and
// latencies while a client floods the coordinator, and beside another
// suite's servers and the documented commands it failed them for want of
// CPU, not for anything the coordinator did. The simulator, the sweep and
// the chaos runner's pure parts are packages of their own and never wait
// behind these.
//
// TURBO_CACHE=local:w, passed to the `npm run` commands the suites start
// (json-output, secured-env): their scripts run `turbo run build` first, and
// on a cache hit turbo restores every package's dist/ by writing it again,
// under the coordinators and agents other files are starting from it; one
// died at import in CI ("does not provide an export named …"). Writing the
// cache only, turbo runs each package's `tsc -b`, which writes nothing when
// the build is up to date, as `npm test`'s own build has just made it.
/** ALONE — suites that measure fairness and latency under load they make themselves: run after the others, one at a time. */
const ALONE = ['src/integration/hostile-clients.test.ts'];

export default mergeConfig(
  base,
  defineConfig({
    test: {
      maxWorkers: 2,
      env: { TURBO_CACHE: 'local:w' },
      projects: [
        { extends: true, test: { name: 'lint', include: ['src/lint/**/*.test.ts'], sequence: { groupOrder: 0 } } },
        {
          extends: true,
          test: {
            name: 'integration',
            include: ['src/integration/**/*.test.ts'],
            exclude: [...ALONE],
            sequence: { groupOrder: 1 },
          },
        },
        { extends: true, test: { name: 'alone', include: [...ALONE], sequence: { groupOrder: 2 } } },
      ],
    },
  }),
);
