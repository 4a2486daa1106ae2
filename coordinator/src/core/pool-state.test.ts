/**
 * Pool state as a store keeps it: a lease's JSON text survives a round trip,
 * and whatever the store hands back that is not a lease or a level is a
 * CoordinatorError('state-invalid') naming the pool (and the agent), never a
 * silently wrong pool.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, type LeaseGrant } from '@tokenlease/shared';
import { thrown } from '@tokenlease/shared/testing';
import { CoordinatorError } from '../errors.js';
import { decodePersistedLease, encodePersistedLease, parseLevelTokens, type PersistedLease } from './pool-state.js';
import { SECRET } from './pool.fixtures.js';

const grant: LeaseGrant = {
  v: 2,
  kind: 'grant',
  seq: 7,
  leaseId: '3-a',
  tokensGranted: 5,
  tokensHeld: 12,
  ttlMs: 1000,
  epoch: 3,
  maxLeaseTokens: 20,
  capacityTokens: 100,
  refillTokens: 1000,
  refillPeriodMs: 1000,
  retryAfterMs: 0,
};

const lease: PersistedLease = { agentId: 'agent-1', secret: SECRET, leaseId: '3-a', boundTokens: 12, lastSeq: 7, lastReply: grant };

/** The JSON text a store could hold for agent-1's lease, with `fields` changed (undefined: the field is left out). */
const stored = (fields: Record<string, unknown>): string =>
  JSON.stringify({ ...(JSON.parse(encodePersistedLease(lease)) as Record<string, unknown>), ...fields });

const textOf = (value: unknown): string => new TextDecoder().decode(encodeMessage(value as LeaseGrant));

