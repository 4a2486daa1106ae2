import { describe, expect, it } from 'vitest';
import { propertySeed, seededRandom } from '@tokenlease/shared/testing';
import { HOLDS_MAX, SlotHolds } from './slot-holds.js';

function holdsOf(holdUs: number): SlotHolds {
  const holds = new SlotHolds();
  holds.holdUs = holdUs;
  return holds;
}

describe('SlotHolds', () => {
  it('gives a released slot of the current lease back once, and a stale or unknown handle nothing', () => {
    const holds = holdsOf(1000);
    const a = holds.take(0, true);
    const b = holds.take(10, true);
    expect(a).toBeGreaterThan(0);
    expect(holds.busy).toBe(2);
    expect(holds.release(a)).toBe(1);
    expect(holds.release(a)).toBe(-1);
    expect(holds.release(0)).toBe(-1);
    expect(holds.release(-5)).toBe(-1);
    expect(holds.release(1.5)).toBe(-1);
    expect(holds.release(Number.MAX_SAFE_INTEGER)).toBe(-1);
    expect(holds.busy).toBe(1);
    // The entry of `a` is reused with a new stamp: `a` still names nothing.
    const c = holds.take(20, true);
    expect(c).not.toBe(a);
    expect(holds.release(a)).toBe(-1);
    expect(holds.release(b)).toBe(1);
    expect(holds.release(c)).toBe(1);
    expect(holds.inFlight).toBe(0);
  });

  it('ends holds at their bound, oldest first, and a release after that changes nothing', () => {
    const holds = holdsOf(100);
    const a = holds.take(0, true);
    holds.take(50, true);
    expect(holds.nextBoundUs()).toBe(100);
    expect(holds.expire(99)).toBe(0);
    expect(holds.expire(100)).toBe(1);
    expect(holds.release(a)).toBe(-1);
    expect(holds.nextBoundUs()).toBe(150);
    expect(holds.expire(1000)).toBe(1);
    expect(holds.nextBoundUs()).toBe(Infinity);
  });

  it('gives nothing back for holds of an ended lease or of shadow mode', () => {
    const holds = holdsOf(100);
    const old = holds.take(0, true);
    const shadow = holds.take(0, false);
    expect(holds.busy).toBe(1);
    expect(holds.inFlight).toBe(2);
    holds.newLease();
    expect(holds.busy).toBe(0);
    const fresh = holds.take(10, true);
    expect(holds.release(old)).toBe(0);
    expect(holds.release(shadow)).toBe(0);
    expect(holds.busy).toBe(1);
    expect(holds.expire(200)).toBe(1);
    expect(holds.release(fresh)).toBe(-1);
  });

  it('grows past its first arrays and keeps every handle apart', () => {
    const holds = holdsOf(1_000_000);
    const handles = Array.from({ length: 1000 }, (_, i) => holds.take(i, true));
    expect(new Set(handles).size).toBe(1000);
    expect(holds.busy).toBe(1000);
    for (const h of handles.filter((_, i) => i % 2 === 0)) expect(holds.release(h)).toBe(1);
    expect(holds.busy).toBe(500);
    expect(holds.expire(2_000_000)).toBe(500);
    expect(HOLDS_MAX).toBe(2 ** 20);
  });

  it('agrees with a plain list of holds under random takes, releases, bounds and lease changes', () => {
    const seed = propertySeed('agent/src/core/slot-holds.test.ts');
    const random = seededRandom(seed);
    const holds = holdsOf(50);
    // The model: handle → [taken at, lease, counted].
    const model = new Map<number, { atUs: number; lease: number; counted: boolean }>();
    let lease = 0;
    let nowUs = 0;
    for (let step = 0; step < 20_000; step += 1) {
      nowUs += random.int(0, 5);
      const roll = random.next();
      let back = 0;
      let modelBack = 0;
      for (const [h, m] of model) {
        if (m.atUs + 50 <= nowUs) {
          model.delete(h);
          if (m.counted && m.lease === lease) modelBack += 1;
        }
      }
      back += holds.expire(nowUs);
      if (roll < 0.5) {
        const counted = random.next() < 0.9;
        model.set(holds.take(nowUs, counted), { atUs: nowUs, lease, counted });
      } else if (roll < 0.9 && model.size > 0) {
        const keys = [...model.keys()];
        const h = keys[random.int(0, keys.length - 1)] as number;
        const m = model.get(h)!;
        model.delete(h);
        const got = holds.release(h);
        back += Math.max(0, got);
        modelBack += m.counted && m.lease === lease ? 1 : 0;
        expect(got, `seed ${seed} step ${step}`).toBe(m.counted && m.lease === lease ? 1 : 0);
      } else if (roll < 0.92) {
        lease += 1;
        holds.newLease();
      }
      expect(back, `seed ${seed} step ${step}`).toBe(modelBack);
      const busy = [...model.values()].filter((m) => m.counted && m.lease === lease).length;
      expect(holds.busy, `seed ${seed} step ${step}`).toBe(busy);
      expect(holds.inFlight, `seed ${seed} step ${step}`).toBe(model.size);
    }
  });
});
