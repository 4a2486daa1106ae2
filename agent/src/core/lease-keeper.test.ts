/**
 * LeaseKeeper examples: prefetch, one request in flight, grants and the
 * agent-side expiry, retries and abandoned sequences, renewal reports,
 * expiry. Idle return, close, the low watermark and back-off are in
 * lease-keeper-lifecycle.test.ts; the property test in lease-keeper-property.test.ts.
 */
import { encodeMessage } from '@tokenlease/shared';
import { describe, expect, it } from 'vitest';
import { keeperOptions, type KeeperOptions } from './keeper-options.js';
import { LeaseKeeper } from './lease-keeper.js';
import { acquireIn, askFor, grant, grantFor, keeperWith, only, TEST_SECRET, testHooks } from './lease-keeper.fixtures.js';

/** Agent-side lease life of a grant, µs: ttl·(1 − drift), rounded down. */
const lifeUs = (ttlMs: number, driftMargin = 0.05): number => Math.floor(ttlMs * 1000 * (1 - driftMargin));

/** A keeper holding lease L1 with `tokens`, asked for at 0 and granted at 1 ms (rtt 1 ms: renew lead 24 ms). */
function leased(tokens = 100, options: Partial<KeeperOptions> = {}, ttlMs = 2000): LeaseKeeper {
  const keeper = keeperWith(options);
  const request = askFor(keeper, tokens, 0);
  expect(keeper.onReply(request.seq, grantFor(request, { tokensGranted: tokens, ttlMs }), 1_000)).toEqual([]);
  return keeper;
}

describe('LeaseKeeper prefetch', () => {
  const cases: readonly [number, number][] = [
    // initialTokens, holdMs
    [1, 0],
    [5, 200],
    [40, 60_000],
  ];
  it.each(cases)('first tick asks for initialTokens %i with holdMs %i and no lease', (initialTokens, holdMs) => {
    const keeper = keeperWith({ initialTokens, holdMs });
    const action = only(keeper.tick(1_000));
    expect(action).toEqual({
      type: 'send',
      seq: 101,
      timeoutMs: holdMs + 1000,
      message: {
        v: 2,
        op: 'acquire',
        agentId: 'agent-1',
        pool: 'pool-a',
        leaseSecret: TEST_SECRET,
        seq: 101,
        leaseId: null,
        tokensLeft: 0,
        tokensWanted: initialTokens,
        demandPerSecond: 0,
        holdMs,
        clockMs: 1,
      },
    });
    expect(keeper.stats).toMatchObject({ requests: 1, attempts: 1 });
  });

  it('keeps one request in flight: further ticks send nothing until it is answered', () => {
    const keeper = keeperWith({ initialTokens: 100 });
    const first = acquireIn(keeper.tick(0));
    for (const nowUs of [0, 1_000, 500_000, 900_000]) {
      expect(keeper.slot.takeAt(1, nowUs)).toBe(false); // demand waiting changes nothing
      expect(keeper.tick(nowUs)).toEqual([]);
    }
    expect(keeper.nextDeadlineUs()).toBe(Infinity);
    expect(keeper.stats).toMatchObject({ requests: 1, attempts: 1 });
    keeper.onReply(first.seq, grantFor(first), 900_001);
    expect(keeper.slot.balanceTokens).toBe(100);
  });
});

describe('LeaseKeeper grant', () => {
  const cases: readonly [string, number, number, number, number, number, number, number][] = [
    // name, sentAtUs, repliedAtUs, ttlMs, driftMargin, capacityTokens, maxLeaseTokens, tokensGranted
    ['quick reply', 1_000, 3_000, 2000, 0.05, 5000, 1000, 100],
    ['held reply', 0, 150_000, 10_000, 0.1, 1000, 300, 300],
    ['rounded down', 7_777, 8_000, 333, 0.3, 64, 64, 5],
  ];
  it.each(cases)(
    '%s: expiry counts from the send, not the reply',
    (_n, sentAtUs, repliedAtUs, ttlMs, driftMargin, capacityTokens, maxLeaseTokens, tokensGranted) => {
      const keeper = keeperWith({ driftMargin, initialTokens: tokensGranted });
      const request = acquireIn(keeper.tick(sentAtUs));
      expect(keeper.onReply(request.seq, grantFor(request, { ttlMs, capacityTokens, maxLeaseTokens }), repliedAtUs)).toEqual([]);
      const s = keeper.slot;
      expect(s.balanceTokens).toBe(tokensGranted);
      expect(s.hasLease).toBe(true);
      expect(s.costMaxTokens).toBe(Math.min(capacityTokens, maxLeaseTokens));
      expect(s.expiresAtUs).toBe(sentAtUs + lifeUs(ttlMs, driftMargin));
      expect(s.expiresAtUs).toBeLessThan(repliedAtUs + lifeUs(ttlMs, driftMargin));
      expect(keeper.stats).toMatchObject({ leasesStarted: 1, tokensGranted });
      expect(keeper.rttUs).toBe(repliedAtUs - sentAtUs);
    },
  );

  it('rounds the agent-side life down: 333 ms at drift 0.3 is 233099 µs', () => {
    expect(lifeUs(333, 0.3)).toBe(233_099);
  });
});

