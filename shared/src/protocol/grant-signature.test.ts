import { describe, expect, it } from 'vitest';
import { grantSigningText } from './grant-signature.js';
import type { LeaseGrant } from './messages.js';

const GRANT: LeaseGrant = {
  v: 2,
  kind: 'grant',
  seq: 7,
  leaseId: 'L1',
  tokensGranted: 20,
  tokensHeld: 20,
  ttlMs: 500,
  epoch: 3,
  maxLeaseTokens: 20,
  capacityTokens: 100,
  refillTokens: 100,
  refillPeriodMs: 1000,
  retryAfterMs: 0,
};
const FOR = { agentId: 'checkout.host-1', pool: 'api' };

describe('grantSigningText', () => {
  it('is one text for the grant and its request, whatever the order of its fields and whatever its signature', () => {
    const reordered = Object.fromEntries(Object.entries(GRANT).reverse()) as unknown as LeaseGrant;
    expect(grantSigningText(reordered, FOR)).toBe(grantSigningText(GRANT, FOR));
    expect(grantSigningText({ ...GRANT, sig: 'x'.repeat(86) }, FOR)).toBe(grantSigningText(GRANT, FOR));
    expect(grantSigningText(GRANT, FOR)).toBe(
      'tokenlease-grant-v1\n["api","checkout.host-1",7,"L1",20,20,500,3,20,100,100,1000,0,0,false,false,null]',
    );
  });

  const changed: readonly (readonly [string, Partial<LeaseGrant>, Partial<typeof FOR>])[] = [
    ['another agent', {}, { agentId: 'checkout.host-2' }],
    ['another pool', {}, { pool: 'api2' }],
    ['another request', { seq: 8 }, {}],
    ['another lease', { leaseId: 'L2' }, {}],
    ['more tokens', { tokensGranted: 21, tokensHeld: 21 }, {}],
    ['a longer TTL', { ttlMs: 501 }, {}],
    ['a larger pool', { capacityTokens: 101 }, {}],
    ['a rate', { rate: { tokensPerPeriod: 1, periodMs: 1000, capTokens: 20 } }, {}],
    ['shadow mode', { shadow: true }, {}],
    ['an allowance', { allowanceTokens: 5 }, {}],
  ];
  it.each(changed)('differs for %s', (_name, grant, binding) => {
    expect(grantSigningText({ ...GRANT, ...grant }, { ...FOR, ...binding })).not.toBe(grantSigningText(GRANT, FOR));
  });
});
