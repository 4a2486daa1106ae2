/**
 * CoordinatorCore under hostile names and broken invariants: a class named
 * after an Object.prototype member is an unknown class (weight 1), and a
 * pool whose handling throws is contained — its requests get `internal`,
 * it restarts empty and quiet, and every other pool keeps serving.
 *
 * Pools: "p" (chunk) and "r" (rate), both the standard pool of
 * pool.fixtures.ts with weights { gold: 3 }; start at 0, quiet period 1 s.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor, type LeaseRequest, type Reply, type Request } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { CoordinatorCore, FAULT_RETRY_AFTER_MS } from './coordinator-core.js';
import type { Delivery, Pool } from './pool.js';
import { FULL_AT, MS, S, STANDARD_POOL_FIELDS } from './pool.fixtures.js';
import { SECRET } from './pool.fixtures.js';

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];

function makeCore(): CoordinatorCore<string> {
  const config = parseCoordinatorConfig('faults.test.yaml', {
    quietPeriodMs: 1000,
    pools: {
      p: { ...STANDARD_POOL_FIELDS, classWeights: { gold: 3 } },
      r: { ...STANDARD_POOL_FIELDS, classWeights: { gold: 3 }, leaseMode: 'rate' },
    },
  });
  return new CoordinatorCore<string>(config, 5, 0);
}

function acquireReq(pool: string, agentId: string, seq: number, fields: Partial<LeaseRequest> = {}): LeaseRequest {
  return {
    v: 2,
    op: 'acquire',
    leaseSecret: SECRET,
    pool,
    agentId,
    seq,
    leaseId: null,
    tokensLeft: 0,
    tokensWanted: 20,
    demandPerSecond: 100,
    holdMs: 100,
    ...fields,
  };
}

function send(core: CoordinatorCore<string>, req: Request, to: string, nowUs: number): Delivery<string>[] {
  return core.receive(subjectFor('tokenlease', req.op, req.pool), encodeMessage(req), to, nowUs);
}

function creditOf(core: CoordinatorCore<string>, pool: string, nowUs: number): { level: number; leased: number } {
  const s = core.pool(pool)?.status(nowUs, []);
  if (s === undefined) throw new Error(`no pool ${pool}`);
  return { level: s.levelTokens, leased: s.leasedTokens };
}

const codeOf = (reply: Reply): string => (reply.kind === 'error' ? reply.code : reply.kind);

describe('agent classes named after Object.prototype members', () => {
  it.each(PROTOTYPE_NAMES)('class %s weighs 1 on chunk and rate pools, and later ticks keep the credit whole', (agentClass) => {
    const core = makeCore();
    for (const pool of ['p', 'r']) {
      // An honest request waits ahead, so the hostile class takes the weighted turn path.
      send(core, acquireReq(pool, 'honest', 1, { tokensWanted: 20 }), 'h', FULL_AT);
      const replies = send(core, acquireReq(pool, 'x', 1, { agentClass, tokensWanted: 20 }), 'x', FULL_AT);
      expect(replies.map((d) => codeOf(d.reply))).not.toContain('internal');
      for (let t = FULL_AT; t < FULL_AT + 3 * S; t += 50 * MS) {
        const out = core.tick(t);
        expect(out.map((d) => codeOf(d.reply))).not.toContain('internal');
        const { level, leased } = creditOf(core, pool, t);
        expect(Number.isSafeInteger(level) && level + leased <= 100).toBe(true);
      }
    }
    expect(core.takeFaults()).toEqual([]);
  });
});

describe('a pool that breaks an invariant', () => {
  function breakPool(pool: Pool<string> | undefined, method: 'acquire' | 'tick'): void {
    if (pool === undefined) throw new Error('no pool');
    Object.assign(pool, {
      [method]: () => {
        throw new Error('broken on purpose');
      },
    });
  }

  it('refuses its request with internal, restarts empty and quiet, and leaves the other pool serving', () => {
    const core = makeCore();
    const held = send(core, acquireReq('p', 'waiting', 1, { holdMs: 200, tokensWanted: 20 }), 'w', 0);
    expect(held).toEqual([]);
    breakPool(core.pool('p'), 'acquire');
    const replies = send(core, acquireReq('p', 'a', 1), 'a', FULL_AT);
    expect(replies.map((d) => [d.to, codeOf(d.reply)]).sort()).toEqual([
      ['a', 'internal'],
      ['w', 'internal'],
    ]);
    expect(replies[0]?.reply).toMatchObject({ fault: 'coordinator', retryAfterMs: FAULT_RETRY_AFTER_MS });
    const faults = core.takeFaults();
    expect(faults.map((f) => f.pool)).toEqual(['p']);
    expect(core.takeFaults()).toEqual([]);
    // The fresh pool is quiet for the quiet period from the fault: nothing of the broken pool's leases can meet a new grant.
    expect(core.pool('p')?.status(FULL_AT, [])).toMatchObject({ levelTokens: 0, leases: 0, waiting: 0, quietMs: 1000 });
    const other = send(core, acquireReq('r', 'b', 1), 'b', FULL_AT);
    expect(other.map((d) => codeOf(d.reply))).toEqual(['grant']);
    const later = send(core, acquireReq('p', 'a', 2, { holdMs: 0 }), 'a', FULL_AT + 1200 * MS);
    expect(later.map((d) => codeOf(d.reply))).toEqual(['grant']);
  });

  it('contains a tick that throws: its pool restarts, the other pool ticks on', () => {
    const core = makeCore();
    send(core, acquireReq('r', 'b', 1, { holdMs: 0 }), 'b', FULL_AT);
    breakPool(core.pool('p'), 'tick');
    // A tick visits only the pools due (pool-schedule.ts): p, idle, is made due.
    core.wake('p');
    expect(() => core.tick(FULL_AT + 10 * MS)).not.toThrow();
    expect(core.takeFaults().map((f) => f.pool)).toEqual(['p']);
    expect(core.pool('r')?.status(FULL_AT + 10 * MS, [])).toMatchObject({ leases: 1 });
    expect(core.pool('p')?.status(FULL_AT + 10 * MS, [])).toMatchObject({ quietMs: 1000 });
  });

  it('in durable mode drops the pool for the adapter to take over again', () => {
    const config = parseCoordinatorConfig('faults.test.yaml', { pools: { p: STANDARD_POOL_FIELDS } });
    const core = new CoordinatorCore<string>(config, 0, 0, true);
    expect(core.adopt('p', 4, 0, null)).toBe('adopted');
    breakPool(core.pool('p'), 'acquire');
    expect(send(core, acquireReq('p', 'a', 1), 'a', MS).map((d) => codeOf(d.reply))).toEqual(['internal']);
    expect(core.takeFaults().map((f) => f.pool)).toEqual(['p']);
    expect(core.pool('p')).toBeUndefined();
  });
});
