/**
 * Seeded randomness for tests, traffic and the demo: one 32-bit seed gives
 * the same sequence on every run (mulberry32).
 */
export interface Random {
  /** next — uniform in [0, 1). */
  next(): number;
  /** int — uniform integer in [min, max]. */
  int(min: number, max: number): number;
  /** exponential — exponential variate with the given mean. */
  exponential(mean: number): number;
}

/** seededRandom — a Random from a 32-bit seed; equal seeds give equal sequences. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    exponential: (mean) => -mean * Math.log(1 - next()),
  };
}
