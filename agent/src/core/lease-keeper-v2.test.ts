/**
 * LeaseKeeper under protocol v2: a grant no honest coordinator would send
 * changes nothing and its reason is told once; a `stale-sequence` refusal
 * sends the next request at once, above the floor it names; a `forbidden`
 * refusal moves the keeper to a fresh agent id after the shortest back-off,
 * rather than waiting out the lease that holds its id; every message about a
 * lease carries the keeper's secret, and a secret that is not one is refused.
 */
import type { ErrorCode, LeaseGrant, LeaseRequest, Reply } from '@tokenlease/shared';
import { thrown } from '@tokenlease/shared/testing';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { keeperOptions } from './keeper-options.js';
import { LeaseKeeper, type SendAction } from './lease-keeper.js';
import { acquireIn, askFor, BASE, grantFor, keeperWith, only, TEST_SECRET, testHooks } from './lease-keeper.fixtures.js';

function errorReply(seq: number, code: ErrorCode, retryAfterMs: number, seqFloor?: number): Reply {
  const floor = seqFloor === undefined ? {} : { seqFloor };
  return { v: 2, kind: 'error', seq, code, fault: 'peer', message: `${code} for the test`, retryAfterMs, ...floor };
}

/** A keeper holding lease L1 (100 tokens granted at 1 ms, 30 spent), its renewal for a denied cost of 80 sent at 20 ms. */
function renewing(): { keeper: LeaseKeeper; renew: LeaseRequest } {
  const keeper = keeperWith();
  const first = askFor(keeper, 100, 0);
  expect(keeper.onReply(first.seq, grantFor(first), 1_000)).toEqual([]);
  expect(keeper.slot.takeAt(30, 10_000)).toBe(true);
  expect(keeper.slot.takeAt(80, 20_000)).toBe(false);
  return { keeper, renew: acquireIn(keeper.tick(20_000)) };
}

/** What a refused grant must leave as it was. */
function leaseOf(keeper: LeaseKeeper): unknown {
  const { balanceTokens, hasLease, expiresAtUs, costMaxTokens, wantedCostTokens } = keeper.slot;
  const { tokensGranted, leasesStarted } = keeper.stats;
  return { leaseId: keeper.leaseId, balanceTokens, hasLease, expiresAtUs, costMaxTokens, wantedCostTokens, tokensGranted, leasesStarted };
}

describe('LeaseKeeper implausible grants', () => {
  const rogue = 2 ** 52;
  /** A rogue responder's grant: 2^52 tokens for 24 h, under a lease and limits of its own. */
  const ROGUE: Partial<LeaseGrant> = {
    leaseId: 'rogue',
    tokensGranted: rogue,
    tokensHeld: rogue,
    ttlMs: 86_400_000,
    maxLeaseTokens: rogue,
    capacityTokens: rogue,
  };
  const cases: readonly [string, (renew: LeaseRequest) => Partial<LeaseGrant>, (renew: LeaseRequest) => string][] = [
    // name, what the reply changes in an honest grant for the renewal, the reason
    [
      '2^52 tokens for 24 h under another lease, as a rogue responder would send',
      () => ROGUE,
      (renew) => `grants ${rogue} tokens where ${renew.tokensWanted} were asked for`,
    ],
    [
      'one token more than was asked for',
      (renew) => ({ tokensGranted: renew.tokensWanted + 1, tokensHeld: renew.tokensLeft + renew.tokensWanted + 1 }),
      (renew) => `grants ${renew.tokensWanted + 1} tokens where ${renew.tokensWanted} were asked for`,
    ],
    ['a TTL of 24 h', () => ({ ttlMs: 86_400_000 }), () => 'lasts 86400000 ms, above leaseTtlMsMax 3600000'],
    ['another capacity mid-lease', () => ({ capacityTokens: 6000 }), () => "changes the pool's capacity mid-lease from 5000 to 6000"],
    [
      'a rate above the refill',
      () => ({ rate: { tokensPerPeriod: 1001, periodMs: 1000, capTokens: 10 } }),
      () => "gives a rate of 1001 or a cap of 10 beyond the pool's refill or lease limit",
    ],
  ];
  it.each(cases)('refuses %s: balance, lease and expiry stay, and the reason is told once', (_name, change, reason) => {
    const { keeper, renew } = renewing();
    const before = leaseOf(keeper);
    expect(keeper.onReply(renew.seq, { ...grantFor(renew), ...change(renew) }, 22_000)).toEqual([]);
    expect(leaseOf(keeper)).toEqual(before);
    expect(keeper.slot.balanceTokens).toBe(70);
    expect(keeper.leaseId).toBe('L1');
    expect(keeper.stats).toMatchObject({ failures: 1, lastErrorCode: 'implausible-grant', lastErrorMessage: reason(renew) });
    expect(keeper.takeRejection()).toBe(reason(renew));
    expect(keeper.takeRejection()).toBeNull();
    // It goes on with the lease it holds: after a back-off, it asks again under L1 with what is left.
    expect(keeper.nextDeadlineUs()).toBe(22_000 + 7_500);
    expect(keeper.tick(22_000 + 7_499)).toEqual([]);
    expect(acquireIn(keeper.tick(22_000 + 7_500))).toMatchObject({ leaseId: 'L1', tokensLeft: 70 });
  });

  it('refuses a rogue grant to a first ask, and stays without a lease', () => {
    const keeper = keeperWith();
    const first = acquireIn(keeper.tick(0));
    expect(keeper.onReply(first.seq, { ...grantFor(first), ...ROGUE }, 1_000)).toEqual([]);
    expect(keeper.leaseId).toBeNull();
    expect(keeper.slot).toMatchObject({ hasLease: false, balanceTokens: 0, expiresAtUs: 0 });
    expect(keeper.slot.takeAt(1, 2_000)).toBe(false);
    expect(keeper.stats).toMatchObject({ tokensGranted: 0, leasesStarted: 0, lastErrorCode: 'implausible-grant' });
    expect(keeper.takeRejection()).toBe(`grants ${rogue} tokens where 5 were asked for`);
    expect(keeper.takeRejection()).toBeNull();
  });
});

