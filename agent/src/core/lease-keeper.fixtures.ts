/**
 * Fixtures of the LeaseKeeper example tests: fixed options (so a change of
 * defaults does not move the examples), a keeper with deterministic
 * sequence numbers and jitter, grant builders, and action readers.
 *
 * The keeper refuses a grant no honest coordinator would send
 * (the lease client's check in @tokenlease/shared), so a grant fed to it is built from the request it
 * answers (`grantFor`), which fails the test on a dishonest one. `grant`
 * builds any grant at all, for stale replies and refusals.
 */
import type { LeaseGrant, LeaseRequest } from '@tokenlease/shared';
import { expect } from 'vitest';
import { keeperOptions, type KeeperOptions } from './keeper-options.js';
import { LeaseKeeper, type GrantVerifier, type KeeperHooks, type SendAction } from './lease-keeper.js';

/** TEST_SECRET — the lease secret of the keepers under test. */
export const TEST_SECRET = 'test-secret-of-128-bits-xyz';

export const BASE: Partial<KeeperOptions> = {
  holdMs: 200,
  replyTimeoutMs: 1000,
  driftMargin: 0.05,
  refreshMs: 1000,
  idleReturnMs: 3000,
  initialTokens: 5,
  backoffMsMin: 10,
  backoffMsMax: 80,
  assumedTtlMs: 2000,
};

/** testIdSuffix — a suffix source for moved ids: `suffix-000000001`, `suffix-000000002`, … (fresh per call, as the agent's random ones are). */
export function testIdSuffix(): () => string {
  let moves = 0;
  return () => `suffix-${String((moves += 1)).padStart(9, '0')}`;
}

/** testHooks — keeper hooks for tests: moved ids from testIdSuffix, and `verifyGrant` (default none). */
export function testHooks(verifyGrant: GrantVerifier | null = null): KeeperHooks {
  return { idSuffix: testIdSuffix(), verifyGrant };
}

/**
 * keeperWith — a keeper with sequence numbers 101, 102, … (above the floor
 * the keeper names, as the agent's counter does) and the jitter draw `random`.
 */
export function keeperWith(options: Partial<KeeperOptions> = {}, random = 0.5): LeaseKeeper {
  let seq = 100;
  const nextSeq = (floor = 0): number => {
    seq = Math.max(seq, floor) + 1;
    return seq;
  };
  return new LeaseKeeper('agent-1', 'pool-a', nextSeq, keeperOptions({ ...BASE, ...options }), () => random, TEST_SECRET, testHooks());
}

/** grant — a grant of 100 tokens (a lease holding what it grants) under lease L1 for `seq`, with `fields` overridden. */
export function grant(seq: number, fields: Partial<LeaseGrant> = {}): LeaseGrant {
  const tokensGranted = fields.tokensGranted ?? 100;
  return {
    v: 2,
    kind: 'grant',
    seq,
    leaseId: 'L1',
    tokensGranted,
    tokensHeld: tokensGranted,
    ttlMs: 2000,
    epoch: 1,
    maxLeaseTokens: 1000,
    capacityTokens: 5000,
    refillTokens: 1000,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
    ...fields,
  };
}

/**
 * grantFor — the grant an honest coordinator could send for `request`: by
 * default all it asked for, under the lease it named (L1 when none), the
 * lease then holding what the request reported left plus the grant (the
 * grant alone under another id); `fields` override. Fails the test when
 * the result grants more than was asked, holds less than it grants or more
 * than the lease limit, or names a lease limit above the capacity.
 */
export function grantFor(request: LeaseRequest, fields: Partial<LeaseGrant> = {}): LeaseGrant {
  const leaseId = fields.leaseId ?? request.leaseId ?? 'L1';
  const tokensGranted = fields.tokensGranted ?? request.tokensWanted;
  const tokensHeld = (leaseId === request.leaseId ? request.tokensLeft : 0) + tokensGranted;
  const reply = grant(request.seq, { leaseId, tokensGranted, tokensHeld, ...fields });
  expect(reply.tokensGranted, 'a grant of more than was asked for').toBeLessThanOrEqual(request.tokensWanted);
  expect(reply.tokensHeld, 'a lease holding less than its grant').toBeGreaterThanOrEqual(reply.tokensGranted);
  expect(reply.tokensHeld, 'a lease holding more than the lease limit').toBeLessThanOrEqual(reply.maxLeaseTokens);
  expect(reply.maxLeaseTokens, 'a lease limit above the capacity').toBeLessThanOrEqual(reply.capacityTokens);
  return reply;
}

/**
 * askFor — the keeper's acquire at `nowUs` while a take() of `tokens`
 * waits, so that it asks for them (at least); the take gives up as the
 * request leaves, and nothing waits after.
 */
export function askFor(keeper: LeaseKeeper, tokens: number, nowUs: number): LeaseRequest {
  keeper.waitingTokens = tokens;
  const request = acquireIn(keeper.tick(nowUs));
  keeper.waitingTokens = 0;
  return request;
}

/** only — the single action of `actions` (failing the test when there are more or none). */
export function only(actions: readonly SendAction[]): SendAction {
  expect(actions).toHaveLength(1);
  return actions[0] as SendAction;
}

/** acquireIn — the acquire request of a single-action list. */
export function acquireIn(actions: readonly SendAction[]): LeaseRequest {
  const { message } = only(actions);
  if (message.op !== 'acquire') throw new Error(`expected an acquire, got ${JSON.stringify(message)}`);
  return message;
}
