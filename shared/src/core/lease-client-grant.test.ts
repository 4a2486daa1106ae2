/**
 * grantProblem: each rule refuses the grant it names, with its reason;
 * grants an honest coordinator sends pass, limits included (a chunk lease,
 * a short grant, a rate lease, a renewal naming the same capacity).
 */
import { describe, expect, it } from 'vitest';
import type { LeaseGrant, LeaseRequest } from '../protocol/messages.js';
import { grantProblem, SECRET_PATTERN } from './lease-client-grant.js';
import { LEASE_CLIENT_DEFAULTS } from './lease-client-settings.js';

/** TEST_SECRET — a lease secret of the requests below. */
const TEST_SECRET = 'test-secret-of-128-bits-xyz';

/** grant — a grant of 100 tokens (a lease holding what it grants) under lease L1 for `seq`, with `fields` overridden. */
function grant(seq: number, fields: Partial<LeaseGrant> = {}): LeaseGrant {
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

/** A first ask for 100 tokens. */
const ASK: LeaseRequest = {
  v: 2,
  op: 'acquire',
  agentId: 'agent-1',
  pool: 'pool-a',
  leaseSecret: TEST_SECRET,
  seq: 7,
  leaseId: null,
  tokensLeft: 0,
  tokensWanted: 100,
  demandPerSecond: 0,
  holdMs: 200,
};
/** A renewal of L1 with 30 left, for 70 more. */
const RENEWAL: LeaseRequest = { ...ASK, seq: 8, leaseId: 'L1', tokensLeft: 30, tokensWanted: 70 };

const OPTIONS = LEASE_CLIENT_DEFAULTS;
/** A rate at the refill of the grant fixture's pool (1000 per 1000 ms), capped at its lease limit (1000). */
const RATE = { tokensPerPeriod: 1000, periodMs: 1000, capTokens: 1000 };

describe('grantProblem', () => {
  const honest: readonly [string, LeaseRequest, Partial<LeaseGrant>, number][] = [
    // name, request, grant fields (over grant(): 100 tokens under L1), capacity of the lease's last grant (0: a new lease)
    ['all that was asked for', ASK, {}, 0],
    ['less than was asked for, with a wait', ASK, { tokensGranted: 40, retryAfterMs: 250 }, 0],
    ['nothing, with a wait', ASK, { tokensGranted: 0, retryAfterMs: 1000 }, 0],
    ['a lease holding its limit, the limit the capacity', ASK, { maxLeaseTokens: 100, capacityTokens: 100 }, 0],
    ['the longest TTL allowed', ASK, { ttlMs: OPTIONS.leaseTtlMsMax }, 0],
    ['a rate lease at the refill, capped at the lease limit', ASK, { tokensGranted: 4, rate: RATE }, 0],
    ['a rate lease below both', ASK, { tokensGranted: 0, rate: { tokensPerPeriod: 10, periodMs: 1000, capTokens: 50 } }, 0],
    ['a renewal, same capacity, holding what was left plus the grant', RENEWAL, { tokensGranted: 70, tokensHeld: 100 }, 5000],
    ['a new lease, any capacity', RENEWAL, { leaseId: 'L2', tokensGranted: 70, capacityTokens: 8000 }, 0],
  ];
  it.each(honest)('passes an honest grant: %s', (_name, request, fields, capacityTokens) => {
    expect(grantProblem(grant(request.seq, fields), request, OPTIONS, capacityTokens)).toBeNull();
  });

  const refused: readonly [string, LeaseRequest, Partial<LeaseGrant>, number, string][] = [
    // name, request, grant fields, capacity of the lease's last grant, reason
    ['more than was asked for', ASK, { tokensGranted: 101 }, 0, 'grants 101 tokens where 100 were asked for'],
    ['more than a renewal asked for', RENEWAL, { tokensGranted: 71, tokensHeld: 101 }, 5000, 'grants 71 tokens where 70 were asked for'],
    [
      '2^52 tokens for 24 h, as a rogue responder would send',
      ASK,
      { tokensGranted: 2 ** 52, tokensHeld: 2 ** 52, ttlMs: 86_400_000, maxLeaseTokens: 2 ** 52, capacityTokens: 2 ** 52 },
      0,
      `grants ${2 ** 52} tokens where 100 were asked for`,
    ],
    ['fewer held than granted', ASK, { tokensGranted: 50, tokensHeld: 49 }, 0, 'grants 50 tokens but says the lease holds 49'],
    ['a lease limit above the capacity', ASK, { maxLeaseTokens: 5001 }, 0, 'names a lease limit of 5001 above the capacity 5000'],
    ['more held than the lease limit', ASK, { tokensHeld: 1001 }, 0, "holds 1001 tokens, above the pool's lease limit of 1000"],
    ['a TTL above leaseTtlMsMax', ASK, { ttlMs: OPTIONS.leaseTtlMsMax + 1 }, 0, 'lasts 3600001 ms, above leaseTtlMsMax 3600000'],
    [
      'another capacity mid-lease',
      RENEWAL,
      { tokensGranted: 70, capacityTokens: 5001 },
      5000,
      "changes the pool's capacity mid-lease from 5000 to 5001",
    ],
    [
      'a rate above the refill',
      ASK,
      { rate: { ...RATE, tokensPerPeriod: 1001 } },
      0,
      "gives a rate of 1001 or a cap of 1000 beyond the pool's refill or lease limit",
    ],
    [
      'a rate cap above the lease limit',
      ASK,
      { rate: { ...RATE, capTokens: 1001 } },
      0,
      "gives a rate of 1000 or a cap of 1001 beyond the pool's refill or lease limit",
    ],
  ];
  it.each(refused)('refuses %s', (_name, request, fields, capacityTokens, reason) => {
    expect(grantProblem(grant(request.seq, fields), request, OPTIONS, capacityTokens)).toBe(reason);
  });

  const ttls: readonly [number, number, boolean][] = [
    // leaseTtlMsMax, ttlMs, passes
    [60_000, 60_000, true],
    [60_000, 60_001, false],
    [1, 1, true],
    [1, 2, false],
  ];
  it.each(ttls)('with leaseTtlMsMax %i, a TTL of %i ms passes: %s', (leaseTtlMsMax, ttlMs, passes) => {
    const problem = grantProblem(grant(ASK.seq, { ttlMs }), ASK, { leaseTtlMsMax }, 0);
    expect(problem).toBe(passes ? null : `lasts ${ttlMs} ms, above leaseTtlMsMax ${leaseTtlMsMax}`);
  });
});

describe('SECRET_PATTERN', () => {
  const secrets: readonly [string, boolean][] = [
    [TEST_SECRET, true],
    ['A'.repeat(22), true],
    ['aZ09_-'.repeat(21) + 'ab', true], // 128 characters
    ['A'.repeat(21), false],
    ['A'.repeat(129), false],
    [`${'A'.repeat(22)}=`, false],
    [`${'A'.repeat(21)}+`, false],
    [`${'A'.repeat(21)} `, false],
    ['', false],
  ];
  it.each(secrets)('%j is a lease secret: %s', (secret, valid) => {
    expect(SECRET_PATTERN.test(secret)).toBe(valid);
  });
});
