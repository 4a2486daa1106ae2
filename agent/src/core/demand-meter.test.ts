import { describe, expect, it } from 'vitest';
import { DemandMeter } from './demand-meter.js';

describe('DemandMeter', () => {
  it('estimates 0 before two samples', () => {
    const meter = new DemandMeter();
    expect(meter.perSecond).toBe(0);
    expect(meter.tokensOver(1_000_000)).toBe(0);
    meter.sample(500, 1_000);
    expect(meter.perSecond).toBe(0);
    expect(meter.tokensOver(1_000_000)).toBe(0);
  });

  it('weights one step by 1 − e^(−elapsed/τ)', () => {
    const meter = new DemandMeter(1_000_000);
    meter.sample(0, 0);
    meter.sample(1_000, 1_000_000); // 1000 tokens/s for one time constant
    expect(meter.perSecond).toBeCloseTo(1000 * (1 - Math.exp(-1)), 9);
    expect(meter.tokensOver(1_000_000)).toBe(633); // 632.12… rounded up
    expect(meter.tokensOver(0)).toBe(0);
  });

  it('converges on a steady rate and forgets it when demand stops', () => {
    const meter = new DemandMeter(1_000_000);
    for (let t = 0; t <= 10_000_000; t += 10_000) meter.sample(t / 2_000, t); // 500 tokens/s
    // From 0, after 10 time constants: 500·(1 − e^−10).
    expect(meter.perSecond).toBeCloseTo(500 * (1 - Math.exp(-10)), 6);
    for (let t = 10_010_000; t <= 20_000_000; t += 10_000) meter.sample(5_000, t);
    expect(meter.perSecond).toBeCloseTo(500 * (1 - Math.exp(-10)) * Math.exp(-10), 9);
    expect(meter.tokensOver(1_000_000)).toBe(1);
  });

  it('ignores samples at the same instant or earlier', () => {
    const meter = new DemandMeter();
    meter.sample(0, 1_000_000);
    meter.sample(100, 2_000_000);
    const before = meter.perSecond;
    meter.sample(10_000, 2_000_000);
    meter.sample(10_000, 1_500_000);
    expect(meter.perSecond).toBe(before);
    // The ignored samples moved nothing: the next step starts from (100, 2 s).
    meter.sample(100, 3_000_000);
    expect(meter.perSecond).toBeCloseTo(before * Math.exp(-1), 9);
  });

  it('forgets faster with a shorter time constant', () => {
    const fast = new DemandMeter(100_000);
    const slow = new DemandMeter(1_000_000);
    for (const meter of [fast, slow]) {
      meter.sample(0, 0);
      meter.sample(100, 100_000); // 1000 tokens/s for 0.1 s
    }
    expect(fast.perSecond).toBeCloseTo(1000 * (1 - Math.exp(-1)), 9);
    expect(slow.perSecond).toBeCloseTo(1000 * (1 - Math.exp(-0.1)), 9);
  });
});
