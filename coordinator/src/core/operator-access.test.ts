/**
 * Operator ops (`pools`, `reload`) through CoordinatorCore, at fixed
 * instants (µs): who may run them (operator-access.ts), every malformed
 * one answered with a refusal (never left to time out), and listings held
 * to the listing budget (listing-budget.ts).
 *
 * Pools: the standard pool "p" of pool.fixtures.ts and a template "k:*"
 * whose pools the budget tests make by the thousand.
 */
import { describe, expect, it } from 'vitest';
import { decodeOperatorReply, encodeMessage, isOperatorSubject, subjectFor, type Reply } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { LISTING_WORK_BURST, LISTING_WORK_PER_US, SUMMARY_WORK_UNITS } from './listing-budget.js';
import { operatorRefusal } from './operator-access.js';
import type { Delivery } from './pool.js';
import { acquireOf, MS, S, STANDARD_POOL_FIELDS } from './pool.fixtures.js';

const PREFIX = 'tokenlease';
const T = 2 * S;

function makeCore(top: Record<string, unknown> = {}): CoordinatorCore<string> {
  const config = parseCoordinatorConfig('operator-access.test.yaml', {
    quietPeriodMs: 1000,
    ...top,
    pools: { p: STANDARD_POOL_FIELDS },
    templates: { 'k:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000 } },
  });
  return new CoordinatorCore<string>(config, 7, 0, false, 'c1');
}

const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
const POOLS = { v: 2, op: 'pools', pool: '_' };
const RELOAD = { v: 2, op: 'reload', pool: '_' };

/** the — the one reply of `out`, as an agent or operator would decode it. */
function the(out: readonly Delivery<string>[]): Reply {
  expect(out).toHaveLength(1);
  const decoded = decodeOperatorReply(encodeMessage((out[0] as Delivery<string>).reply));
  if (!decoded.ok) throw new Error(decoded.message);
  return decoded.value;
}

const list = (core: CoordinatorCore<string>, identity: string, nowUs = T, query: object = POOLS): Reply =>
  the(core.receive(subjectFor(PREFIX, 'pools', '_', identity), bytes(query), 'ops', nowUs));

function reload(core: CoordinatorCore<string>, identity: string, payload: unknown = RELOAD): 'reload' | Reply {
  const verdict = core.receiveReload(subjectFor(PREFIX, 'reload', '_', identity), bytes(payload), 'ops', T);
  return verdict === 'reload' ? verdict : the(verdict);
}

const code = (reply: 'reload' | Reply): string => (reply === 'reload' ? reply : reply.kind === 'error' ? reply.code : reply.kind);

describe('who may run operator ops', () => {
  it.each<[string, Record<string, unknown>, string, string]>([
    ['an open bus (no bindIdentity, no operatorIdentities): anyone', {}, 'anyone', 'pools'],
    ['bindIdentity without operatorIdentities: no one, not even "operator"', { bindIdentity: true }, 'operator', 'forbidden'],
    [
      'bindIdentity and operatorIdentities: a listed identity',
      { bindIdentity: true, operatorIdentities: ['operator'] },
      'operator',
      'pools',
    ],
    ['bindIdentity and operatorIdentities: an agent', { bindIdentity: true, operatorIdentities: ['operator'] }, 'checkout', 'forbidden'],
    ['operatorIdentities without bindIdentity: an identity not listed', { operatorIdentities: ['operator'] }, 'anon', 'forbidden'],
    ['operatorIdentities without bindIdentity: a listed one', { operatorIdentities: ['operator'] }, 'operator', 'pools'],
  ])('%s', (_name, top, identity, expected) => {
    const core = makeCore(top);
    expect(code(list(core, identity))).toBe(expected);
    expect(code(reload(core, identity))).toBe(expected === 'pools' ? 'reload' : 'forbidden');
  });

  it('refuses before reading the payload, says why, and names the identity cut short', () => {
    const core = makeCore({ bindIdentity: true, operatorIdentities: ['operator'] });
    const reply = the(core.receive(subjectFor(PREFIX, 'pools', '_', 'checkout'), bytes('not a request'), 'ops', T));
    expect(reply).toMatchObject({ kind: 'error', code: 'forbidden', fault: 'peer', seq: null });
    expect(reply.kind === 'error' && reply.message).toBe('identity "checkout" may not run operator ops: it is not in operatorIdentities');
    const none = makeCore({ bindIdentity: true });
    expect(operatorRefusal(none.config, 'operator')).toContain('none is configured');
  });

  it('leaves agent requests alone: an operator identity is not needed to acquire', () => {
    const core = makeCore({ bindIdentity: true, operatorIdentities: ['operator'] });
    const req = acquireOf({ agentId: 'checkout', seq: 1, tokensWanted: 5 });
    const reply = the(core.receive(subjectFor(PREFIX, 'acquire', 'p', 'checkout'), encodeMessage(req), 'a', T));
    expect(reply.kind).toBe('grant');
  });
});

describe('malformed operator requests are answered, never left to time out', () => {
  const core = makeCore({ operatorIdentities: ['operator'] });
  it.each<[string, string, unknown, string]>([
    ['pools on a pool token other than "_" (payload "_")', subjectFor(PREFIX, 'pools', 'p', 'operator'), POOLS, 'bad-request'],
    [
      'pools on a pool token other than "_" (payload the same)',
      subjectFor(PREFIX, 'pools', 'p', 'operator'),
      { ...POOLS, pool: 'p' },
      'bad-request',
    ],
    ['reload on a pool token other than "_"', subjectFor(PREFIX, 'reload', 'p', 'operator'), RELOAD, 'bad-request'],
    ['pools on another pool token, from a non-operator', subjectFor(PREFIX, 'pools', 'p', 'checkout'), POOLS, 'forbidden'],
    ['a pools payload that is not JSON', subjectFor(PREFIX, 'pools', '_', 'operator'), 'x', 'bad-request'],
    ['a pools limit out of range', subjectFor(PREFIX, 'pools', '_', 'operator'), { ...POOLS, limit: 0 }, 'bad-request'],
    ['a reload payload on the pools subject', subjectFor(PREFIX, 'pools', '_', 'operator'), RELOAD, 'bad-request'],
  ])('%s: %s', (_name, subj, payload, expected) => {
    expect(code(the(core.receive(subj, bytes(payload), 'ops', T)))).toBe(expected);
  });

  it('a pools or reload on another pool token is no operator subscription subject: the service answers it', () => {
    expect(isOperatorSubject(PREFIX, subjectFor(PREFIX, 'pools', '_', 'operator'))).toBe(true);
    expect(isOperatorSubject(PREFIX, subjectFor(PREFIX, 'pools', 'p', 'operator'))).toBe(false);
    expect(isOperatorSubject(PREFIX, subjectFor(PREFIX, 'reload', 'x', 'operator'))).toBe(false);
  });

  it('receiveReload reloads only a well-formed reload; anything else gets the refusal receive gives', () => {
    expect(reload(core, 'operator')).toBe('reload');
    expect(code(reload(core, 'operator', { v: 2, op: 'reload', pool: 'p' }))).toBe('bad-request');
    expect(code(reload(core, 'operator', POOLS))).toBe('bad-request');
    expect(code(reload(core, 'operator', { v: 1, op: 'reload', pool: '_' }))).toBe('unsupported-version');
    const onPool = core.receiveReload(subjectFor(PREFIX, 'reload', 'p', 'operator'), bytes(RELOAD), 'ops', T);
    expect(onPool === 'reload' ? onPool : code(the(onPool))).toBe('bad-request');
  });
});

describe('the listing budget', () => {
  /** withPools — a core holding `n` template pools and "p". */
  function withPools(n: number): CoordinatorCore<string> {
    const core = makeCore();
    for (let i = 0; i < n; i += 1) {
      const req = acquireOf({ agentId: 'a', pool: `k:${i}`, seq: 1, tokensWanted: 1 });
      core.receive(subjectFor(PREFIX, 'acquire', `k:${i}`), encodeMessage(req), 'a', T);
    }
    expect(core.poolCount).toBe(n + 1);
    return core;
  }

  it('serves pages while the budget lasts, then refuses unavailable with the wait, and serves again after it', () => {
    const core = withPools(5_000);
    const pageUnits = 5_001 + SUMMARY_WORK_UNITS * 1000 + 1;
    const served = Math.ceil(LISTING_WORK_BURST / pageUnits);
    for (let i = 0; i < served; i += 1) expect(code(list(core, 'ops', T))).toBe('pools');
    const refused = list(core, 'ops', T);
    expect(refused).toMatchObject({ kind: 'error', code: 'unavailable', fault: 'peer' });
    const waitMs = refused.kind === 'error' ? refused.retryAfterMs : 0;
    const debtUnits = served * pageUnits - LISTING_WORK_BURST;
    expect(waitMs).toBe(Math.ceil((debtUnits + 1) / LISTING_WORK_PER_US / 1000));
    expect(code(list(core, 'ops', T + waitMs * MS - 1 * MS))).toBe('unavailable');
    expect(code(list(core, 'ops', T + waitMs * MS))).toBe('pools');
  });

  // CPU-bound (each page served summarises 1,000 pools): a time limit for a loaded machine, not a speed target.
  it('keeps listing work within the burst plus the rate, however fast pages are asked for', { timeout: 60_000 }, () => {
    const core = withPools(2_000);
    const pageUnits = 2_001 + SUMMARY_WORK_UNITS * 1000 + 1;
    let servedUnits = 0;
    // A page every ms for 2 s: 2,000 asks, 40 times what the budget earns (a page per ~40 ms).
    for (let t = T; t < T + 2 * S; t += 1000) if (code(list(core, 'ops', t)) === 'pools') servedUnits += pageUnits;
    // At most one page beyond what the budget holds and earns: the last page served may take it below zero.
    expect(servedUnits).toBeLessThanOrEqual(LISTING_WORK_BURST + 2 * S * LISTING_WORK_PER_US + pageUnits);
    expect(servedUnits).toBeGreaterThanOrEqual(LISTING_WORK_BURST + 2 * S * LISTING_WORK_PER_US - pageUnits);
  });

  it('charges a refused identity nothing: forbidden requests do not spend the budget', () => {
    const core = makeCore({ operatorIdentities: ['operator'] });
    for (let i = 0; i < 10_000; i += 1) expect(code(list(core, 'checkout'))).toBe('forbidden');
    expect(code(list(core, 'operator'))).toBe('pools');
  });
});
