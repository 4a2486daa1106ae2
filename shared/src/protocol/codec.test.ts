import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '../testing/seed.js';
import { decodeReply, decodeRequest, encodeMessage, type Decoded } from './codec.js';
import { CALLS_MAX } from './calls.js';
import { CLOCK_MS_MAX, FLEET_WEIGHT_MAX, HOLD_MS_MAX, MESSAGE_BYTES_MAX } from './limits.js';
import type {
  ErrorReply,
  LeaseGrant,
  LeaseRequest,
  LeaseReturn,
  PoolStatus,
  Reply,
  Request,
  ReturnReceipt,
  StatusQuery,
} from './messages.js';

const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

const SECRET = 'c2VjcmV0LW9mLWFnZW50LTc';
const acquire: LeaseRequest = {
  v: 2,
  op: 'acquire',
  agentId: 'agent-7',
  pool: 'api_calls-EU',
  leaseSecret: SECRET,
  seq: 42,
  leaseId: null,
  tokensLeft: 0,
  tokensWanted: 100,
  demandPerSecond: 12.5,
  holdMs: 250,
};
const renew: LeaseRequest = { ...acquire, seq: 43, leaseId: 'L-1:e3', tokensLeft: 17, tokensWanted: 0, holdMs: HOLD_MS_MAX };
const giveBack: LeaseReturn = {
  v: 2,
  op: 'return',
  agentId: 'agent-7',
  pool: 'api',
  leaseSecret: SECRET,
  seq: 44,
  leaseId: 'L-1',
  tokensLeft: 5,
};
const status: StatusQuery = { v: 2, op: 'status', pool: 'api' };
const grant: LeaseGrant = {
  v: 2,
  kind: 'grant',
  seq: 42,
  leaseId: 'L-1',
  tokensGranted: 50,
  tokensHeld: 50,
  ttlMs: 2000,
  epoch: 3,
  maxLeaseTokens: 100,
  capacityTokens: 1000,
  refillTokens: 500,
  refillPeriodMs: 1000,
  retryAfterMs: 120,
};
const receipt: ReturnReceipt = { v: 2, kind: 'receipt', seq: 44, tokensReturned: 5 };
const poolStatus: PoolStatus = {
  v: 2,
  kind: 'status',
  pool: 'api',
  epoch: 3,
  capacityTokens: 1000,
  levelTokens: 400,
  leasedTokens: 150,
  leases: 2,
  waiting: 1,
  quietMs: 0,
};
const errorReply: ErrorReply = {
  v: 2,
  kind: 'error',
  seq: 42,
  code: 'stale-sequence',
  fault: 'peer',
  message: 'seq 42 is older than 43 — retry with a fresh one',
  retryAfterMs: 0,
};