/** A keeper whose sequence counter records the floor of every call (sequence numbers 101, 102, … above it). */
function countingKeeper(): { keeper: LeaseKeeper; floors: number[] } {
  const floors: number[] = [];
  let seq = 100;
  const nextSeq = (floor = 0): number => {
    floors.push(floor);
    seq = Math.max(seq, floor) + 1;
    return seq;
  };
  return { keeper: new LeaseKeeper('agent-1', 'pool-a', nextSeq, keeperOptions(BASE), () => 0.5, TEST_SECRET, testHooks()), floors };
}

describe('LeaseKeeper stale-sequence refusals', () => {
  const setUps: readonly [string, (keeper: LeaseKeeper) => LeaseRequest][] = [
    [
      'a first ask',
      (keeper) => {
        const first = acquireIn(keeper.tick(0));
        expect(keeper.slot.takeAt(1, 500)).toBe(false); // demand, so the keeper asks again
        return first;
      },
    ],
    [
      'a renewal',
      (keeper) => {
        const first = askFor(keeper, 100, 0);
        keeper.onReply(first.seq, grantFor(first), 1_000);
        expect(keeper.slot.takeAt(30, 10_000)).toBe(true);
        expect(keeper.slot.takeAt(80, 20_000)).toBe(false);
        return acquireIn(keeper.tick(20_000));
      },
    ],
  ];
  it.each(setUps)('to %s: the next request goes at once, no back-off, above the floor named', (_name, setUp) => {
    const { keeper, floors } = countingKeeper();
    const refused = setUp(keeper);
    const atUs = 30_000;
    const next = acquireIn(keeper.onReply(refused.seq, errorReply(refused.seq, 'stale-sequence', 0, 5000), atUs));
    expect(next.seq).toBeGreaterThan(5000);
    expect(next).toMatchObject({ leaseId: refused.leaseId, tokensLeft: refused.tokensLeft });
    expect(keeper.stats).toMatchObject({ failures: 1, lastErrorCode: 'stale-sequence' });
    expect(floors.at(-1)).toBe(5000);
    // The floor counts for that one request; the next asks above the counter alone.
    expect(keeper.onReply(next.seq, grantFor(next, { tokensGranted: 0, retryAfterMs: 100 }), atUs + 1_000)).toEqual([]);
    const after = acquireIn(keeper.tick(atUs + 101_000));
    expect(after.seq).toBe(next.seq + 1);
    expect(floors.at(-1)).toBe(0);
  });
});

