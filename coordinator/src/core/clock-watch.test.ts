import { describe, expect, it } from 'vitest';
import { CLOCK_BASELINE_US, CLOCK_SLACK_US, CLOCK_STRETCH_MAX, judgeClock, startTrack, stretch } from './clock-watch.js';

const S = 1_000_000;
const LIMIT = 0.02;

/** readings — the verdicts on an agent whose clock runs at `rate` of the coordinator's, read every `everyUs` for `count` readings, each delayed by `delayUs(i)`. */
function verdicts(rate: number, everyUs: number, count: number, delayUs: (i: number) => number = () => 0) {
  const track = startTrack(5_000, 10 * S + delayUs(0));
  const out = [];
  for (let i = 1; i < count; i += 1) {
    const agentMs = 5_000 + Math.floor((i * everyUs * rate) / 1000);
    out.push(judgeClock(track, agentMs, 10 * S + i * everyUs + delayUs(i), LIMIT));
  }
  return out;
}

describe('judgeClock', () => {
  it('finds nothing in a clock at the coordinator’s rate, whatever delay up to the slack each reading meets', () => {
    const delays = [0, CLOCK_SLACK_US, 3_000, CLOCK_SLACK_US - 1, 200_000, 0, CLOCK_SLACK_US];
    const all = verdicts(1, 300_000, 200, (i) => delays[i % delays.length] ?? 0);
    expect(all.every((v) => v.kind === 'within')).toBe(true);
  });

  it('judges nothing before the baseline, however far the readings are off', () => {
    const track = startTrack(0, 0);
    expect(judgeClock(track, 0, CLOCK_BASELINE_US - 1, LIMIT).kind).toBe('within');
    expect(judgeClock(track, 100_000, CLOCK_BASELINE_US - 1, LIMIT).kind).toBe('within');
  });

  it('finds a clock at half the rate slow the second time it shows, with its rate measured no faster than it is', () => {
    const all = verdicts(0.5, 200_000, 30);
    const at = all.findIndex((v) => v.kind !== 'within');
    const found = all[at];
    expect(found?.kind).toBe('slow');
    if (found?.kind !== 'slow') return;
    expect(found.rate).toBeLessThanOrEqual(0.5);
    expect(found.rate).toBeGreaterThan(0.45);
    // Suspected after about 1.1 s, confirmed about 1.1 s later on a track restarted there.
    expect(((at + 1) * 200_000) / S).toBeLessThanOrEqual(2.4);
    expect(found.overUs).toBeLessThanOrEqual(1.2 * S);
  });

  it('finds a clock 50% fast, against the first reading of its track', () => {
    const found = verdicts(1.5, 200_000, 30).find((v) => v.kind !== 'within');
    expect(found).toMatchObject({ kind: 'fast' });
    if (found?.kind === 'fast') expect(found.rate).toBeCloseTo(1.5, 1);
  });

  it('finds a clock 10% slow once its lag has passed the limit’s share plus the slack twice (about 2 × 6.3 s)', () => {
    const all = verdicts(0.9, 500_000, 60);
    const at = all.findIndex((v) => v.kind !== 'within');
    expect(all[at]?.kind).toBe('slow');
    const elapsedS = ((at + 1) * 500_000) / S;
    expect(elapsedS).toBeGreaterThan(12);
    expect(elapsedS).toBeLessThan(14);
  });

  it('leaves a clock 1% off (inside the limit) alone over a minute', () => {
    expect(verdicts(0.99, 1_000_000, 60).every((v) => v.kind === 'within')).toBe(true);
    expect(verdicts(1.01, 1_000_000, 60).every((v) => v.kind === 'within')).toBe(true);
  });

  it('is not fooled by a first reading that was delayed: a later, less delayed one becomes the reference', () => {
    // The first reading waited 400 ms in a queue; the rest arrive at once: the clock is right.
    const all = verdicts(1, 250_000, 80, (i) => (i === 0 ? 400_000 : 0));
    expect(all.every((v) => v.kind === 'within')).toBe(true);
  });

  it('takes no stall of the coordinator for drift: every reading taken in during it late by seconds, on the track’s first or later', () => {
    // Readings every 100 ms; those of 5–8 s are all taken in at 8 s (a stall of 3 s), then on time again.
    const stalled = (i: number): number => {
      const sentUs = i * 100_000;
      return sentUs >= 5 * S && sentUs < 8 * S ? 8 * S - sentUs : 0;
    };
    expect(verdicts(1, 100_000, 300, stalled).every((v) => v.kind === 'within')).toBe(true);
    // The same from the first reading on: the track starts on a late reading.
    expect(verdicts(1, 100_000, 300, (i) => (i * 100_000 < 3 * S ? 3 * S - i * 100_000 : 0)).every((v) => v.kind === 'within')).toBe(true);
  });

  it('takes a clock that went backwards for the slowest there is', () => {
    const track = startTrack(10_000, 0);
    expect(judgeClock(track, 9_000, 2 * S, LIMIT).kind).toBe('within');
    const v = judgeClock(track, 8_000, 4 * S, LIMIT);
    expect(v).toMatchObject({ kind: 'slow', rate: 0 });
    expect(stretch(v)).toBe(CLOCK_STRETCH_MAX);
  });
});

describe('verified', () => {
  it('is set once a reading is judged within the limit over the baseline, and reset by a suspicion', () => {
    const track = startTrack(0, 0);
    judgeClock(track, 900, 900_000, LIMIT);
    expect(track.verified).toBe(false);
    judgeClock(track, 1_100, 1_100_000, LIMIT);
    expect(track.verified).toBe(true);
    // A reading 2 s late: suspected slow, the track restarts unverified.
    judgeClock(track, 1_500, 3_500_000, LIMIT);
    expect(track.suspect?.kind).toBe('slow');
    expect(track.verified).toBe(false);
  });

  it('drops a suspicion that does not show again in the time it could have, and verifies the clock then', () => {
    const track = startTrack(0, 0);
    judgeClock(track, 1_000, 2_000_000, LIMIT);
    expect(track.suspect?.kind).toBe('slow');
    const overUs = track.suspect?.overUs ?? 0;
    for (let ms = 2_000; ms <= 2_000 + (5 * overUs) / 1000 + 1_000; ms += 250) judgeClock(track, ms - 1_000, ms * 1000, LIMIT);
    expect(track.suspect).toBeNull();
    expect(track.verified).toBe(true);
  });
});

describe('stretch', () => {
  it('is 1/rate for a slow clock, at most CLOCK_STRETCH_MAX, and 1 otherwise', () => {
    expect(stretch({ kind: 'slow', rate: 0.5, overUs: S })).toBe(2);
    expect(stretch({ kind: 'slow', rate: 0.05, overUs: S })).toBe(CLOCK_STRETCH_MAX);
    expect(stretch({ kind: 'fast', rate: 2, overUs: S })).toBe(1);
    expect(stretch({ kind: 'within' })).toBe(1);
  });
});