describe('LeaseKeeper retries', () => {
  it('resends the same sequence and bytes after a growing, capped backoff', () => {
    const keeper = keeperWith(); // backoff 10 ms → 80 ms, jitter factor 0.75
    const first = only(keeper.tick(0));
    const bytes = encodeMessage(first.message);
    const expectedDelaysUs = [7_500, 15_000, 30_000, 60_000, 60_000, 60_000];
    let nowUs = 0;
    for (const delayUs of expectedDelaysUs) {
      nowUs += 1_000; // no responders, after 1 ms
      expect(keeper.onFailure(first.seq, 'no-responders', 'nobody home', nowUs)).toEqual([]);
      expect(keeper.nextDeadlineUs()).toBe(nowUs + delayUs);
      expect(keeper.tick(nowUs + delayUs - 1)).toEqual([]);
      nowUs += delayUs;
      const again = only(keeper.tick(nowUs));
      expect(again.seq).toBe(first.seq);
      expect(again.message).toBe(first.message);
      expect(encodeMessage(again.message)).toEqual(bytes);
    }
    expect(keeper.stats).toMatchObject({ requests: 1, attempts: 7, failures: 6, lastErrorCode: 'no-responders' });
  });

  const jitter: readonly [number, number][] = [
    // random(), first delay µs (10 ms · (0.5 + random/2))
    [0, 5_000],
    [0.5, 7_500],
    [0.999_999, 10_000],
  ];
  it.each(jitter)('jitters the delay: random %d gives %i µs', (random, delayUs) => {
    const keeper = keeperWith({}, random);
    const seq = only(keeper.tick(0)).seq;
    keeper.onFailure(seq, 'timeout', 'no reply', 1_000);
    expect(keeper.nextDeadlineUs()).toBe(1_000 + delayUs);
  });

  it('counts the expiry of a retried request from its first send, and takes no RTT sample from it', () => {
    const keeper = keeperWith();
    const request = acquireIn(keeper.tick(10_000));
    const seq = request.seq;
    keeper.onFailure(seq, 'timeout', 'no reply', 20_000);
    expect(only(keeper.tick(27_500)).seq).toBe(seq);
    keeper.onReply(seq, grantFor(request), 30_000);
    expect(keeper.slot.expiresAtUs).toBe(10_000 + lifeUs(2000));
    expect(keeper.rttUs).toBe(2000); // the default: a retried round-trip measures nothing
  });

  const staleness: readonly [number, boolean][] = [
    // failure at µs after the first send (assumed TTL 2 s: three quarters of the life is 1 425 000 µs), abandoned
    [1_424_999, false],
    [1_425_000, true],
    [1_600_000, true],
  ];
  it.each(staleness)('a failure %i µs after the first send abandons the sequence: %s', (failAtUs, abandoned) => {
    const keeper = keeperWith({ initialTokens: 10 });
    const old = only(keeper.tick(0));
    expect(keeper.slot.takeAt(3, 500)).toBe(false); // demand, so the keeper asks again
    expect(keeper.onFailure(old.seq, 'timeout', 'no reply', failAtUs)).toEqual([]);
    expect(keeper.tick(failAtUs + 7_499)).toEqual([]);
    const next = acquireIn(keeper.tick(failAtUs + 7_500));
    if (!abandoned) {
      expect(next).toBe(old.message);
      return;
    }
    expect(next.seq).toBe(102);
    expect(next.tokensWanted).toBeGreaterThanOrEqual(3);
    // The old sequence's reply is stale now; the new one's counts from its own send.
    expect(keeper.onReply(old.seq, grant(old.seq), failAtUs + 8_000)).toEqual([]);
    expect(keeper.slot.hasLease).toBe(false);
    expect(keeper.slot.balanceTokens).toBe(0);
    keeper.onReply(next.seq, grantFor(next, { tokensGranted: 10 }), failAtUs + 9_000);
    expect(keeper.slot.balanceTokens).toBe(10);
    expect(keeper.slot.expiresAtUs).toBe(failAtUs + 7_500 + lifeUs(2000));
  });

  it('measures staleness with the TTL of the last grant', () => {
    const keeper = leased(100, {}, 600); // life 570 ms: stale after 427.5 ms
    expect(keeper.slot.takeAt(200, 2_000)).toBe(false); // too few: ask
    const renew = acquireIn(keeper.tick(2_000));
    expect(keeper.onFailure(renew.seq, 'timeout', 'no reply', 2_000 + 427_500)).toEqual([]);
    expect(acquireIn(keeper.tick(2_000 + 427_500 + 7_500)).seq).not.toBe(renew.seq);
  });

  it('ignores replies and failures for a sequence that is not in flight', () => {
    const keeper = keeperWith({ initialTokens: 20 });
    const request = acquireIn(keeper.tick(0));
    const seq = request.seq;
    expect(keeper.onReply(999, grant(999), 1_000)).toEqual([]);
    expect(keeper.onFailure(999, 'timeout', 'no reply', 1_000)).toEqual([]);
    expect(keeper.slot.hasLease).toBe(false);
    expect(keeper.stats.failures).toBe(0);
    keeper.onReply(seq, grantFor(request, { tokensGranted: 20 }), 2_000);
    // A duplicate of the reply just applied must not grant twice.
    expect(keeper.onReply(seq, grantFor(request, { tokensGranted: 20 }), 3_000)).toEqual([]);
    expect(keeper.slot.balanceTokens).toBe(20);
    expect(keeper.stats.tokensGranted).toBe(20);
  });
});

