/**
 * Counts taking turns (turns.ts), on the row sketch's children of the
 * built bench: each count renews for its turns and its figures are their
 * sums; a child that cannot start fails the run with its own error.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { rowSketchScaling } from './lease-scaling.js';
import { takeTurns } from './turns.js';

const script = fileURLToPath(new URL('../dist/main.js', import.meta.url));

describe('takeTurns', () => {
  it('gives every count each of its turns, and sums them', { timeout: 60_000 }, async () => {
    const figures = await rowSketchScaling(script, 20, 3, [1_000, 10_000]);
    expect(figures.map((f) => f.leases)).toEqual([1_000, 10_000]);
    for (const f of figures) {
      expect(f.perTurn).toHaveLength(3);
      expect(f.calls).toBeGreaterThan(0);
      // Each turn renews for at least its 20 ms of CPU time.
      expect(f.cpuMs).toBeGreaterThanOrEqual(60);
      expect(Math.abs(f.calls / (f.cpuMs / 1000) - f.renewalsPerSecond)).toBeLessThanOrEqual(0.01 * f.renewalsPerSecond);
    }
  });

  it('fails the run when a child cannot start, with the child’s own words', { timeout: 60_000 }, async () => {
    await expect(takeTurns('bad-turns', script, [1_000], () => ['--row-sketch-turns', '1000', '0', '3'], 3)).rejects.toThrow(
      /--row-sketch-turns takes a lease count, a turn in ms and a number of turns/,
    );
  });
});
