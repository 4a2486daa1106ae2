/**
 * CoordinatorCore: bytes and subjects in, deliveries out, at fixed instants
 * (µs). Routing, several pools, tick / nextDeadlineUs / flush, and bad input
 * that must be refused with a typed error and change nothing.
 *
 * Pools: "p", the standard pool of pool.fixtures.ts (capacity 100, 1000/s =
 * 1 token per ms, TTL 1 s, leases ≤ 20, minimum grant 5, holds ≤ 200 ms), and
 * "q" (capacity 10, 10/s, TTL 500 ms); start at 0, quiet period 1 s, so "p"
 * is full from 1.100 s (FULL_AT).
 */
import { describe, expect, it } from 'vitest';
import {
  decodeReply,
  encodeMessage,
  MESSAGE_BYTES_MAX,
  subjectFor,
  TokenleaseError,
  type LeaseRequest,
  type PoolStatus,
  type Reply,
  type Request,
} from '@tokenlease/shared';
import { parseCoordinatorConfig, type CoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import type { Delivery } from './pool.js';
import { FULL_AT, MS, STANDARD_POOL_FIELDS, acquireOf, grantOf, internals, type AcquireFields } from './pool.fixtures.js';
import { SECRET } from './pool.fixtures.js';

const EPOCH = 7;

function makeConfig(top: Record<string, unknown> = {}): CoordinatorConfig {
  return parseCoordinatorConfig('coordinator-core.test.yaml', {
    quietPeriodMs: 1000,
    ...top,
    pools: {
      p: STANDARD_POOL_FIELDS,
      q: { capacity: 10, refill: '10/s', leaseTtlMs: 500 },
    },
  });
}

const makeCore = (): CoordinatorCore<string> => new CoordinatorCore<string>(makeConfig(), EPOCH, 0);

const subject = (op: Request['op'], pool: string): string => subjectFor('tokenlease', op, pool);
const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

function acquireReq(fields: AcquireFields & { readonly pool?: string }): LeaseRequest {
  return acquireOf({ demandPerSecond: 1, ...fields });
}

function send(core: CoordinatorCore<string>, req: Request, to: string, nowUs: number): Delivery<string>[] {
  return core.receive(subject(req.op, req.pool), encodeMessage(req), to, nowUs);
}

function only(deliveries: readonly Delivery<string>[]): Delivery<string> {
  expect(deliveries).toHaveLength(1);
  const d = deliveries[0];
  if (d === undefined) throw new Error('no delivery');
  return d;
}

function statusOf(core: CoordinatorCore<string>, pool: string, nowUs: number): PoolStatus {
  const reply = only(send(core, { v: 2, op: 'status', pool }, 'status', nowUs)).reply;
  if (reply.kind !== 'status') throw new Error(`expected a status, got ${JSON.stringify(reply)}`);
  return reply;
}

const wellFormed = (reply: Reply): void => {
  expect(decodeReply(encodeMessage(reply))).toEqual({ ok: true, value: reply });
};

describe('routing', () => {
  it('answers acquire, return and status on their subjects, to the reply target given', () => {
    const core = makeCore();
    const g = grantOf(send(core, acquireReq({ agentId: 'a', seq: 1, tokensWanted: 15 }), 'inbox-1', FULL_AT));
    expect(g).toMatchObject({
      seq: 1,
      tokensGranted: 15,
      tokensHeld: 15,
      ttlMs: 1000,
      epoch: EPOCH,
      capacityTokens: 100,
      maxLeaseTokens: 20,
    });
    wellFormed(g);
    expect(statusOf(core, 'p', FULL_AT)).toEqual({
      v: 2,
      kind: 'status',
      pool: 'p',
      epoch: EPOCH,
      capacityTokens: 100,
      levelTokens: 85,
      leasedTokens: 15,
      leases: 1,
      waiting: 0,
      quietMs: 0,
      calls: { admitted: 0, denied: 0, shadowDenied: 0 },
    });
    const out = send(
      core,
      { v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'p', seq: 2, leaseId: g.leaseId, tokensLeft: 15 },
      'inbox-2',
      FULL_AT,
    );
    expect(out).toEqual([{ to: 'inbox-2', reply: { v: 2, kind: 'receipt', seq: 2, tokensReturned: 15 } }]);
    expect(statusOf(core, 'p', FULL_AT)).toMatchObject({ levelTokens: 100, leasedTokens: 0, leases: 0 });
  });

  it('counts the calls agents report once per request accepted: not on a retry, a stale or foreign request, nor a return that finds nothing', () => {
    const core = makeCore();
    const calls = (admitted: number, denied: number, shadowDenied = 0) => ({ calls: { admitted, denied, shadowDenied } });
    const g = grantOf(send(core, { ...acquireReq({ agentId: 'a', seq: 1, tokensWanted: 5 }), ...calls(7, 3) }, 'i', FULL_AT));
    // A retry of seq 1 gets the original reply and is not counted again; an older seq is stale.
    send(core, { ...acquireReq({ agentId: 'a', seq: 1, tokensWanted: 5 }), ...calls(7, 3) }, 'i', FULL_AT);
    send(core, { ...acquireReq({ agentId: 'a', seq: 0, tokensWanted: 5 }), ...calls(100, 100) }, 'i', FULL_AT);
    // Another secret for the same agent id is forbidden, and counts nothing.
    send(core, { ...acquireReq({ agentId: 'a', seq: 5, tokensWanted: 5 }), leaseSecret: 'B'.repeat(22), ...calls(100, 100) }, 'i', FULL_AT);
    expect(statusOf(core, 'p', FULL_AT).calls).toEqual({ admitted: 7, denied: 3, shadowDenied: 0 });
    grantOf(send(core, { ...acquireReq({ agentId: 'b', seq: 1, tokensWanted: 5 }), ...calls(1, 2, 4) }, 'j', FULL_AT));
    const ret = { v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'p', leaseId: g.leaseId, tokensLeft: 5 } as const;
    send(core, { ...ret, seq: 2, ...calls(5, 0) }, 'i', FULL_AT);
    send(core, { ...ret, seq: 2, ...calls(5, 0) }, 'i', FULL_AT);
    send(core, { ...ret, seq: 3, ...calls(50, 50) }, 'i', FULL_AT);
    expect(statusOf(core, 'p', FULL_AT).calls).toEqual({ admitted: 13, denied: 5, shadowDenied: 4 });
    const tallies: Record<string, unknown>[] = [];
    core.takeTallies((pool, counts) => tallies.push({ pool, calls: counts.calls }));
    expect(tallies).toEqual([{ pool: 'p', calls: { admitted: 13, denied: 5, shadowDenied: 4 } }]);
    core.takeTallies((pool, counts) => tallies.push({ pool, calls: counts.calls }));
    expect(tallies).toHaveLength(1);
  });

  it('keeps pools apart', () => {
    const core = makeCore();
    const inQ = grantOf(send(core, acquireReq({ agentId: 'a', seq: 1, pool: 'q', tokensWanted: 5 }), 'x', 2_000 * MS));
    expect(inQ).toMatchObject({ tokensGranted: 1, ttlMs: 500, capacityTokens: 10, maxLeaseTokens: 1 });
    expect(statusOf(core, 'q', 2_000 * MS)).toMatchObject({ levelTokens: 9, leasedTokens: 1, leases: 1 });
    expect(statusOf(core, 'p', 2_000 * MS)).toMatchObject({ levelTokens: 100, leasedTokens: 0, leases: 0 });
    // The same agent has one lease per pool, and seqs are per pool.
    expect(grantOf(send(core, acquireReq({ agentId: 'a', seq: 1, tokensWanted: 5 }), 'y', 2_000 * MS)).tokensGranted).toBe(5);
  });

  it('exposes configured pools only', () => {
    const core = makeCore();
    expect(core.pool('p')?.config.name).toBe('p');
    expect(core.pool('q')?.config.capacity).toBe(10);
    expect(core.pool('nope')).toBeUndefined();
  });

  it('listens under a configured subject prefix only', () => {
    const core = new CoordinatorCore<string>(makeConfig({ subjectPrefix: 'acme.rl' }), EPOCH, 0);
    const req = acquireReq({ agentId: 'a', seq: 1 });
    expect(grantOf(core.receive(subjectFor('acme.rl', 'acquire', 'p'), encodeMessage(req), 'x', FULL_AT)).tokensGranted).toBe(20);
    const refused = only(core.receive(subjectFor('tokenlease', 'acquire', 'p'), encodeMessage({ ...req, agentId: 'b' }), 'y', FULL_AT));
    expect(refused.reply).toMatchObject({ kind: 'error', code: 'bad-request', fault: 'peer', seq: null });
  });

  it.each<[number, string]>([
    [MESSAGE_BYTES_MAX, 'grant'],
    [MESSAGE_BYTES_MAX + 1, 'error'],
  ])('accepts a payload of up to MESSAGE_BYTES_MAX bytes: %i bytes get a %s', (size, kind) => {
    const core = makeCore();
    const req = acquireReq({ agentId: 'a', seq: 1 });
    const padding = 'x'.repeat(size - bytes({ ...req, padding: '' }).byteLength);
    const payload = bytes({ ...req, padding });
    expect(payload.byteLength).toBe(size);
    expect(only(core.receive(subject('acquire', 'p'), payload, 'x', FULL_AT)).reply.kind).toBe(kind);
  });

  it('delivers replies of held requests that a status request’s tick releases, before the status', () => {
    const core = makeCore();
    expect(send(core, acquireReq({ agentId: 'a', seq: 1, holdMs: 200 }), 'held', 1_000 * MS)).toEqual([]);
    const out = send(core, { v: 2, op: 'status', pool: 'p' }, 'status', 1_005 * MS);
    expect(out.map((d) => [d.to, d.reply.kind])).toEqual([
      ['held', 'grant'],
      ['status', 'status'],
    ]);
  });

  it.each<[string, number]>([
    ['negative', -1],
    ['fractional', 1.5],
    ['unsafe', 2 ** 53],
  ])('refuses a %s clock reading as a programming error', (_name, nowUs) => {
    const core = makeCore();
    const before = internals(core.pool('p'));
    const caught = (run: () => unknown): unknown => {
      try {
        run();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    for (const run of [
      () => send(core, acquireReq({ agentId: 'a', seq: 1 }), 'x', nowUs),
      () => core.tick(nowUs),
      () => core.flush(nowUs),
      () => new CoordinatorCore<string>(makeConfig(), EPOCH, nowUs),
    ]) {
      const error = caught(run);
      expect(error).toBeInstanceOf(TokenleaseError);
      expect((error as TokenleaseError).code).toBe('out-of-range');
    }
    expect(internals(core.pool('p'))).toBe(before);
  });
});

describe('tick, nextDeadlineUs and flush span all pools', () => {
  it('reports the earliest deadline of any pool and answers held requests of each', () => {
    const core = makeCore();
    expect(core.nextDeadlineUs()).toBe(Infinity);
    expect(send(core, acquireReq({ agentId: 'a', seq: 1, holdMs: 200 }), 'p-held', 1_000 * MS)).toEqual([]);
    // q: 1 token per 100 ms, minimum grant 1, holds ≤ 125 ms (TTL 500 / 4).
    expect(send(core, acquireReq({ agentId: 'a', seq: 1, pool: 'q', tokensWanted: 1, holdMs: 1000 }), 'q-held', 1_000 * MS)).toEqual([]);
    expect(core.nextDeadlineUs()).toBe(1_005 * MS);
    expect(core.tick(1_004_999)).toEqual([]);
    expect(core.tick(1_005 * MS).map((d) => d.to)).toEqual(['p-held']);
    expect(core.nextDeadlineUs()).toBe(1_100 * MS);
    const out = core.tick(1_100 * MS);
    expect(out.map((d) => d.to)).toEqual(['q-held']);
    expect(out[0]?.reply).toMatchObject({ kind: 'grant', tokensGranted: 1, retryAfterMs: 0 });
  });

  it('flush answers every held request in every pool now, with what there is', () => {
    const core = makeCore();
    send(core, acquireReq({ agentId: 'a', seq: 1, holdMs: 200 }), 'p-held', 1_000 * MS);
    send(core, acquireReq({ agentId: 'b', seq: 1, pool: 'q', tokensWanted: 1, holdMs: 100 }), 'q-held', 1_000 * MS);
    const out = core.flush(1_002 * MS);
    expect(out.map((d) => [d.to, d.reply.kind === 'grant' ? d.reply.tokensGranted : -1])).toEqual([
      ['p-held', 2],
      ['q-held', 0],
    ]);
    for (const d of out) wellFormed(d.reply);
    expect(core.flush(1_003 * MS)).toEqual([]);
  });
});

describe('bad input gets one typed error reply (fault: peer) and changes nothing', () => {
  /** a's renewal at seq 2 naming its live lease: processed, it would void that lease's bound. */
  const goodFor = (leaseId: string): LeaseRequest => acquireReq({ agentId: 'a', seq: 2, leaseId, tokensLeft: 0, tokensWanted: 20 });
  const acquireSubject = subject('acquire', 'p');
  const text = (s: string): Uint8Array => new TextEncoder().encode(s);

  // name, subject, payload made from the good request, code, seq in the refusal
  const cases: ReadonlyArray<readonly [string, string, (good: LeaseRequest) => Uint8Array, string, number | null]> = [
    ['not JSON', acquireSubject, () => text('acquire please'), 'bad-request', null],
    ['truncated JSON', acquireSubject, () => text('{"v":1,"op":"acq'), 'bad-request', null],
    ['not UTF-8', acquireSubject, () => new Uint8Array([0x7b, 0xc3, 0x28, 0x7d]), 'bad-request', null],
    ['empty payload', acquireSubject, () => new Uint8Array(0), 'bad-request', null],
    ['a JSON array', acquireSubject, (good) => bytes([good]), 'bad-request', null],
    ['JSON null', acquireSubject, () => bytes(null), 'bad-request', null],
    ['the old version 1', acquireSubject, (good) => bytes({ ...good, v: 1 }), 'unsupported-version', 2],
    ['version "2" as a string', acquireSubject, (good) => bytes({ ...good, v: '2' }), 'unsupported-version', 2],
    ['no version', acquireSubject, (good) => bytes({ ...good, v: undefined }), 'unsupported-version', 2],
    ['negative tokensLeft', acquireSubject, (good) => bytes({ ...good, tokensLeft: -1 }), 'bad-request', 2],
    ['negative tokensWanted', acquireSubject, (good) => bytes({ ...good, tokensWanted: -5 }), 'bad-request', 2],
    ['fractional tokensWanted', acquireSubject, (good) => bytes({ ...good, tokensWanted: 1.5 }), 'bad-request', 2],
    ['tokensWanted past the wire limit', acquireSubject, (good) => bytes({ ...good, tokensWanted: 2 ** 53 }), 'bad-request', 2],
    ['tokensWanted as a string', acquireSubject, (good) => bytes({ ...good, tokensWanted: '20' }), 'bad-request', 2],
    ['holdMs past the limit', acquireSubject, (good) => bytes({ ...good, holdMs: 60_001 }), 'bad-request', 2],
    ['negative demand', acquireSubject, (good) => bytes({ ...good, demandPerSecond: -1 }), 'bad-request', 2],
    ['negative seq', acquireSubject, (good) => bytes({ ...good, seq: -1 }), 'bad-request', null],
    ['empty agentId', acquireSubject, (good) => bytes({ ...good, agentId: '' }), 'bad-request', 2],
    ['agentId with a space', acquireSubject, (good) => bytes({ ...good, agentId: 'a b' }), 'bad-request', 2],
    ['leaseId a number', acquireSubject, (good) => bytes({ ...good, leaseId: 5 }), 'bad-request', 2],
    ['unknown op in the payload', acquireSubject, (good) => bytes({ ...good, op: 'steal' }), 'bad-request', 2],
    [
      'a return on the acquire subject',
      acquireSubject,
      () => bytes({ v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'p', seq: 2, leaseId: 'x', tokensLeft: 5 }),
      'bad-request',
      2,
    ],
    ['pool in payload ≠ pool in subject', acquireSubject, (good) => bytes({ ...good, pool: 'q' }), 'bad-request', 2],
    ['pool in subject ≠ pool in payload', subject('acquire', 'q'), (good) => bytes(good), 'bad-request', 2],
    ['status of another pool', subject('status', 'p'), () => bytes({ v: 2, op: 'status', pool: 'q' }), 'bad-request', null],
    ['pool name with a dot in the payload', acquireSubject, (good) => bytes({ ...good, pool: 'p.x' }), 'bad-request', 2],
    ['unknown pool', subject('acquire', 'nope'), (good) => bytes({ ...good, pool: 'nope' }), 'unknown-pool', 2],
    ['status of an unknown pool', subject('status', 'nope'), () => bytes({ v: 2, op: 'status', pool: 'nope' }), 'unknown-pool', null],
    [
      'return to an unknown pool',
      subject('return', 'nope'),
      () => bytes({ v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'nope', seq: 2, leaseId: 'x', tokensLeft: 5 }),
      'unknown-pool',
      2,
    ],
    [
      'return with negative tokensLeft',
      subject('return', 'p'),
      () => bytes({ v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'p', seq: 2, leaseId: 'x', tokensLeft: -1 }),
      'bad-request',
      2,
    ],
    [
      'return without a lease id',
      subject('return', 'p'),
      () => bytes({ v: 2, op: 'return', leaseSecret: SECRET, agentId: 'a', pool: 'p', seq: 2, leaseId: null, tokensLeft: 5 }),
      'bad-request',
      2,
    ],
    ['subject without a pool', 'tokenlease.v2.acquire', (good) => bytes(good), 'bad-request', null],
    ['subject without an identity', 'tokenlease.v2.acquire.p', (good) => bytes(good), 'bad-request', null],
    ['subject with an empty pool', 'tokenlease.v2.acquire..anon', (good) => bytes(good), 'bad-request', null],
    ['subject of the old version 1', 'tokenlease.v1.acquire.p', (good) => bytes(good), 'unsupported-version', null],
    ['subject of version 3', 'tokenlease.v3.acquire.p.anon', (good) => bytes(good), 'unsupported-version', null],
    ['subject under another prefix', 'other.v2.acquire.p.anon', (good) => bytes(good), 'bad-request', null],
    ['subject with an unknown op', 'tokenlease.v2.steal.p.anon', (good) => bytes(good), 'bad-request', null],
    ['subject with an extra token', 'tokenlease.v2.acquire.p.anon.x', (good) => bytes(good), 'bad-request', null],
    ['subject with a wildcard pool', 'tokenlease.v2.acquire.*.anon', (good) => bytes(good), 'bad-request', null],
    ['empty subject', '', (good) => bytes(good), 'bad-request', null],
    ['oversized payload', acquireSubject, (good) => bytes({ ...good, padding: 'x'.repeat(5000) }), 'bad-request', null],
    // Refusals quote what they refuse; quoted, these are longer than a reply's message may be, and must be cut.
    [
      'subject of control characters, six times longer escaped',
      `tokenlease.v2.acquire.p.${'\u0001'.repeat(300)}`,
      (good) => bytes(good),
      'bad-request',
      null,
    ],
    ['a version of 3000 characters', acquireSubject, (good) => bytes({ ...good, v: 'x'.repeat(3000) }), 'unsupported-version', 2],
  ];

  /**
   * A core with some of everything: five leases in "p" (a's with id
   * `leaseId`), a held request of "f", one lease in "q"; and a twin with the
   * same history, to compare with after the bad input.
   */
  function busyCore(): { core: CoordinatorCore<string>; leaseId: string } {
    const core = makeCore();
    const leaseId = grantOf(send(core, acquireReq({ agentId: 'a', seq: 1, tokensWanted: 20 }), 'a', FULL_AT)).leaseId;
    for (const agentId of ['b', 'c', 'd', 'e']) grantOf(send(core, acquireReq({ agentId, seq: 1 }), agentId, FULL_AT));
    expect(send(core, acquireReq({ agentId: 'f', seq: 1, tokensWanted: 5, holdMs: 200 }), 'f', FULL_AT)).toEqual([]);
    grantOf(send(core, acquireReq({ agentId: 'a', seq: 1, pool: 'q', tokensWanted: 1 }), 'qa', FULL_AT));
    return { core, leaseId };
  }

  it('the sample request itself is good: sent for real, it would change the pool', () => {
    const { core, leaseId } = busyCore();
    const before = internals(core.pool('p'));
    const out = core.receive(acquireSubject, bytes(goodFor(leaseId)), 'bad', 1_150 * MS);
    expect(only(out).reply).toMatchObject({ kind: 'grant', seq: 2, tokensHeld: 0 });
    expect(internals(core.pool('p'))).not.toBe(before);
  });

  it.each(cases)('%s', (_name, subj, payloadOf, code, seq) => {
    const { core, leaseId } = busyCore();
    const twin = busyCore().core;
    const nowUs = 1_150 * MS;
    const payload = payloadOf(goodFor(leaseId));
    const statusBefore = statusOf(core, 'p', nowUs);
    statusOf(twin, 'p', nowUs);
    const snapshot = { p: internals(core.pool('p')), q: internals(core.pool('q')) };

    const out = core.receive(subj, payload, 'bad', nowUs);

    expect(out).toEqual([
      { to: 'bad', reply: { v: 2, kind: 'error', seq, code, fault: 'peer', message: expect.any(String), retryAfterMs: 0 } },
    ]);
    const reply = only(out).reply;
    wellFormed(reply);
    if (reply.kind === 'error') expect(reply.message.length).toBeGreaterThan(0);
    expect(statusOf(core, 'p', nowUs)).toEqual(statusBefore);
    expect({ p: internals(core.pool('p')), q: internals(core.pool('q')) }).toEqual(snapshot);
    // Later on, the core behaves exactly like its twin that never saw the bad input.
    for (const t of [1_300 * MS, 2_200 * MS]) {
      expect(core.tick(t)).toEqual(twin.tick(t));
      expect(statusOf(core, 'p', t)).toEqual(statusOf(twin, 'p', t));
      expect(statusOf(core, 'q', t)).toEqual(statusOf(twin, 'q', t));
    }
  });
});
