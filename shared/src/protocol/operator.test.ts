/**
 * The operator ops of protocol v2 (operator.ts): `pools` and `reload`
 * requests and their replies survive the codec; everything malformed is
 * refused, never thrown; subjects parse.
 */
import { describe, expect, it } from 'vitest';
import { decodeOperatorReply, decodeReply, decodeRequest, encodeMessage } from './codec.js';
import { MESSAGE_BYTES_MAX } from './limits.js';
import {
  NAMES_LIST_MAX,
  OPERATOR_REPLY_BYTES_MAX,
  POOLS_PAGE_MAX,
  type PoolList,
  type PoolSummary,
  type ReloadOutcome,
} from './operator.js';
import { isOperatorOp, operatorServiceSubject, operatorSubject, parseSubject } from './subjects.js';

const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

const summary: PoolSummary = {
  pool: 'tenant:<img/src=x/onerror=alert(1)//"\'&',
  kind: 'template',
  capacityTokens: 100,
  allowanceTokens: 0,
  refillTokens: 10,
  refillPeriodMs: 1000,
  leaseTtlMs: 2000,
  leaseMode: 'chunk',
  levelTokens: 40,
  leasedTokens: 60,
  leases: 3,
  waiting: 1,
  quietMs: 0,
  epoch: 7,
  shadow: true,
};

describe('operator requests', () => {
  it.each<[string, unknown]>([
    ['pools', { v: 2, op: 'pools', pool: '_' }],
    ['pools after a name, with a limit', { v: 2, op: 'pools', pool: '_', after: 'api', limit: 10 }],
    ['reload', { v: 2, op: 'reload', pool: '_' }],
  ])('%s round-trips', (_name, request) => {
    expect(decodeRequest(bytes(request))).toEqual({ ok: true, value: request });
  });

  it.each<[string, unknown, RegExp]>([
    ['another pool token', { v: 2, op: 'pools', pool: 'api' }, /pool/],
    ['a bad after', { v: 2, op: 'pools', pool: '_', after: 'a.b' }, /after/],
    ['a limit above the page', { v: 2, op: 'pools', pool: '_', limit: POOLS_PAGE_MAX + 1 }, /limit/],
    ['a limit of 0', { v: 2, op: 'pools', pool: '_', limit: 0 }, /limit/],
    ['v1', { v: 1, op: 'reload', pool: '_' }, /version/],
  ])('refuses %s', (_name, request, why) => {
    const decoded = decodeRequest(bytes(request));
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.message).toMatch(why);
  });

  it('has subjects of its own on the pool token "_", parsed like any other', () => {
    expect(operatorSubject('tokenlease', 'pools')).toBe('tokenlease.v2.pools._.anon');
    expect(operatorServiceSubject('tokenlease', 'reload')).toBe('tokenlease.v2.reload._.*');
    expect(parseSubject('tokenlease', 'tokenlease.v2.reload._.ops')).toEqual({ op: 'reload', pool: '_', identity: 'ops' });
    expect(isOperatorOp('pools')).toBe(true);
    expect(isOperatorOp('status')).toBe(false);
  });
});

describe('operator replies', () => {
  const list: PoolList = { v: 2, kind: 'pools', coordinator: 'c1', pools: [summary], next: null };
  const outcome: ReloadOutcome = {
    v: 2,
    kind: 'reload',
    coordinator: 'c1',
    outcome: 'applied',
    message: 'applied',
    added: ['b'],
    removed: [],
    changed: ['api'],
  };

  it.each<[string, PoolList | ReloadOutcome]>([
    ['a page of pools', list],
    ['a page that goes on', { ...list, next: summary.pool }],
    ['a reload outcome', outcome],
  ])('%s round-trips', (_name, reply) => {
    expect(decodeOperatorReply(encodeMessage(reply))).toEqual({ ok: true, value: reply });
  });

  it('reads a window pool summary with its window and cooling tokens', () => {
    const window = { ...list, pools: [{ ...summary, windowMs: 60_000, coolingTokens: 7 }] };
    expect(decodeOperatorReply(encodeMessage(window))).toEqual({ ok: true, value: window });
    expect(decodeOperatorReply(bytes({ ...list, pools: [{ ...summary, windowMs: 0, coolingTokens: 7 }] })).ok).toBe(false);
  });

  it('reads the calls agents reported in a pool summary, and refuses malformed ones', () => {
    const counted = { ...list, pools: [{ ...summary, calls: { admitted: 3, denied: 4_000, shadowDenied: 0 } }] };
    expect(decodeOperatorReply(encodeMessage(counted))).toEqual({ ok: true, value: counted });
    expect(decodeOperatorReply(bytes({ ...list, pools: [{ ...summary, calls: { admitted: -1, denied: 0, shadowDenied: 0 } }] })).ok).toBe(
      false,
    );
  });

  it('reads a pool summary without shadow (an older coordinator) as not shadowed', () => {
    const { shadow: _shadow, ...older } = summary;
    const decoded = decodeOperatorReply(bytes({ ...list, pools: [older] }));
    expect(decoded.ok && decoded.value.kind === 'pools' ? decoded.value.pools[0]?.shadow : null).toBe(false);
  });

  it('reads a page larger than an agent reply may be, up to its own limit', () => {
    const many: PoolList = { ...list, pools: Array.from({ length: POOLS_PAGE_MAX }, (_, i) => ({ ...summary, pool: `p${i}` })) };
    const encoded = encodeMessage(many);
    expect(encoded.byteLength).toBeGreaterThan(MESSAGE_BYTES_MAX);
    expect(encoded.byteLength).toBeLessThan(OPERATOR_REPLY_BYTES_MAX);
    expect(decodeReply(encoded).ok).toBe(false);
    expect(decodeOperatorReply(encoded).ok).toBe(true);
  });

  it.each<[string, unknown, RegExp]>([
    ['a bad kind of pool', { ...list, pools: [{ ...summary, kind: 'other' }] }, /kind/],
    ['a pool name with a dot', { ...list, pools: [{ ...summary, pool: 'a.b' }] }, /pool/],
    ['a negative level', { ...list, pools: [{ ...summary, levelTokens: -1 }] }, /levelTokens/],
    ['a shadow flag that is no boolean', { ...list, pools: [{ ...summary, shadow: 'yes' }] }, /shadow/],
    ['pools that are no list', { ...list, pools: {} }, /pools/],
    ['an unknown outcome', { ...outcome, outcome: 'maybe' }, /outcome/],
    ['too many names', { ...outcome, added: Array.from({ length: NAMES_LIST_MAX + 1 }, () => 'a') }, /added/],
    ['a bad name in a list', { ...outcome, changed: ['a b'] }, /changed/],
    ['no coordinator', { ...outcome, coordinator: 5 }, /coordinator/],
  ])('refuses %s', (_name, reply, why) => {
    const decoded = decodeOperatorReply(bytes(reply));
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.message).toMatch(why);
  });
});
