/**
 * Leases only their holder can touch: a lease is bound to the secret of the
 * request that opened it; a request for its agent under another secret is
 * refused `forbidden` (a report is ignored) and changes nothing. With
 * `bindIdentity` an agent id must belong to the subject's identity.
 *
 * Pool "p" is the standard pool of pool.fixtures.ts, full from FULL_AT.
 */
import { describe, expect, it } from 'vitest';
import { decodeReply, encodeMessage, subjectFor, type LeaseReport, type LeaseReturn, type Reply } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { CoordinatorCore, agentOfIdentity } from './coordinator-core.js';
import type { Delivery } from './pool.js';
import { FULL_AT, MS, SECRET, STANDARD_POOL_FIELDS, acquire, acquireOf, grantOf, internals, makePool, status } from './pool.fixtures.js';

const THIEF = 'a-thief-who-guessed-nothing';

const codeOf = (d: Delivery<string> | undefined): string | undefined => (d?.reply.kind === 'error' ? d.reply.code : d?.reply.kind);

describe('lease secrets', () => {
  it('refuses acquire, renewal and return under another secret with forbidden, and changes nothing', () => {
    const pool = makePool();
    const g = grantOf(acquire(pool, FULL_AT, { agentId: 'victim', seq: 1, tokensWanted: 20 }));
    const before = internals(pool);
    const stolen = acquire(pool, FULL_AT + MS, {
      agentId: 'victim',
      seq: 2 ** 53 - 1,
      leaseSecret: THIEF,
      leaseId: g.leaseId,
      tokensLeft: 0,
    });
    expect(stolen[0]?.reply).toMatchObject({ kind: 'error', code: 'forbidden', fault: 'peer', retryAfterMs: 999 });
    expect(JSON.stringify(stolen)).not.toContain(SECRET);
    const out: Delivery<string>[] = [];
    const ret: LeaseReturn = {
      v: 2,
      op: 'return',
      pool: 'p',
      agentId: 'victim',
      leaseSecret: THIEF,
      seq: 5,
      leaseId: g.leaseId,
      tokensLeft: 20,
    };
    pool.giveBack(ret, 'thief', FULL_AT + MS, out);
    expect(codeOf(out[0])).toBe('forbidden');
    const report: LeaseReport = { ...ret, op: 'report', tokensLeft: 0 };
    pool.report(report, FULL_AT + MS, out);
    expect(out).toHaveLength(1);
    expect(internals(pool).replace(/"lastRefill":\d+/, '')).toBe(before.replace(/"lastRefill":\d+/, ''));
    // The holder carries on at its own sequence.
    const renewed = grantOf(
      acquire(pool, FULL_AT + 2 * MS, { agentId: 'victim', seq: 2, leaseId: g.leaseId, tokensLeft: 20, tokensWanted: 0 }),
    );
    expect(renewed).toMatchObject({ leaseId: g.leaseId, tokensHeld: 20 });
  });

  it('frees the agent id for a new secret once the lease has expired', () => {
    const pool = makePool();
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 1, tokensWanted: 5 }));
    expect(codeOf(acquire(pool, FULL_AT + 999 * MS, { agentId: 'a', seq: 1, leaseSecret: THIEF })[0])).toBe('forbidden');
    expect(grantOf(acquire(pool, FULL_AT + 1000 * MS, { agentId: 'a', seq: 1, leaseSecret: THIEF, tokensWanted: 5 })).tokensGranted).toBe(
      5,
    );
    expect(status(pool, FULL_AT + 1000 * MS).leases).toBe(1);
  });

  it('tells a stale sequence where to go on (seqFloor)', () => {
    const pool = makePool();
    grantOf(acquire(pool, FULL_AT, { agentId: 'a', seq: 7, tokensWanted: 5 }));
    expect(acquire(pool, FULL_AT, { agentId: 'a', seq: 3 })[0]?.reply).toMatchObject({ code: 'stale-sequence', seqFloor: 7 });
  });
});

describe('identity binding and versions', () => {
  const core = (bindIdentity: boolean): CoordinatorCore<string> =>
    new CoordinatorCore<string>(
      parseCoordinatorConfig('ids.yaml', { bindIdentity, quietPeriodMs: 1000, pools: { p: STANDARD_POOL_FIELDS } }),
      3,
      0,
    );
  const send = (c: CoordinatorCore<string>, agentId: string, identity: string): Reply | undefined => {
    const req = acquireOf({ agentId, seq: 1, tokensWanted: 5, demandPerSecond: 1 });
    return c.receive(subjectFor('tokenlease', 'acquire', 'p', identity), encodeMessage(req), 'to', FULL_AT)[0]?.reply;
  };

  it.each([
    ['alice', 'alice', true],
    ['alice.worker-1', 'alice', true],
    ['alice.', 'alice', false],
    ['alicex', 'alice', false],
    ['bob.1', 'alice', false],
    ['alice', 'alice:eu', false],
  ])('agentOfIdentity(%j, %j) is %j', (agentId, identity, ok) => {
    expect(agentOfIdentity(agentId, identity)).toBe(ok);
  });

  it('refuses an agent of another identity with forbidden when identities are bound, and not otherwise', () => {
    expect(send(core(true), 'bob.1', 'alice')).toMatchObject({ kind: 'error', code: 'forbidden', fault: 'peer' });
    expect(send(core(true), 'alice.1', 'alice')?.kind).toBe('grant');
    expect(send(core(false), 'bob.1', 'alice')?.kind).toBe('grant');
  });

  it('cuts a refusal that quotes a long agent id and identity to the length a reply may have', () => {
    // 128 quotes and 128 backslashes, each escaped to two characters, quoted three times: over 700 characters uncut.
    const reply = send(core(true), '"'.repeat(128), '\\'.repeat(128));
    expect(reply).toMatchObject({ kind: 'error', code: 'forbidden', fault: 'peer' });
    if (reply === undefined) throw new Error('no reply');
    expect(decodeReply(encodeMessage(reply))).toEqual({ ok: true, value: reply });
    expect(reply.kind === 'error' && reply.message.endsWith('…')).toBe(true);
  });

  it('answers a v1 subject unsupported-version', () => {
    const reply = core(false).receive('tokenlease.v1.acquire.p', new TextEncoder().encode('{"v":1}'), 'to', FULL_AT)[0]?.reply;
    expect(reply).toMatchObject({ kind: 'error', code: 'unsupported-version', fault: 'peer' });
  });
});
