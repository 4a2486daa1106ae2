/**
 * Seeds for randomised tests: one integer drives a run, and the run prints it
 * so that `SEED=<n>` replays it exactly. Test support only: the package's
 * public entry (`src/index.ts`) does not export it; tests reach it through
 * the `@tokenlease/shared/testing` subpath.
 */
import { basename } from 'node:path';

/** SEED_FRESH_MAX — fresh seeds are drawn from [0, SEED_FRESH_MAX), i.e. [0, 2^31). */
const SEED_FRESH_MAX = 2 ** 31;

/**
 * seedFromEnv — the seed of a randomised run: `$SEED` when set and not empty
 * (to replay a run), else a fresh random integer in [0, 2^31).
 * Throws an Error naming SEED when `$SEED` is not a non-negative safe integer
 * (e.g. `-1`, `1.5`, `abc`, `2^53`).
 */
export function seedFromEnv(): number {
  const text = process.env['SEED'];
  if (text === undefined || text === '') return Math.floor(Math.random() * SEED_FRESH_MAX);
  const seed = Number(text);
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new Error(`SEED must be a non-negative safe integer, got ${JSON.stringify(text)}`);
  }
  return seed;
}

/**
 * propertySeed — the fast-check seed of a property test file: seedFromEnv(),
 * printed with the command that replays it, e.g.
 * `bucket.test.ts: fast-check seed 42 (replay: SEED=42 npx vitest run src/core/bucket.test.ts)`.
 * `replayPath` is the test file's path relative to its package (the
 * directory `npx vitest run` is started in); the printed name is its base
 * name. Throws as seedFromEnv does.
 */
export function propertySeed(replayPath: string): number {
  const seed = seedFromEnv();
  console.log(`${basename(replayPath)}: fast-check seed ${seed} (replay: SEED=${seed} npx vitest run ${replayPath})`);
  return seed;
}
