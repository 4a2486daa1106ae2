import { describe, expect, it } from 'vitest';
import { checkInFlight, InFlightLog } from './in-flight.js';
import { propertySeed } from './seed.js';
import { seededRandom } from './random.js';

describe('checkInFlight', () => {
  it('counts overlapping holds and passes at the limit', () => {
    const holds = [
      { startUs: 0, endUs: 10 },
      { startUs: 5, endUs: 15 },
      { startUs: 10, endUs: 20 },
    ];
    expect(checkInFlight(holds, 2, 1000)).toMatchObject({ ok: true, peak: 2, peakAtUs: 5 });
    expect(checkInFlight(holds, 1, 1000)).toMatchObject({ ok: false, peak: 2 });
  });

  it('treats a slot released and taken at the same instant as one in flight', () => {
    expect(
      checkInFlight(
        [
          { startUs: 0, endUs: 10 },
          { startUs: 10, endUs: 20 },
        ],
        1,
        1000,
      ).peak,
    ).toBe(1);
  });

  it('counts a request at most its hold bound, released or not', () => {
    const holds = [
      { startUs: 0, endUs: Infinity },
      { startUs: 100, endUs: 500 },
    ];
    expect(checkInFlight(holds, 1, 100)).toMatchObject({ ok: true, peak: 1 });
    expect(checkInFlight(holds, 1, 101)).toMatchObject({ ok: false, peak: 2, peakAtUs: 100 });
  });

  it('refuses a hold that ends before it starts', () => {
    expect(() => checkInFlight([{ startUs: 10, endUs: 5 }], 1, 100)).toThrow(RangeError);
    expect(() => checkInFlight([], 1, 0)).toThrow(RangeError);
  });

  it('agrees with counting every instant, on random holds', () => {
    const seed = propertySeed('shared/src/testing/in-flight.test.ts');
    const random = seededRandom(seed);
    for (let round = 0; round < 200; round += 1) {
      const holdUs = 1 + Math.floor(random.next() * 30);
      const holds = Array.from({ length: 1 + Math.floor(random.next() * 20) }, () => {
        const startUs = Math.floor(random.next() * 60);
        const endUs = random.next() < 0.2 ? Infinity : startUs + Math.floor(random.next() * 40);
        return { startUs, endUs };
      });
      let peak = 0;
      for (let t = 0; t < 200; t += 1) {
        const n = holds.filter((h) => h.startUs <= t && t < Math.min(h.endUs, h.startUs + holdUs)).length;
        peak = Math.max(peak, n);
      }
      expect(checkInFlight(holds, peak, holdUs), `seed ${seed} round ${round}`).toMatchObject({ ok: true, peak });
    }
  });
});

describe('InFlightLog', () => {
  it('judges what was recorded, open holds running to their bound', () => {
    const log = new InFlightLog(1, 50);
    const a = log.start(0);
    log.end(a, 20);
    log.end(a, 90);
    log.start(20);
    expect(log.check()).toMatchObject({ ok: true, peak: 1, holds: 2 });
    log.start(60);
    expect(log.check()).toMatchObject({ ok: false, peak: 2 });
  });
});