describe('LeaseKeeper renewal', () => {
  const triggers: readonly [string, (keeper: LeaseKeeper) => number][] = [
    [
      'a denied cost above the balance',
      (keeper) => {
        expect(keeper.tick(499_999)).toEqual([]);
        expect(keeper.slot.takeAt(80, 500_000)).toBe(false);
        return 500_000;
      },
    ],
    [
      'the renew lead before expiry while in use',
      (keeper) => {
        expect(keeper.tick(1_000_000)).toEqual([]); // sees the 30 tokens spent: in use
        const atUs = lifeUs(2000) - 24_000; // expiry − (4·rtt + 20 ms)
        expect(keeper.tick(atUs - 1)).toEqual([]);
        return atUs;
      },
    ],
  ];
  it.each(triggers)('asks under the lease held, reporting the balance, on %s', (_name, trigger) => {
    const keeper = leased(100);
    for (let i = 0; i < 30; i += 1) expect(keeper.slot.takeAt(1, 10_000 + i)).toBe(true);
    const atUs = trigger(keeper);
    const renew = acquireIn(keeper.tick(atUs));
    expect(renew).toMatchObject({ seq: 102, leaseId: 'L1', tokensLeft: 70 });
    expect(renew.tokensLeft).toBe(keeper.slot.balanceTokens);
  });

  it('adds a grant under the same lease id to what is left, and extends the expiry', () => {
    const keeper = leased(100);
    expect(keeper.slot.takeAt(30, 10_000)).toBe(true);
    expect(keeper.slot.takeAt(80, 20_000)).toBe(false);
    const renew = acquireIn(keeper.tick(20_000));
    expect(renew.tokensWanted).toBeGreaterThanOrEqual(80 - 70); // at least up to the denied cost
    expect(keeper.slot.takeAt(5, 21_000)).toBe(true); // spent while in flight
    expect(keeper.onReply(renew.seq, grantFor(renew, { tokensGranted: 30 }), 22_000)).toEqual([]);
    expect(keeper.slot.balanceTokens).toBe(65 + 30);
    expect(keeper.slot.expiresAtUs).toBe(20_000 + lifeUs(2000));
    expect(keeper.stats).toMatchObject({ leasesStarted: 1, tokensGranted: 130 });
    expect(keeper.slot.wantedCostTokens).toBe(0); // satisfied
  });

  it('replaces the balance on a grant under a new lease id, and names it next time', () => {
    const keeper = leased(100);
    expect(keeper.slot.takeAt(30, 10_000)).toBe(true);
    expect(keeper.slot.takeAt(80, 20_000)).toBe(false);
    const renew = askFor(keeper, 160, 20_000); // a take() of 160 waiting too: the ask covers 90 more
    expect(keeper.slot.takeAt(5, 21_000)).toBe(true);
    expect(keeper.onReply(renew.seq, grantFor(renew, { leaseId: 'L2', tokensGranted: 90 }), 22_000)).toEqual([]);
    expect(keeper.slot.balanceTokens).toBe(90); // the 65 left of L1 are gone
    expect(keeper.slot.expiresAtUs).toBe(20_000 + lifeUs(2000));
    expect(keeper.stats.leasesStarted).toBe(2);
    expect(keeper.slot.takeAt(95, 30_000)).toBe(false);
    expect(acquireIn(keeper.tick(30_000))).toMatchObject({ leaseId: 'L2', tokensLeft: 90 });
  });
});

