/**
 * What an integration suite sets up once for all its tests: a server (NATS,
 * Redis) provided before the first test and stopped after the last, once
 * every process the suite started is stopped; and a seeded run, whose seed is
 * printed with the command that replays it.
 */
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { stopAll } from '@tokenlease/harness/processes';
import { seededRandom, seedFromEnv, type Random } from '@tokenlease/shared/testing';

const SUITE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** serverForSuite — `start()` before the enclosing describe's tests, stopped after them; call the result to read it. */
export function serverForSuite<T extends { stop(): Promise<void> }>(start: () => Promise<T>): () => T {
  let server: T | undefined;
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    await stopAll();
    await server?.stop();
  });
  return () => {
    if (server === undefined) throw new Error('a suite server was read before its beforeAll started it');
    return server;
  };
}

/** SeededRun — a run's seed and the randomness drawn from it. */
export interface SeededRun {
  readonly seed: number;
  readonly random: Random;
}

/** seededRun — `$SEED` or a fresh seed, printed under `label` with the command that replays `testFile` (its import.meta.url). */
export function seededRun(label: string, testFile: string, detail = ''): SeededRun {
  const seed = seedFromEnv();
  const file = relative(SUITE_ROOT, fileURLToPath(testFile));
  console.log(`${label}: SEED=${seed}${detail} (replay: SEED=${seed} npx vitest run ${file})`);
  return { seed, random: seededRandom(seed) };
}
