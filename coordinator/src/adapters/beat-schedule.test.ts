import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BeatSchedule, HEARTBEAT_RETRY_MS } from './beat-schedule.js';

describe('BeatSchedule', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A heartbeat that answers as `up` says, counting its calls. */
  function store(up: () => boolean) {
    const calls: number[] = [];
    const beat = async (): Promise<boolean> => {
      calls.push(Date.now());
      await Promise.resolve();
      return up();
    };
    return { calls, beat };
  }

  it('beats at once, then every interval while the store answers', async () => {
    const s = store(() => true);
    const beats = new BeatSchedule(s.beat, () => {}, 3000);
    beats.start();
    await vi.advanceTimersByTimeAsync(9000);
    expect(s.calls.length).toBe(4);
    await beats.stop();
  });

  it('asks again every HEARTBEAT_RETRY_MS while the store does not answer, and at the interval once it does', async () => {
    let up = false;
    const s = store(() => up);
    const beats = new BeatSchedule(s.beat, () => {}, 3000);
    beats.start();
    await vi.advanceTimersByTimeAsync(1000);
    // The first beat at 0, then retries 250 ms apart: 0, 250, 500, 750, 1000.
    expect(s.calls.length).toBe(1 + 1000 / HEARTBEAT_RETRY_MS);
    up = true;
    await vi.advanceTimersByTimeAsync(HEARTBEAT_RETRY_MS);
    const answeredAt = s.calls.length;
    await vi.advanceTimersByTimeAsync(1500);
    // Back to the interval: the next beat only at 3000.
    expect(s.calls.length).toBe(answeredAt);
    await vi.advanceTimersByTimeAsync(500);
    expect(s.calls.length).toBe(answeredAt + 1);
    await beats.stop();
  });

  it('never runs two heartbeats at once, and a thrown one counts as a failure', async () => {
    let running = 0;
    let most = 0;
    const errors: unknown[] = [];
    const beats = new BeatSchedule(
      async () => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 700));
        running -= 1;
        throw new Error('store gone');
      },
      (error) => errors.push(error),
      300,
    );
    beats.start();
    await vi.advanceTimersByTimeAsync(3000);
    expect(most).toBe(1);
    expect(errors.length).toBeGreaterThan(2);
    // stop waits for the running heartbeat.
    const stopped = beats.stop();
    await vi.advanceTimersByTimeAsync(1000);
    await stopped;
  });

  it('reports the first failure in a row, then one per interval', () => {
    const beats = new BeatSchedule(
      () => Promise.resolve(false),
      () => {},
      1000,
    );
    expect([1, 2, 3, 4, 5, 6, 9, 10].map((streak) => beats.reportsFailure(streak))).toEqual([
      true,
      false,
      false,
      false,
      true,
      false,
      true,
      false,
    ]);
  });

  it('beats no more after stop', async () => {
    const s = store(() => false);
    const beats = new BeatSchedule(s.beat, () => {}, 3000);
    beats.start();
    await beats.stop();
    const after = s.calls.length;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(s.calls.length).toBe(after);
  });
});
