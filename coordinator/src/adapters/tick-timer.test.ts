/** TickTimer: nothing a tick throws escapes; the error is reported and ticking goes on. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TICK_MS_MAX, TickTimer } from './tick-timer.js';

describe('TickTimer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reports a throwing tick and ticks again within TICK_MS_MAX', () => {
    const nowUs = (): number => Date.now() * 1000;
    const errors: unknown[] = [];
    let calls = 0;
    const timer = new TickTimer(
      nowUs,
      () => {
        calls += 1;
        if (calls === 1) throw new Error('tick broke');
        return Infinity;
      },
      (error) => errors.push(error),
    );
    timer.schedule(nowUs() + 1000);
    vi.advanceTimersByTime(1);
    expect(calls).toBe(1);
    expect(errors).toHaveLength(1);
    vi.advanceTimersByTime(TICK_MS_MAX);
    expect(calls).toBe(2);
    timer.stop();
  });

  it('keeps ticking when the error handler throws too', () => {
    const nowUs = (): number => Date.now() * 1000;
    let calls = 0;
    const timer = new TickTimer(
      nowUs,
      () => {
        calls += 1;
        throw new Error('tick broke');
      },
      () => {
        throw new Error('logger broke');
      },
    );
    timer.schedule(0);
    vi.advanceTimersByTime(3 * TICK_MS_MAX);
    expect(calls).toBeGreaterThanOrEqual(3);
    timer.stop();
  });
});
