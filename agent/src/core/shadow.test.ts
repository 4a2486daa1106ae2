import { describe, expect, it } from 'vitest';
import { acquireIn, askFor, grantFor, keeperWith } from './lease-keeper.fixtures.js';
import { LeaseSlot, type DenialReason } from './lease-slot.js';
import { takeAllAt } from './take-all.js';
import { TakeQueue } from './take-queue.js';

const LIVE = { balanceTokens: 10, expiresAtUs: 1_000_000, hasLease: true, costMaxTokens: 50 };

/** How a slot is in shadow mode: its lease was granted so, the service forces it, or neither. */
type ShadowBy = 'grant' | 'service' | false;

/** A slot in the given state, in shadow mode as `shadow` says (true: by its grant), counting its `onLow` calls. */
function slotWith(
  state: Partial<typeof LIVE> & { unknownPool?: boolean },
  shadow: ShadowBy | true,
): { slot: LeaseSlot; lows: () => number } {
  const slot = new LeaseSlot('pool-a');
  Object.assign(slot, state);
  slot.shadowGranted = shadow === true || shadow === 'grant';
  slot.shadowForced = shadow === 'service';
  let calls = 0;
  slot.onLow = () => {
    calls += 1;
  };
  return { slot, lows: () => calls };
}

describe('LeaseSlot in shadow mode', () => {
  // name, state, cost, now, reason, whether a grant's flag shadows it (only with its lease live)
  const cases: readonly [string, Partial<typeof LIVE> & { unknownPool?: boolean }, number, number, DenialReason, boolean][] = [
    ['no lease', {}, 1, 0, 'no-lease', false],
    ['exhausted', { ...LIVE, balanceTokens: 3 }, 4, 0, 'exhausted', true],
    ['expired', LIVE, 1, 1_000_000, 'expired', false],
    ['never fits', LIVE, 51, 0, 'never-fits', true],
    ['unknown pool', { unknownPool: true }, 2, 0, 'unknown-pool', false],
  ];
  const modes: readonly Exclude<ShadowBy, false>[] = ['service', 'grant'];
  for (const [name, state, cost, nowUs, reason, liveLease] of cases) {
    for (const by of modes.filter((m) => m === 'service' || liveLease)) {
      it(`${name}, shadowed by the ${by}: enforcing denies, shadow admits and counts the same decision apart`, () => {
        const enforced = slotWith(state, false);
        const shadowed = slotWith(state, by);
        expect(enforced.slot.takeAt(cost, nowUs)).toBe(false);
        expect(shadowed.slot.takeAt(cost, nowUs)).toBe(true);
        // The same decision: reason, wanted cost, the keeper's signal, nothing spent.
        expect(shadowed.slot.lastDenial).toBe(reason);
        expect(enforced.slot.lastDenial).toBe(reason);
        expect(shadowed.slot.wantedCostTokens).toBe(enforced.slot.wantedCostTokens);
        expect(shadowed.lows()).toBe(enforced.lows());
        expect(shadowed.slot.balanceTokens).toBe(enforced.slot.balanceTokens);
        expect(shadowed.slot.admittedTokens).toBe(0);
        // Counted apart: the denial counters stay at zero, the shadow ones hold it, by reason.
        expect([shadowed.slot.deniedTokens, shadowed.slot.deniedCount, shadowed.slot.deniedTokensFor(reason)]).toEqual([0, 0, 0]);
        expect([shadowed.slot.shadowDeniedTokens, shadowed.slot.shadowDeniedCount]).toEqual([cost, 1]);
        expect(shadowed.slot.shadowDeniedTokensFor(reason)).toBe(cost);
        expect([enforced.slot.deniedTokens, enforced.slot.deniedTokensFor(reason), enforced.slot.shadowDeniedTokens]).toEqual([
          cost,
          cost,
          0,
        ]);
        // The keeper sees the same refused demand either way.
        expect(shadowed.slot.refusedTokens).toBe(enforced.slot.refusedTokens);
      });
    }
  }

  for (const [name, state, cost, nowUs, reason, liveLease] of cases.filter((c) => !c[5])) {
    it(`${name}: a grant's shadow flag without its live lease enforces (denies, counted as a denial)`, () => {
      expect(liveLease).toBe(false);
      const { slot } = slotWith(state, 'grant');
      expect(slot.takeAt(cost, nowUs)).toBe(false);
      expect([slot.lastDenial, slot.deniedTokensFor(reason), slot.shadowDeniedTokens]).toEqual([reason, cost, 0]);
    });
  }

  it('spends the lease as enforcing does while it covers the cost', () => {
    const { slot } = slotWith(LIVE, true);
    for (let i = 0; i < 10; i += 1) expect(slot.takeAt(1, 10)).toBe(true);
    expect([slot.balanceTokens, slot.admittedTokens, slot.shadowDeniedTokens]).toEqual([0, 10, 0]);
    expect(slot.takeAt(1, 10)).toBe(true);
    expect([slot.balanceTokens, slot.admittedTokens, slot.shadowDeniedTokens, slot.lastDenial]).toEqual([0, 10, 1, 'exhausted']);
  });

  it('still throws for a bad cost', () => {
    const { slot } = slotWith(LIVE, true);
    expect(() => slot.takeAt(0, 10)).toThrow(/positive integer/);
    expect(() => slot.takeAt(1.5, 10)).toThrow(/positive integer/);
    expect(slot.shadowDeniedCount).toBe(0);
  });

  it('shadowAt: the service forcing shadow wins; otherwise a grant flag decides while its lease is live', () => {
    // granted, forced, lease held, now (the lease expires at 1 s), shadow
    const table: readonly [boolean, boolean, boolean, number, boolean][] = [
      [false, false, true, 0, false],
      [true, false, true, 0, true],
      [true, false, true, 999_999, true],
      [true, false, true, 1_000_000, false],
      [true, false, false, 0, false],
      [false, true, false, 0, true],
      [false, true, true, 1_000_000, true],
      [true, true, true, 0, true],
    ];
    for (const [granted, forced, hasLease, nowUs, shadow] of table) {
      const slot = new LeaseSlot('pool-a');
      Object.assign(slot, { ...LIVE, hasLease });
      slot.shadowGranted = granted;
      slot.shadowForced = forced;
      expect(slot.shadowAt(nowUs), `granted ${granted}, forced ${forced}, lease ${hasLease}, at ${nowUs}`).toBe(shadow);
    }
  });
});

