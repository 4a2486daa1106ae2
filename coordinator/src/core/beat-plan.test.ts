import { describe, expect, it } from 'vitest';
import { BeatPlan, HEARTBEAT_RETRY_MS } from './beat-plan.js';

const MS = 1000;

describe('BeatPlan', () => {
  it('is due at once when started, then every interval while the store answers', () => {
    const plan = new BeatPlan(3000);
    plan.start(0);
    const beats: number[] = [];
    for (let t = 0; t <= 9000 * MS; t += 50 * MS)
      if (plan.begin(t)) {
        beats.push(t / MS);
        plan.end(true, t + 10 * MS);
      }
    expect(beats).toEqual([0, 3000, 6000, 9000]);
  });

  it('is due every HEARTBEAT_RETRY_MS while the store does not answer, and back at the interval once it does', () => {
    const plan = new BeatPlan(3000);
    plan.start(0);
    const beats: number[] = [];
    for (let t = 0; t <= 6000 * MS; t += 50 * MS)
      if (plan.begin(t)) {
        beats.push(t / MS);
        plan.end(t >= 1000 * MS, t);
      }
    expect(beats).toEqual([0, 250, 500, 750, 1000, 3000, 6000]);
    expect(HEARTBEAT_RETRY_MS).toBe(250);
  });

  it('never starts a second heartbeat while one runs, and skips the ticks that came meanwhile', () => {
    const plan = new BeatPlan(1000);
    plan.start(0);
    expect(plan.begin(0)).toBe(true);
    expect(plan.dueUs()).toBe(Infinity);
    expect(plan.begin(1500 * MS)).toBe(false);
    plan.end(true, 2500 * MS);
    expect(plan.dueUs()).toBe(3000 * MS);
  });

  it('takes a request while a heartbeat runs as met by that one', () => {
    const plan = new BeatPlan(1000);
    plan.start(0);
    plan.begin(0);
    plan.request(5 * MS);
    plan.end(true, 10 * MS);
    expect(plan.dueUs()).toBe(1000 * MS);
  });

  it('is due at once on request, and never after stop', () => {
    const plan = new BeatPlan(1000);
    plan.start(0);
    plan.begin(0);
    plan.end(true, 10 * MS);
    plan.request(400 * MS);
    expect(plan.dueUs()).toBe(400 * MS);
    plan.stop();
    expect(plan.dueUs()).toBe(Infinity);
    expect(plan.begin(5000 * MS)).toBe(false);
  });

  it('reports the first failure of a streak, then one per interval', () => {
    const plan = new BeatPlan(1000);
    expect([1, 2, 3, 4, 5, 9].map((n) => plan.reportsFailure(n))).toEqual([true, false, false, false, true, true]);
  });
});