describe('LeaseKeeper expiry', () => {
  const expiresAtUs = lifeUs(2000); // asked at 0

  const instants: readonly [number, boolean][] = [
    [expiresAtUs - 1, true],
    [expiresAtUs, false],
    [expiresAtUs + 1, false],
    [expiresAtUs + 60_000_000, false],
  ];
  it.each(instants)('admits at %i: %s, and tick then clears the lease', (nowUs, admits) => {
    const keeper = leased(100, { idleReturnMs: 86_400_000 });
    expect(keeper.slot.expiresAtUs).toBe(expiresAtUs);
    expect(keeper.slot.takeAt(1, nowUs)).toBe(admits);
    if (!admits) {
      expect(keeper.slot.lastDenial).toBe('expired');
      expect(keeper.slot.balanceTokens).toBe(100); // not yet zeroed: the clock check alone denies
    }
    keeper.tick(nowUs);
    expect(keeper.slot.hasLease).toBe(admits);
    expect(keeper.slot.balanceTokens).toBe(admits ? 99 : 0);
    expect(keeper.slot.takeAt(1, nowUs)).toBe(admits);
  });

  it('wakes by the expiry at the latest while it holds a lease', () => {
    const keeper = leased(100, { idleReturnMs: 86_400_000 });
    expect(keeper.nextDeadlineUs()).toBeLessThanOrEqual(expiresAtUs);
    expect(keeper.nextDeadlineUs()).toBe(expiresAtUs - 24_000);
  });

  it('renews an expired lease by naming it with nothing left, and drops nothing it does not hold', () => {
    const keeper = leased(100, { idleReturnMs: 86_400_000 });
    expect(keeper.slot.takeAt(1, expiresAtUs)).toBe(false);
    const renew = acquireIn(keeper.tick(expiresAtUs));
    expect(renew).toMatchObject({ leaseId: 'L1', tokensLeft: 0 });
    keeper.onReply(renew.seq, grantFor(renew, { tokensGranted: 5 }), expiresAtUs + 1_000);
    expect(keeper.slot.balanceTokens).toBe(5); // the expired 100 stay lost
    expect(keeper.slot.expiresAtUs).toBe(expiresAtUs + lifeUs(2000));
  });
});

describe('agent class', () => {
  it('is sent with every acquire when configured, and absent otherwise', () => {
    const withClass = new LeaseKeeper(
      'a',
      'p',
      () => 1,
      keeperOptions({ agentClass: 'premium' }),
      () => 0.5,
      TEST_SECRET,
      testHooks(),
    );
    const sent = withClass.tick(0)[0]?.message;
    expect(sent).toMatchObject({ op: 'acquire', agentClass: 'premium' });
    const without = new LeaseKeeper(
      'b',
      'p',
      () => 1,
      keeperOptions(),
      () => 0.5,
      TEST_SECRET,
      testHooks(),
    );
    expect('agentClass' in (without.tick(0)[0]?.message ?? {})).toBe(false);
  });
});

describe('a starved agent', () => {
  it('asks again as soon as a grant arrives when it was denied since it last asked, and not otherwise', () => {
    const keeper = keeperWith({ initialTokens: 10 });
    const first = acquireIn(keeper.tick(0));
    expect(keeper.onReply(first.seq, grantFor(first, { tokensGranted: 10 }), 1_000)).toEqual([]); // not denied: no new ask
    for (let i = 0; i < 10; i += 1) expect(keeper.slot.takeAt(1, 2_000)).toBe(true);
    expect(keeper.slot.takeAt(1, 2_000)).toBe(false); // denied
    const second = acquireIn(keeper.tick(2_000));
    expect(keeper.slot.takeAt(1, 2_500)).toBe(false); // denied again while the request is out
    // The grant brings plenty, but the agent was denied since it asked: it asks again at once.
    const again = keeper.onReply(second.seq, grantFor(second, { tokensGranted: 10 }), 3_000);
    expect(again).toHaveLength(1);
    expect(again[0]!.message).toMatchObject({ op: 'acquire', tokensLeft: 10 });
  });
});