describe('takeAllAt with a pool in shadow mode', () => {
  const limiterOf = (slot: LeaseSlot): { readonly slot: LeaseSlot } => ({ slot });

  it('admits when only shadowed parts would deny: enforced parts spent, the would-be denial counted on its part', () => {
    const shadowed = slotWith({ ...LIVE, balanceTokens: 0 }, true).slot;
    const enforced = slotWith(LIVE, false).slot;
    const charges = [
      { limiter: limiterOf(shadowed), cost: 2 },
      { limiter: limiterOf(enforced), cost: 3 },
    ];
    expect(takeAllAt(charges, 10)).toBe(-1);
    expect([shadowed.shadowDeniedTokens, shadowed.deniedTokens, shadowed.lastDenial]).toEqual([2, 0, 'exhausted']);
    expect([enforced.balanceTokens, enforced.admittedTokens]).toEqual([7, 3]);
  });

  it('denies when an enforced part would deny: recorded there, the shadowed part unchanged', () => {
    const shadowed = slotWith({ ...LIVE, balanceTokens: 0 }, true).slot;
    const enforced = slotWith({ ...LIVE, balanceTokens: 1 }, false).slot;
    const charges = [
      { limiter: limiterOf(shadowed), cost: 2 },
      { limiter: limiterOf(enforced), cost: 3 },
    ];
    expect(takeAllAt(charges, 10)).toBe(1);
    expect([enforced.deniedTokens, enforced.balanceTokens, enforced.lastDenial]).toEqual([3, 1, 'exhausted']);
    expect([shadowed.shadowDeniedTokens, shadowed.deniedTokens]).toEqual([0, 0]);
  });

  it('throws for a bad cost on a shadowed part before anything is spent', () => {
    const shadowed = slotWith({ ...LIVE, balanceTokens: 0 }, true).slot;
    const enforced = slotWith(LIVE, false).slot;
    const charges = [
      { limiter: limiterOf(enforced), cost: 3 },
      { limiter: limiterOf(shadowed), cost: 0 },
    ];
    expect(() => takeAllAt(charges, 10)).toThrow(/positive integer/);
    expect([enforced.balanceTokens, shadowed.shadowDeniedCount]).toEqual([10, 0]);
  });
});

