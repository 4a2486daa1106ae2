import { describe, expect, it } from 'vitest';
import { GrantBudget } from './grant-budget.js';

// B 100, refill 100/s: a token every 10 ms; one round-trip counted up to 700 ms.
const EXPECTED = { capacityTokens: 100, maxLeaseTokens: 20, refillTokens: 100, refillPeriodMs: 1000 };
const RTT_MAX_US = 700_000;
const T0 = 1_000_000;

const budget = (): GrantBudget => new GrantBudget(EXPECTED, RTT_MAX_US, T0);

describe('GrantBudget', () => {
  it('a full pool of 100 gives five grants of 20 at once, then none until its refill', () => {
    const b = budget();
    for (let i = 0; i < 5; i += 1) expect(b.charge(20, 0, 0, T0, T0)).toBeNull();
    expect(b.charge(1, 0, 0, T0, T0)).toMatch(/grants 1 tokens where the expected pool could give 0/);
    expect(b.charge(20, 0, 0, T0 + 199_000, T0 + 199_000)).toMatch(/could give 19/);
    expect(b.charge(20, 0, 0, T0 + 200_000, T0 + 200_000)).toBeNull();
  });

  it('a refusal changes nothing: what fits after it is what fitted before it', () => {
    const b = budget();
    expect(b.charge(100, 0, 0, T0, T0)).toBeNull();
    expect(b.charge(11, 0, 0, T0 + 100_000, T0 + 100_000)).not.toBeNull();
    expect(b.charge(10, 0, 0, T0 + 100_000, T0 + 100_000)).toBeNull();
  });

  const held: readonly (readonly [string, number, number, number, boolean])[] = [
    ['20 on top of 80 held, no round-trip', 80, 20, 0, true],
    ['20 on top of 90 held, no round-trip', 90, 20, 0, false],
    ['20 on top of 90 held, a round-trip of 100 ms', 90, 20, 100_000, true],
    ['80 on top of 95 held, a round-trip of 2 s (counted as 700 ms: 75 fit)', 95, 80, 2_000_000, false],
  ];
  it.each(held)('what the lease holds counts against B, the round-trip’s refill for it: %s', (_name, heldTokens, grant, rttUs, fits) => {
    const b = budget();
    expect(b.charge(grant, heldTokens, 0, T0 + 5_000_000 - rttUs, T0 + 5_000_000) === null).toBe(fits);
  });

  it('a grant decided before its reply was delayed is not refused for the delay: the round-trip’s refill counts', () => {
    const b = budget();
    // Drained by a grant decided at once but delivered 50 ms later; the next, sent then, gets the 5 tokens of those 50 ms at once.
    expect(b.charge(100, 0, 0, T0, T0 + 50_000)).toBeNull();
    expect(b.charge(5, 0, 0, T0 + 50_000, T0 + 50_000)).toBeNull();
    expect(b.charge(1, 0, 0, T0 + 50_000, T0 + 50_000)).not.toBeNull();
  });

  it('tokens given back unspent can be granted again at once', () => {
    const b = budget();
    expect(b.charge(100, 0, 0, T0, T0)).toBeNull();
    b.credit(40, T0 + 1000);
    expect(b.charge(40, 0, 0, T0 + 1000, T0 + 1000)).toBeNull();
    expect(b.charge(1, 0, 0, T0 + 1000, T0 + 1000)).not.toBeNull();
    // A new lease's grant gives back what the replaced one held.
    expect(b.charge(30, 0, 30, T0 + 1000, T0 + 1000)).toBeNull();
  });

  it('idle time does not bank more than B: after an hour, B and one round-trip’s refill', () => {
    const b = budget();
    const later = T0 + 3_600_000_000;
    expect(b.charge(100, 0, 0, later - 100_000, later)).toBeNull();
    expect(b.charge(10, 0, 0, later, later)).toBeNull();
    expect(b.charge(1, 0, 0, later, later)).not.toBeNull();
  });

  it('over any window of grants a fast responder gets at most B + r·T (and one round-trip)', () => {
    const b = budget();
    let granted = 0;
    for (let t = T0; t < T0 + 3_000_000; t += 1000) if (b.charge(20, 0, 0, t, t) === null) granted += 20;
    // 3 s at 100/s on top of B: 400, in grants of 20.
    expect(granted).toBeLessThanOrEqual(400);
    expect(granted).toBeGreaterThanOrEqual(380);
  });
});