describe('round trips', () => {
  it.each<[string, Request]>([
    ['LeaseRequest without a lease', acquire],
    ['LeaseRequest renewing a lease', renew],
    ['LeaseReturn', giveBack],
    ['StatusQuery', status],
    ['StatusQuery for one agent', { ...status, agentId: 'agent-7' }],
    ['LeaseRequest of an agent class', { ...acquire, agentClass: 'premium' }],
    ['LeaseRequest of a relay, with its fleet weight', { ...acquire, agentClass: 'relay-eu', fleetWeight: FLEET_WEIGHT_MAX }],
    ['LeaseReport', { ...giveBack, op: 'report' }],
    ['LeaseRequest telling its calls', { ...acquire, calls: { admitted: 12, denied: CALLS_MAX, shadowDenied: 0 } }],
    ['LeaseReturn telling its calls', { ...giveBack, calls: { admitted: 0, denied: 3, shadowDenied: 5 } }],
    ['LeaseRequest with its clock reading', { ...renew, clockMs: CLOCK_MS_MAX }],
  ])('%s', (_name, request) => {
    expect(decodeRequest(encodeMessage(request))).toEqual({ ok: true, value: request });
  });

  it.each<[string, Reply]>([
    ['LeaseGrant', grant],
    ['ReturnReceipt', receipt],
    ['PoolStatus', poolStatus],
    ['PoolStatus with an agent lease', { ...poolStatus, agentLease: { leaseId: 'e-1', tokensHeld: 3, expiresInMs: 900 } }],
    ['PoolStatus of an agent without a lease', { ...poolStatus, agentLease: null }],
    ['LeaseGrant of a rate lease', { ...grant, rate: { tokensPerPeriod: 300, periodMs: 1000, capTokens: 15 } }],
    ['ErrorReply', errorReply],
    ['ErrorReply of a stale sequence with its floor', { ...errorReply, seqFloor: 43 }],
    ['ErrorReply forbidden', { ...errorReply, code: 'forbidden' }],
    ['LeaseGrant of a pool in shadow mode', { ...grant, shadow: true }],
    ['LeaseGrant signed', { ...grant, sig: 'A'.repeat(85) + '_' }],
    ['LeaseGrant of a pool with an allowance', { ...grant, allowanceTokens: 25 }],
    ['LeaseGrant of a sliding-window pool', { ...grant, window: true }],
    ['ErrorReply without a seq', { ...errorReply, seq: null, code: 'bad-request', fault: 'coordinator' }],
  ])('%s', (_name, reply) => {
    expect(decodeReply(encodeMessage(reply))).toEqual({ ok: true, value: reply });
  });

  it('encodes each message to bytes of its own that later messages do not change', () => {
    // The bytes may be views into a pool shared by many messages: each must read as it was encoded, whatever follows.
    const first = encodeMessage(grant);
    const copy = Uint8Array.from(first);
    const later = Array.from({ length: 200 }, (_, i) => encodeMessage({ ...grant, seq: i, leaseId: `lease-${i}` }));
    expect(Uint8Array.from(first)).toEqual(copy);
    expect(new TextDecoder().decode(first)).toBe(JSON.stringify(grant));
    expect(later.map((b) => decodeReply(b))).toEqual(
      later.map((_, i) => ({ ok: true, value: { ...grant, seq: i, leaseId: `lease-${i}` } })),
    );
    expect(first.byteLength).toBe(new TextEncoder().encode(JSON.stringify(grant)).byteLength);
  });

  it('drops unknown fields', () => {
    expect(decodeRequest(bytes({ ...status, future: [1, 2] }))).toEqual({ ok: true, value: status });
    expect(decodeReply(bytes({ ...receipt, note: 'x' }))).toEqual({ ok: true, value: receipt });
  });

  it('a message of exactly MESSAGE_BYTES_MAX bytes is read', () => {
    const base = bytes({ ...acquire, pad: '' }).byteLength;
    const message = bytes({ ...acquire, pad: 'x'.repeat(MESSAGE_BYTES_MAX - base) });
    expect(message.byteLength).toBe(MESSAGE_BYTES_MAX);
    expect(decodeRequest(message)).toEqual({ ok: true, value: acquire });
  });
});

/** Expects a refusal with `code` (and `seq` when given); never a throw. */
function expectRefused<T>(result: Decoded<T>, code: 'bad-request' | 'unsupported-version', seq?: number | null): void {
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.code).toBe(code);
  expect(typeof result.message).toBe('string');
  if (seq !== undefined) expect(result.seq).toBe(seq);
}

