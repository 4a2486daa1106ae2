/**
 * Shadow mode on the coordinator's side: the `shadow` fields of a
 * configuration (per pool, and the fleet-wide switch), the grant that
 * carries the flag, and a reload that flips it without touching a lease.
 */
import { describe, expect, it } from 'vitest';
import { thrown } from '@tokenlease/shared/testing';
import { encodeMessage, subjectFor, type LeaseGrant, type PoolList } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import { parseCoordinatorConfig, type CoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { configDiff } from './pool-reconfigure.js';
import { SECRET, STANDARD_POOL_FIELDS, S } from './pool.fixtures.js';

const SOURCE = 'pools.yaml';
const PREFIX = 'tokenlease';

function config(
  pools: Record<string, unknown>,
  top: Record<string, unknown> = {},
  templates: Record<string, unknown> = {},
): CoordinatorConfig {
  return parseCoordinatorConfig(SOURCE, { quietPeriodMs: 1000, ...top, pools, templates });
}

function acquire(
  core: CoordinatorCore<string>,
  pool: string,
  nowUs: number,
  seq: number,
  leaseId: string | null,
  tokensLeft = 0,
): LeaseGrant {
  const req = {
    v: 2,
    op: 'acquire',
    pool,
    agentId: 'a',
    leaseSecret: SECRET,
    seq,
    leaseId,
    tokensLeft,
    tokensWanted: 5,
    demandPerSecond: 0,
    holdMs: 0,
  };
  const out = core.receive(subjectFor(PREFIX, 'acquire', pool), encodeMessage(req as never), `r${seq}`, nowUs);
  const reply = out[0]?.reply;
  if (reply?.kind !== 'grant') throw new Error(`expected a grant, got ${JSON.stringify(reply)}`);
  return reply;
}

function listed(core: CoordinatorCore<string>, nowUs: number): PoolList {
  const query = { v: 2, op: 'pools', pool: '_' };
  const reply = core.receive(subjectFor(PREFIX, 'pools', '_'), encodeMessage(query as never), 'ops', nowUs)[0]?.reply;
  if (reply?.kind !== 'pools') throw new Error(`expected a pool list, got ${JSON.stringify(reply)}`);
  return reply;
}

describe('shadow in the configuration', () => {
  it('is off by default, set per pool, and the fleet-wide switch puts every pool and template in shadow mode', () => {
    const plain = config({ a: STANDARD_POOL_FIELDS });
    expect([plain.shadow, plain.pools[0]?.shadow]).toEqual([false, false]);
    const one = config({ a: { ...STANDARD_POOL_FIELDS, shadow: true }, b: { ...STANDARD_POOL_FIELDS, shadow: false } });
    expect(one.pools.map((p) => [p.name, p.shadow])).toEqual([
      ['a', true],
      ['b', false],
    ]);
    const fleet = config(
      { a: STANDARD_POOL_FIELDS, b: { ...STANDARD_POOL_FIELDS, shadow: false } },
      { shadow: true },
      { 't:*': STANDARD_POOL_FIELDS },
    );
    expect(fleet.shadow).toBe(true);
    expect(fleet.pools.map((p) => p.shadow)).toEqual([true, true]);
    expect(fleet.templates[0]?.pool.shadow).toBe(true);
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>, string]>([
    ['a string in a pool', { shadow: 'true' }, {}, 'pool "a": field "shadow" must be true or false, got "true"'],
    ['a number in a pool', { shadow: 1 }, {}, 'pool "a": field "shadow" must be true or false, got 1'],
    ['null in a pool', { shadow: null }, {}, 'pool "a": field "shadow" must be true or false, got null'],
    ['a string at the top', {}, { shadow: 'yes' }, 'field "shadow" must be true or false, got "yes"'],
  ])('refuses %s with a typed error naming the field', (_name, poolFields, top, message) => {
    const error = thrown(CoordinatorError, () => config({ a: { ...STANDARD_POOL_FIELDS, ...poolFields } }, top));
    expect(error).toMatchObject({ code: 'config-invalid', field: 'shadow' });
    expect(error.message).toContain(message);
  });

  it('counts a switch as a change of the pools it flips', () => {
    const before = config({ a: STANDARD_POOL_FIELDS, b: STANDARD_POOL_FIELDS });
    expect(configDiff(before, config({ a: { ...STANDARD_POOL_FIELDS, shadow: true }, b: STANDARD_POOL_FIELDS }))).toEqual({
      added: [],
      removed: [],
      changed: ['a'],
      otherChanged: false,
    });
    expect(configDiff(before, config({ a: STANDARD_POOL_FIELDS, b: STANDARD_POOL_FIELDS }, { shadow: true }))).toEqual({
      added: [],
      removed: [],
      changed: ['a', 'b'],
      otherChanged: true,
    });
  });
});

describe('the grant and a reload', () => {
  it('grants carry shadow: true only for a shadowed pool', () => {
    const core = new CoordinatorCore<string>(config({ a: { ...STANDARD_POOL_FIELDS, shadow: true }, b: STANDARD_POOL_FIELDS }), 1, 0);
    expect(acquire(core, 'a', 2 * S, 1, null).shadow).toBe(true);
    expect(acquire(core, 'b', 2 * S, 2, null)).not.toHaveProperty('shadow');
    expect(listed(core, 2 * S).pools.map((p) => [p.pool, p.shadow])).toEqual([
      ['a', true],
      ['b', false],
    ]);
  });

  it('a reload flips shadow mode for the next grant without a new lease or any change to the credit', () => {
    const core = new CoordinatorCore<string>(config({ a: STANDARD_POOL_FIELDS }), 1, 0);
    const first = acquire(core, 'a', 2 * S, 1, null);
    expect(first).not.toHaveProperty('shadow');
    const before = core.pool('a')?.snapshot();
    const on = core.reconfigure(config({ a: { ...STANDARD_POOL_FIELDS, shadow: true } }), 2 * S, () => {
      throw new Error('nothing was held');
    });
    expect(on).toEqual({ added: [], removed: [], changed: ['a'], rekinded: [] });
    const after = core.pool('a')?.snapshot();
    expect([after?.levelTokens, after?.leasedTokens, after?.leases]).toEqual([before?.levelTokens, before?.leasedTokens, before?.leases]);
    const renewed = acquire(core, 'a', 2 * S + 1, 2, first.leaseId, 3);
    expect(renewed).toMatchObject({ leaseId: first.leaseId, shadow: true, tokensHeld: 8 });
    // The fleet-wide switch off and the pool's own off: enforced again, same lease.
    core.reconfigure(config({ a: STANDARD_POOL_FIELDS }, { shadow: true }), 2 * S + 2, () => undefined);
    expect(acquire(core, 'a', 2 * S + 3, 3, first.leaseId, 8)).toMatchObject({ leaseId: first.leaseId, shadow: true });
    core.reconfigure(config({ a: STANDARD_POOL_FIELDS }), 2 * S + 4, () => undefined);
    const off = acquire(core, 'a', 2 * S + 5, 4, first.leaseId, 8);
    expect(off.leaseId).toBe(first.leaseId);
    expect(off).not.toHaveProperty('shadow');
  });

  it('template pools follow the fleet-wide switch', () => {
    const core = new CoordinatorCore<string>(config({ a: STANDARD_POOL_FIELDS }, {}, { 'tenant:*': STANDARD_POOL_FIELDS }), 1, 0);
    const first = acquire(core, 'tenant:x', 2 * S, 1, null);
    expect(first).not.toHaveProperty('shadow');
    core.reconfigure(config({ a: STANDARD_POOL_FIELDS }, { shadow: true }, { 'tenant:*': STANDARD_POOL_FIELDS }), 2 * S, () => undefined);
    expect(acquire(core, 'tenant:x', 2 * S + 1, 2, first.leaseId, 5)).toMatchObject({ leaseId: first.leaseId, shadow: true });
    expect(acquire(core, 'tenant:y', 2 * S + 1, 3, null).shadow).toBe(true);
  });
});