describe('TakeQueue in shadow mode', () => {
  it('admits at once what would wait, and what no lease could hold, counting them apart', () => {
    const slot = slotWith({ ...LIVE, balanceTokens: 1 }, true).slot;
    const host = { slot, waitingTokens: 0 };
    const queue = new TakeQueue<string>(host);
    // Would-be denials spend nothing: nothing to give back (RECEIPT_NONE).
    expect(queue.arrive(4, 1000, 'a', 10)).toEqual({ kind: 'admitted', receipt: 0 });
    expect(queue.arrive(51, 1000, 'b', 10)).toEqual({ kind: 'admitted', receipt: 0 });
    expect(queue.length).toBe(0);
    expect([slot.shadowDeniedTokens, slot.shadowDeniedTokensFor('never-fits'), host.waitingTokens]).toEqual([55, 51, 0]);
    expect(queue.arrive(1, 1000, 'c', 10).kind).toBe('admitted');
    expect(slot.balanceTokens).toBe(0);
  });

  it('admits takes that waited from before the switch at the next poll', () => {
    const slot = slotWith({ ...LIVE, balanceTokens: 0 }, false).slot;
    const host = { slot, waitingTokens: 0 };
    const queue = new TakeQueue<string>(host);
    expect(queue.arrive(2, 1000, 'a', 10).kind).toBe('waiting');
    slot.shadowGranted = true;
    expect(queue.poll(20).admitted).toEqual(['a']);
    expect([queue.length, host.waitingTokens, slot.shadowDeniedTokens]).toEqual([0, 0, 2]);
  });
});

describe('LeaseKeeper and the grant flag', () => {
  it('switches with each grant: the flag of the latest grant applies', () => {
    const keeper = keeperWith();
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(first.seq, grantFor(first, { shadow: true }), 1_000);
    expect(keeper.slot.shadowAt(1_000)).toBe(true);
    keeper.slot.takeAt(keeper.slot.balanceTokens, 2_000);
    expect(keeper.slot.takeAt(1, 2_000)).toBe(true);
    expect(keeper.slot.shadowDeniedTokens).toBe(1);
    const second = acquireIn(keeper.tick(3_000));
    keeper.onReply(second.seq, grantFor(second), 4_000);
    expect(keeper.slot.shadowAt(4_000)).toBe(false);
    keeper.slot.takeAt(keeper.slot.balanceTokens, 5_000);
    expect(keeper.slot.takeAt(1, 5_000)).toBe(false);
    expect([keeper.slot.deniedTokens, keeper.slot.shadowDeniedTokens]).toEqual([1, 1]);
  });

  it('asks for the same tokens in shadow mode as when enforcing', () => {
    const asks: number[][] = [];
    for (const shadow of [false, true]) {
      const keeper = keeperWith();
      const first = acquireIn(keeper.tick(0));
      keeper.onReply(first.seq, grantFor(first, { tokensGranted: 5, ...(shadow ? { shadow } : {}) }), 1_000);
      const wanted: number[] = [];
      for (let t = 1; t <= 4; t += 1) {
        for (let i = 0; i < 20; i += 1) keeper.slot.takeAt(1, t * 100_000);
        const actions = keeper.tick(t * 100_000 + 1);
        const request = actions.find((a) => a.message.op === 'acquire')?.message;
        wanted.push(request?.op === 'acquire' ? request.tokensWanted : 0);
        if (request?.op === 'acquire') keeper.onReply(request.seq, grantFor(request, { tokensGranted: 5 }), t * 100_000 + 2);
      }
      asks.push(wanted);
    }
    expect(asks[1]).toEqual(asks[0]);
    expect(asks[0]?.some((tokens) => tokens > 0)).toBe(true);
  });
});

