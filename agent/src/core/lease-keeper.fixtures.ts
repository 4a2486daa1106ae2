/**
 * Fixtures of the LeaseKeeper example tests: fixed options (so a change of
 * defaults does not move the examples), a keeper with deterministic
 * sequence numbers and jitter, a grant builder, and action readers.
 */
import type { LeaseGrant, LeaseRequest } from '@tokenlease/shared';
import { expect } from 'vitest';
import { keeperOptions, type KeeperOptions } from './keeper-options.js';
import { LeaseKeeper, type SendAction } from './lease-keeper.js';

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

/** keeperWith — a keeper with sequence numbers 101, 102, … and the jitter draw `random`. */
export function keeperWith(options: Partial<KeeperOptions> = {}, random = 0.5): LeaseKeeper {
  let seq = 100;
  return new LeaseKeeper('agent-1', 'pool-a', () => ++seq, keeperOptions({ ...BASE, ...options }), () => random);
}

/** grant — a grant of 100 tokens under lease L1 for `seq`, with `fields` overridden. */
export function grant(seq: number, fields: Partial<LeaseGrant> = {}): LeaseGrant {
  return {
    v: 1, kind: 'grant', seq, leaseId: 'L1', tokensGranted: 100, tokensHeld: 100, ttlMs: 2000, epoch: 1,
    maxLeaseTokens: 1000, capacityTokens: 5000, retryAfterMs: 0, ...fields,
  };
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
