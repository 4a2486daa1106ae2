/**
 * acquireRequest — an acquire of protocol v2 for tests, benchmarks and
 * hostile clients: agent `a` on pool `api` under TEST_LEASE_SECRET, seq 1,
 * no lease, 5 tokens wanted, demand 1/s, no hold; `fields` override any of it.
 */
import type { LeaseRequest } from '../protocol/messages.js';

/** TEST_LEASE_SECRET — a well-formed lease secret (128 bits of base64url) for tests. */
export const TEST_LEASE_SECRET = 'test-lease-secret-128bits';

export function acquireRequest(fields: Partial<Omit<LeaseRequest, 'v' | 'op'>> = {}): LeaseRequest {
  return {
    v: 2,
    op: 'acquire',
    agentId: 'a',
    pool: 'api',
    leaseSecret: TEST_LEASE_SECRET,
    seq: 1,
    leaseId: null,
    tokensLeft: 0,
    tokensWanted: 5,
    demandPerSecond: 1,
    holdMs: 0,
    ...fields,
  };
}