describe('refusals', () => {
  const overLimit = (() => {
    const base = bytes({ ...acquire, pad: '' }).byteLength;
    return bytes({ ...acquire, pad: 'x'.repeat(MESSAGE_BYTES_MAX + 1 - base) });
  })();

  it.each<[string, Uint8Array]>([
    ['non-JSON bytes', new TextEncoder().encode('hello {')],
    ['empty input', new Uint8Array(0)],
    ['invalid UTF-8', Uint8Array.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
    ['a lone UTF-8 continuation byte inside a string', Uint8Array.from([...bytes({ ...status, x: '' }).slice(0, -2), 0x80, 0x22, 0x7d])],
    ['a JSON array', bytes([acquire])],
    ['JSON null', bytes(null)],
    ['a JSON string', bytes('acquire')],
    ['a JSON number', bytes(1)],
    [`a message over ${MESSAGE_BYTES_MAX} bytes`, overLimit],
  ])('%s', (_name, input) => {
    expect(overLimit.byteLength).toBe(MESSAGE_BYTES_MAX + 1);
    expectRefused(decodeRequest(input), 'bad-request', null);
    expectRefused(decodeReply(input), 'bad-request', null);
  });

  it('a report without a lease id, and a rate without a period, are refused', () => {
    expectRefused(decodeRequest(bytes({ ...giveBack, op: 'report', leaseId: null })), 'bad-request', giveBack.seq);
    expectRefused(decodeReply(bytes({ ...grant, rate: { tokensPerPeriod: 1, capTokens: 1 } })), 'bad-request', grant.seq);
  });

  it.each<[string, Record<string, unknown>, number | null]>([
    ['v: 1 (the old protocol) with a readable seq', { ...acquire, v: 1 }, 42],
    ['v: 3 with a readable seq', { ...acquire, v: 3 }, 42],
    ['v: "2"', { ...acquire, v: '2' }, 42],
    ['no v', { ...status, v: undefined }, null],
    ['v: 1 with a fractional seq', { ...acquire, v: 1, seq: 1.5 }, null],
    ['v: 1 with a negative seq', { ...acquire, v: 1, seq: -1 }, null],
  ])('unsupported version: %s', (_name, message, seq) => {
    expectRefused(decodeRequest(bytes(message)), 'unsupported-version', seq);
    expectRefused(decodeReply(bytes({ ...grant, v: message['v'], seq: message['seq'] })), 'unsupported-version', seq);
  });

  it.each<[string, Record<string, unknown>, number | null]>([
    ['missing agentId', { ...acquire, agentId: undefined }, 42],
    ['missing holdMs', { ...acquire, holdMs: undefined }, 42],
    ['missing op', { ...acquire, op: undefined }, 42],
    ['unknown op', { ...acquire, op: 'steal' }, 42],
    ['negative tokensWanted', { ...acquire, tokensWanted: -1 }, 42],
    ['negative tokensLeft', { ...giveBack, tokensLeft: -5 }, 44],
    ['fractional seq', { ...acquire, seq: 1.5 }, null],
    ['seq as a string', { ...acquire, seq: '42' }, null],
    ['holdMs over HOLD_MS_MAX', { ...acquire, holdMs: HOLD_MS_MAX + 1 }, 42],
    ['demandPerSecond negative', { ...acquire, demandPerSecond: -0.5 }, 42],
    ['fleetWeight 0', { ...acquire, fleetWeight: 0 }, 42],
    ['fleetWeight over FLEET_WEIGHT_MAX', { ...acquire, fleetWeight: FLEET_WEIGHT_MAX + 1 }, 42],
    ['fractional fleetWeight', { ...acquire, fleetWeight: 2.5 }, 42],
    ['negative clockMs', { ...acquire, clockMs: -1 }, 42],
    ['fractional clockMs', { ...acquire, clockMs: 10.5 }, 42],
    ['clockMs over CLOCK_MS_MAX', { ...acquire, clockMs: CLOCK_MS_MAX + 1 }, 42],
    ['clockMs as a string', { ...acquire, clockMs: '1000' }, 42],
    ['fleetWeight as a string', { ...acquire, fleetWeight: '3' }, 42],
    ['calls that are not an object', { ...acquire, calls: 5 }, 42],
    ['calls as a list', { ...acquire, calls: [1, 2, 3] }, 42],
    ['a negative count of calls', { ...giveBack, calls: { admitted: 1, denied: -1, shadowDenied: 0 } }, 44],
    ['calls over CALLS_MAX', { ...acquire, calls: { admitted: CALLS_MAX + 1, denied: 0, shadowDenied: 0 } }, 42],
    ['calls missing a count', { ...acquire, calls: { admitted: 1, denied: 0 } }, 42],
    ['return without a leaseId', { ...giveBack, leaseId: null }, 44],
    ['agentId with a space', { ...acquire, agentId: 'agent 7' }, 42],
    ['agentId of 129 chars', { ...acquire, agentId: 'a'.repeat(129) }, 42],
    ['no leaseSecret', { ...acquire, leaseSecret: undefined }, 42],
    ['a leaseSecret of 21 chars (under 128 bits)', { ...acquire, leaseSecret: 'a'.repeat(21) }, 42],
    ['a leaseSecret of 129 chars', { ...acquire, leaseSecret: 'a'.repeat(129) }, 42],
    ['a leaseSecret outside base64url', { ...giveBack, leaseSecret: `${SECRET}+/` }, 44],
    ['a report without a leaseSecret', { ...giveBack, op: 'report', leaseSecret: undefined }, 44],
  ])('request with %s', (_name, message, seq) => {
    expectRefused(decodeRequest(bytes(message)), 'bad-request', seq);
  });

  it.each<[string, unknown]>([
    ['a dot', 'api.calls'],
    ['a star', 'api*'],
    ['a greater-than', 'api>'],
    ['a space', 'api calls'],
    ['a control char', 'api\u0001'],
    ['a DEL', 'api\u007f'],
    ['a non-ASCII char', 'apí'],
    ['an empty string', ''],
    ['129 chars', 'p'.repeat(129)],
    ['a number', 7],
    ['null', null],
  ])('pool name with %s', (_name, pool) => {
    expectRefused(decodeRequest(bytes({ ...acquire, pool })), 'bad-request', 42);
    expectRefused(decodeRequest(bytes({ ...status, pool })), 'bad-request', null);
    expectRefused(decodeReply(bytes({ ...poolStatus, pool })), 'bad-request', null);
  });

  it('a pool name of 128 chars is accepted', () => {
    const pool = 'p'.repeat(128);
    expect(decodeRequest(bytes({ ...status, pool }))).toEqual({ ok: true, value: { ...status, pool } });
  });

  it.each<[string, Record<string, unknown>]>([
    ['grant with ttlMs 0', { ...grant, ttlMs: 0 }],
    ['grant with negative tokensGranted', { ...grant, tokensGranted: -1 }],
    ['receipt with a fractional seq', { ...receipt, seq: 0.5 }],
    ['error with an unknown code', { ...errorReply, code: 'x' }],
    ['error with an unknown fault', { ...errorReply, fault: 'agent' }],
    ['error with a 513-char message', { ...errorReply, message: 'm'.repeat(513) }],
    ['unknown kind', { ...receipt, kind: 'refund' }],
  ])('reply: %s', (_name, message) => {
    expectRefused(decodeReply(bytes(message)), 'bad-request');
  });

  it('never echoes a malformed secret in the refusal', () => {
    const refused = decodeRequest(bytes({ ...acquire, leaseSecret: 'not a secret but private text' }));
    expect(refused.ok || refused.message).not.toContain('private');
  });

  it('refuses a grant without the pool refill, or a shadow flag that is not a boolean', () => {
    expectRefused(decodeReply(bytes({ ...grant, refillTokens: undefined })), 'bad-request', 42);
    expectRefused(decodeReply(bytes({ ...grant, refillPeriodMs: 0 })), 'bad-request', 42);
    expectRefused(decodeReply(bytes({ ...grant, shadow: 'yes' })), 'bad-request', 42);
    for (const sig of ['', 'A'.repeat(85), 'A'.repeat(87), `${'A'.repeat(84)}==`, 7])
      expectRefused(decodeReply(bytes({ ...grant, sig })), 'bad-request', 42);
  });

  it('refuses a grant whose allowance is not a whole number of tokens, or whose window flag is not a boolean', () => {
    expectRefused(decodeReply(bytes({ ...grant, allowanceTokens: -1 })), 'bad-request', 42);
    expectRefused(decodeReply(bytes({ ...grant, allowanceTokens: 1.5 })), 'bad-request', 42);
    expectRefused(decodeReply(bytes({ ...grant, window: 1 })), 'bad-request', 42);
  });

  it('a request is not a reply and a reply is not a request', () => {
    expectRefused(decodeReply(encodeMessage(acquire)), 'bad-request', 42);
    expectRefused(decodeRequest(encodeMessage(grant)), 'bad-request', 42);
  });

  it('refusal-shaped fields inside a message are never echoed', () => {
    const decoy = { ok: false, code: 'x', seq: 1, message: 'decoy' };
    expect(decodeRequest(bytes({ ...acquire, ...decoy }))).toEqual({ ok: true, value: { ...acquire, seq: 1 } });
    expect(decodeReply(bytes({ ...receipt, ...decoy }))).toEqual({ ok: true, value: { ...receipt, seq: 1 } });
    const refused = decodeRequest(bytes({ v: 2, ...decoy }));
    expectRefused(refused, 'bad-request', 1);
    expect(refused).not.toMatchObject({ message: 'decoy' });
    // A reply whose own code is 'x' is refused for that code, not passed through.
    expectRefused(decodeReply(bytes({ ...errorReply, ...decoy })), 'bad-request', 1);
  });
});

describe('never throws on input (property)', () => {
  const seed = propertySeed('src/protocol/codec.test.ts');
  const run = (input: Uint8Array): void => {
    for (const result of [decodeRequest(input), decodeReply(input)] as const) {
      if (!result.ok) expect(['bad-request', 'unsupported-version']).toContain(result.code);
    }
  };

  it('arbitrary bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 5000 }), run), { seed, numRuns: 500 });
  });

  it('arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => run(bytes(value))),
      { seed, numRuns: 500 },
    );
  });

  it('objects of protocol field names with arbitrary values', () => {
    const keys = [...new Set([acquire, giveBack, grant, poolStatus, errorReply].flatMap((m) => Object.keys(m)))];
    const fieldValue = fc.oneof(fc.jsonValue(), fc.constantFrom(1, 0, -1, 1.5, 'acquire', 'grant', 'error', 'api', null));
    const message = fc.dictionary(fc.constantFrom(...keys), fieldValue).map((m) => ({ ...m, v: 2 }));
    fc.assert(
      fc.property(message, (value) => run(bytes(value))),
      { seed, numRuns: 1000 },
    );
  });
});