describe('LeaseKeeper forbidden refusals', () => {
  // Whatever the refusal's retryAfterMs (the time the other lease has left), the keeper asks again after its back-off (7.5 ms).
  it.each([800, 2_000, 5])('forbidden with retryAfterMs %i: a fresh agent id, asked after the back-off', (retryAfterMs) => {
    const keeper = keeperWith();
    const first = acquireIn(keeper.tick(0));
    expect(first.agentId).toBe('agent-1');
    expect(keeper.slot.takeAt(1, 500)).toBe(false);
    expect(keeper.onReply(first.seq, errorReply(first.seq, 'forbidden', retryAfterMs), 1_000)).toEqual([]);
    expect(keeper.stats).toMatchObject({ failures: 1, lastErrorCode: 'forbidden' });
    expect(keeper.nextDeadlineUs()).toBe(8_500);
    expect(keeper.tick(8_499)).toEqual([]);
    expect(acquireIn(keeper.tick(8_500))).toMatchObject({
      seq: first.seq + 1,
      agentId: 'agent-1.~suffix-000000001',
      leaseId: null,
      tokensLeft: 0,
    });
    expect(keeper.agentId).toBe('agent-1.~suffix-000000001');
  });

  it('to a renewal: the lease held still spends until its own expiry, and the next ask is a new lease under a fresh id', () => {
    const { keeper, renew } = renewing();
    expect(keeper.onReply(renew.seq, errorReply(renew.seq, 'forbidden', 800), 21_000)).toEqual([]);
    expect(keeper.slot.takeAt(70, 21_000)).toBe(true);
    const next = acquireIn(keeper.tick(28_500));
    expect(next).toMatchObject({ agentId: 'agent-1.~suffix-000000001', leaseId: null, tokensLeft: 0 });
  });

  it('each forbidden moves to another fresh id drawn for that move, never one counted from the agent id', () => {
    const keeper = keeperWith();
    const first = acquireIn(keeper.tick(0));
    expect(keeper.slot.takeAt(1, 500)).toBe(false);
    keeper.onReply(first.seq, errorReply(first.seq, 'forbidden', 800), 1_000);
    const second = acquireIn(keeper.tick(keeper.nextDeadlineUs()));
    keeper.onReply(second.seq, errorReply(second.seq, 'forbidden', 800), 20_000);
    expect(keeper.slot.takeAt(1, 20_500)).toBe(false);
    const third = acquireIn(keeper.tick(keeper.nextDeadlineUs()));
    expect([first.agentId, second.agentId, third.agentId]).toEqual(['agent-1', 'agent-1.~suffix-000000001', 'agent-1.~suffix-000000002']);
  });
});

describe('LeaseKeeper secret', () => {
  const secrets: readonly [string, string][] = [
    ['the test secret', TEST_SECRET],
    ['a secret of 128 characters', 'aZ09_-'.repeat(21) + 'ab'],
  ];
  it.each(secrets)('every acquire, return and report carries v 2 and the keeper secret: %s', (_name, secret) => {
    let seq = 100;
    const keeper = new LeaseKeeper(
      'agent-1',
      'pool-a',
      () => ++seq,
      keeperOptions({ ...BASE, reportMs: 100 }),
      () => 0.5,
      secret,
      testHooks(),
    );
    const sent: SendAction['message'][] = [];
    const record = (actions: readonly SendAction[]): readonly SendAction[] => {
      sent.push(...actions.map((action) => action.message));
      return actions;
    };
    const first = askFor(keeper, 100, 0);
    sent.push(first);
    record(keeper.onReply(first.seq, grantFor(first), 1_000));
    expect(keeper.slot.takeAt(30, 50_000)).toBe(true);
    expect(only(record(keeper.tick(101_000))).message.op).toBe('report');
    expect(keeper.slot.takeAt(80, 150_000)).toBe(false);
    const renew = acquireIn(record(keeper.tick(150_000)));
    record(keeper.onFailure(renew.seq, 'timeout', 'no reply', 160_000));
    expect(only(record(keeper.tick(167_500))).message).toBe(renew); // the retry
    record(keeper.onReply(renew.seq, grantFor(renew), 170_000));
    const back = only(record(keeper.close(180_000))).message;
    expect(back.op).toBe('return');
    record(keeper.onReply(back.seq, { v: 2, kind: 'receipt', seq: back.seq, tokensReturned: back.tokensLeft }, 181_000));
    expect(keeper.settled).toBe(true);
    expect(sent.map((message) => message.op)).toEqual(['acquire', 'report', 'acquire', 'acquire', 'return']);
    for (const message of sent) expect(message).toMatchObject({ v: 2, leaseSecret: secret });
  });

  const bad: readonly string[] = ['A'.repeat(21), 'A'.repeat(129), `${'A'.repeat(22)}=`, 'a secret with spaces in it'];
  it.each(bad)('refuses a secret that is not one, without telling it: %j', (secret) => {
    const error = thrown(
      AgentError,
      () =>
        new LeaseKeeper(
          'agent-1',
          'pool-a',
          () => 1,
          keeperOptions(BASE),
          () => 0.5,
          secret,
          testHooks(),
        ),
    );
    expect(error.code).toBe('invalid-argument');
    expect(error.message).not.toContain(secret);
  });
});