describe('encodePersistedLease / decodePersistedLease', () => {
  it.each<[string, PersistedLease]>([
    ['a lease with the reply to its last request', lease],
    ['a lease whose last request was still held (lastReply null)', { ...lease, lastReply: null }],
    [
      'a lease with a zero bound and seq 0',
      { ...lease, boundTokens: 0, lastSeq: 0, lastReply: { ...grant, seq: 0, tokensGranted: 0, tokensHeld: 0, retryAfterMs: 1 } },
    ],
    ['a rate lease (ρ = 3 tokens per period)', { ...lease, ratePerPeriod: 3 }],
    ['a lease opened under an identity', { ...lease, identity: 'checkout' }],
    [
      'the largest counts and a 128-character id',
      { ...lease, leaseId: 'x'.repeat(128), boundTokens: Number.MAX_SAFE_INTEGER, lastSeq: Number.MAX_SAFE_INTEGER, lastReply: null },
    ],
  ])('round-trips %s', (_name, kept) => {
    const text = encodePersistedLease(kept);
    // The agent is the store's key, not part of the text.
    expect(text).not.toContain(kept.agentId);
    expect(decodePersistedLease('p', kept.agentId, text)).toEqual(kept);
  });

  it('reads a lease stored without an identity (before leases knew theirs) as one of no known identity', () => {
    expect(JSON.parse(encodePersistedLease(lease))).not.toHaveProperty('identity');
    expect(decodePersistedLease('p', 'agent-1', stored({}))).not.toHaveProperty('identity');
  });

  it.each([['a.b'], [''], [7], [null], ['x'.repeat(129)]])('refuses a stored identity %j as state-invalid', (identity) => {
    const error = thrown(CoordinatorError, () => decodePersistedLease('p', 'agent-1', stored({ identity })));
    expect(error).toMatchObject({ code: 'state-invalid', message: 'pool "p": stored lease of agent "agent-1" has an invalid identity' });
  });

  it('stores a chunk lease without ratePerPeriod, and reads a missing or zero one as a chunk lease', () => {
    expect(JSON.parse(encodePersistedLease(lease))).not.toHaveProperty('ratePerPeriod');
    expect(JSON.parse(encodePersistedLease({ ...lease, ratePerPeriod: 0 }))).not.toHaveProperty('ratePerPeriod');
    for (const text of [stored({ ratePerPeriod: undefined }), stored({ ratePerPeriod: 0 })]) {
      const decoded = decodePersistedLease('p', 'agent-1', text);
      expect(decoded).toEqual(lease);
      expect(decoded).not.toHaveProperty('ratePerPeriod');
    }
  });

  it('keeps lastReply as the reply’s own wire text', () => {
    const raw = JSON.parse(encodePersistedLease(lease)) as Record<string, unknown>;
    expect(raw).toEqual({ secret: SECRET, leaseId: '3-a', boundTokens: 12, lastSeq: 7, lastReply: textOf(grant) });
  });

  // name, stored text, what the message says is wrong
  const malformed: ReadonlyArray<readonly [string, string, string]> = [
    ['not JSON', 'not json {', 'is not JSON'],
    ['empty text', '', 'is not JSON'],
    ['JSON null', 'null', 'is not an object'],
    ['a number', '42', 'is not an object'],
    ['a string', '"3-a"', 'is not an object'],
    ['an array', '[]', 'has no valid leaseId'],
    ['no leaseId', stored({ leaseId: undefined }), 'has no valid leaseId'],
    ['an empty leaseId', stored({ leaseId: '' }), 'has no valid leaseId'],
    ['a leaseId of 129 characters', stored({ leaseId: 'x'.repeat(129) }), 'has no valid leaseId'],
    ['a numeric leaseId', stored({ leaseId: 17 }), 'has no valid leaseId'],
    ['a negative bound', stored({ boundTokens: -1 }), 'has an invalid boundTokens'],
    ['a fractional bound', stored({ boundTokens: 1.5 }), 'has an invalid boundTokens'],
    ['an unsafe bound', stored({ boundTokens: 2 ** 53 }), 'has an invalid boundTokens'],
    ['a bound as text', stored({ boundTokens: '12' }), 'has an invalid boundTokens'],
    ['a null bound', stored({ boundTokens: null }), 'has an invalid boundTokens'],
    ['no bound', stored({ boundTokens: undefined }), 'has an invalid boundTokens'],
    ['a negative seq', stored({ lastSeq: -1 }), 'has an invalid lastSeq'],
    ['a fractional seq', stored({ lastSeq: 0.5 }), 'has an invalid lastSeq'],
    ['an unsafe seq', stored({ lastSeq: 1e300 }), 'has an invalid lastSeq'],
    ['no seq', stored({ lastSeq: undefined }), 'has an invalid lastSeq'],
    ['a negative rate', stored({ ratePerPeriod: -1 }), 'has an invalid ratePerPeriod'],
    ['a fractional rate', stored({ ratePerPeriod: 0.5 }), 'has an invalid ratePerPeriod'],
    ['a rate as text', stored({ ratePerPeriod: '3' }), 'has an invalid ratePerPeriod'],
    ['a null rate', stored({ ratePerPeriod: null }), 'has an invalid ratePerPeriod'],
    ['no lastReply', stored({ lastReply: undefined }), 'has an invalid lastReply'],
    ['a numeric lastReply', stored({ lastReply: 5 }), 'has an invalid lastReply'],
    ['a lastReply as an object rather than its text', stored({ lastReply: grant }), 'has an invalid lastReply'],
    ['a lastReply that is not JSON', stored({ lastReply: 'garbage' }), 'has a lastReply that is not a grant'],
    [
      'a lastReply that is a receipt',
      stored({ lastReply: textOf({ v: 2, kind: 'receipt', seq: 7, tokensReturned: 3 }) }),
      'has a lastReply that is not a grant',
    ],
    [
      'a lastReply that is an error',
      stored({ lastReply: textOf({ v: 2, kind: 'error', seq: 7, code: 'stale-sequence', fault: 'peer', message: 'x', retryAfterMs: 0 }) }),
      'has a lastReply that is not a grant',
    ],
    [
      'a lastReply that is a malformed grant',
      stored({ lastReply: JSON.stringify({ ...grant, tokensGranted: -5 }) }),
      'has a lastReply that is not a grant',
    ],
    [
      'a lastReply of another protocol version',
      stored({ lastReply: JSON.stringify({ ...grant, v: 1 }) }),
      'has a lastReply that is not a grant',
    ],
    ['no secret', stored({ secret: undefined }), 'has no valid secret'],
    ['a secret under 128 bits', stored({ secret: 'short' }), 'has no valid secret'],
  ];

  it.each(malformed)('refuses %s with state-invalid naming the pool and the agent', (_name, text, why) => {
    const error = thrown(CoordinatorError, () => decodePersistedLease('tenant:acme', 'agent-1', text));
    expect(error.code).toBe('state-invalid');
    expect(error.pool).toBe('tenant:acme');
    expect(error.message).toContain('pool "tenant:acme"');
    expect(error.message).toContain('agent "agent-1"');
    expect(error.message).toContain(why);
  });

  it('quotes odd names rather than echoing them raw', () => {
    const error = thrown(CoordinatorError, () => decodePersistedLease('p', 'a"\nb', '{'));
    expect(error.message).toContain(JSON.stringify('a"\nb'));
    expect(error.message).not.toContain('\n');
  });
});

describe('parseLevelTokens', () => {
  it.each<[string, number]>([
    ['0', 0],
    ['123', 123],
    ['007', 7],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('reads %j as %i', (text, level) => {
    expect(parseLevelTokens('p', text)).toBe(level);
  });

  it.each<[string]>([
    [''],
    ['-1'],
    ['1.5'],
    ['abc'],
    [' 1'],
    ['1 '],
    ['1e3'],
    ['0x10'],
    ['+1'],
    ['12345678901234567'],
    ['9999999999999999'],
  ])('refuses %j with state-invalid naming the pool', (text) => {
    const error = thrown(CoordinatorError, () => parseLevelTokens('p', text));
    expect(error.code).toBe('state-invalid');
    expect(error.pool).toBe('p');
    expect(error.message).toContain('pool "p"');
    expect(error.message).toContain(JSON.stringify(text));
  });

  it('quotes at most 40 characters of a long bad level', () => {
    const error = thrown(CoordinatorError, () => parseLevelTokens('p', 'x'.repeat(1000)));
    expect(error.message).toContain(JSON.stringify('x'.repeat(40)));
    expect(error.message).not.toContain('x'.repeat(41));
  });
});