describe("LeaseKeeper: a grant's modes live and die with its lease", () => {
  /** A keeper holding a shadow lease of 5 tokens granted at 1 ms (the request left at 0; TTL 2 s, agent-side expiry 1.9 s). */
  const shadowLease = (fields: Parameters<typeof grantFor>[1] = {}): ReturnType<typeof keeperWith> => {
    const keeper = keeperWith();
    const first = acquireIn(keeper.tick(0));
    keeper.onReply(first.seq, grantFor(first, { tokensGranted: 5, shadow: true, ...fields }), 1_000);
    return keeper;
  };

  it('an idle return ends shadow mode: with no lease, a cost beyond the tokens is denied no-lease', () => {
    const keeper = keeperWith();
    const first = askFor(keeper, 100, 0);
    keeper.onReply(first.seq, grantFor(first, { tokensGranted: 100, shadow: true, ttlMs: 10_000 }), 1_000);
    expect(keeper.slot.takeAt(30, 10_000)).toBe(true);
    expect(keeper.slot.shadowAt(10_000)).toBe(true);
    expect(keeper.tick(10_000)).toEqual([]);
    // Idle for idleReturnMs (3 s) with tokens in hand: the keeper returns them, and the shadow flag goes with the lease.
    expect(keeper.tick(3_010_000).map((a) => a.message.op)).toEqual(['return']);
    expect(keeper.slot.hasLease).toBe(false);
    expect(keeper.slot.shadowAt(3_010_001)).toBe(false);
    expect(keeper.slot.takeAt(3, 3_010_001)).toBe(false);
    expect([keeper.slot.lastDenial, keeper.slot.deniedTokensFor('no-lease'), keeper.slot.shadowDeniedTokens]).toEqual(['no-lease', 3, 0]);
  });

  it('expiry ends shadow mode at the expiry instant, before the keeper ticks', () => {
    const keeper = shadowLease();
    const expiresAtUs = keeper.slot.expiresAtUs;
    expect(keeper.slot.takeAt(6, expiresAtUs - 1)).toBe(true);
    expect(keeper.slot.takeAt(6, expiresAtUs)).toBe(false);
    expect(keeper.slot.lastDenial).toBe('expired');
    keeper.tick(expiresAtUs);
    expect([keeper.slot.hasLease, keeper.slot.shadowGranted]).toEqual([false, false]);
    expect(keeper.slot.takeAt(1, expiresAtUs + 1)).toBe(false);
  });

  it('the largest cost of an ended lease refuses nothing: no never-fits verdict without a live lease', () => {
    const keeper = shadowLease({ shadow: false, maxLeaseTokens: 20, capacityTokens: 40 });
    expect(keeper.slot.costMaxTokens).toBe(20);
    expect(keeper.slot.takeAt(21, 10_000)).toBe(false);
    expect(keeper.slot.lastDenial).toBe('never-fits');
    keeper.tick(keeper.slot.expiresAtUs);
    expect(keeper.slot.costMaxTokens).toBe(Infinity);
    expect(keeper.slot.takeAt(21, keeper.slot.expiresAtUs + 1)).toBe(false);
    expect(keeper.slot.lastDenial).toBe('no-lease');
    // The pool's limits stay known for what is shown (headers, waits), never to admit.
    expect(keeper.limits?.maxLeaseTokens).toBe(20);
  });

  it('a rate lease stops accruing when it ends', () => {
    const keeper = shadowLease({ shadow: false, rate: { tokensPerPeriod: 10, periodMs: 10, capTokens: 50 } });
    expect(keeper.slot.rateTokens).toBeGreaterThan(0);
    keeper.tick(keeper.slot.expiresAtUs);
    expect([keeper.slot.hasLease, keeper.slot.rateTokens, keeper.slot.balanceTokens]).toEqual([false, 0, 0]);
    expect(keeper.slot.takeAt(1, keeper.slot.expiresAtUs + 10_000_000)).toBe(false);
    expect(keeper.slot.balanceTokens).toBe(0);
  });

  it("the service forcing shadow mode outlives leases: it is the service's own setting", () => {
    const keeper = shadowLease({ shadow: false });
    keeper.slot.shadowForced = true;
    keeper.tick(keeper.slot.expiresAtUs);
    expect(keeper.slot.takeAt(3, keeper.slot.expiresAtUs + 1)).toBe(true);
    expect(keeper.slot.shadowDeniedTokensFor('no-lease')).toBe(3);
  });
});
