/**
 * Fixtures of the LeaseKeeper example tests: fixed options (so a change of
 * defaults does not move the examples), a keeper with deterministic
 * sequence numbers and jitter, and a grant builder.
 */
import type { LeaseGrant } from '@tokenlease/shared';
import { keeperOptions, type KeeperOptions } from './keeper-options.js';
import { LeaseKeeper } from './lease-keeper.js';

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
