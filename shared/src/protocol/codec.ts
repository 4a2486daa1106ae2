/**
 * Codec of protocol v2: JSON in UTF-8, at most MESSAGE_BYTES_MAX bytes.
 *
 * Decoding validates every field against limits.ts and returns a typed
 * outcome; it never throws on input. Unknown fields are ignored so that a
 * later minor revision can add fields; a different `v` is refused with
 * `unsupported-version`.
 */
import { readCallCounts } from './calls.js';
import { GRANT_SIGNATURE_PATTERN } from './grant-signature.js';
import { boolField, FieldProblem, idField, intField, nullableIdField, numberField, oneOf, textField, type Fields } from './fields.js';
import {
  LEASE_SECRET_LENGTH_MAX,
  LEASE_SECRET_LENGTH_MIN,
  CLOCK_MS_MAX,
  DEMAND_PER_SECOND_MAX,
  DURATION_MS_MAX,
  HOLD_MS_MAX,
  MESSAGE_BYTES_MAX,
  MESSAGE_TEXT_LENGTH_MAX,
  SEQ_MAX,
  WIRE_TOKENS_MAX,
  FLEET_WEIGHT_MAX,
} from './limits.js';
import type { AgentLease, ErrorCode, LeaseRate, Reply, Request } from './messages.js';
import { OPERATOR_REPLY_BYTES_MAX, readOperatorReply, readOperatorRequest } from './operator.js';
import { PROTOCOL_VERSION, poolNameProblem } from './subjects.js';

/** DecodeFailure — why bytes are no valid message: the code to refuse them with, and a message saying what was wrong. */
export interface DecodeFailure {
  readonly ok: false;
  readonly code: 'bad-request' | 'unsupported-version';
  readonly message: string;
  /** The request's sequence number when it could be read, so the refusal can name it. */
  readonly seq: number | null;
}

/** Decoded — a decoder's answer: the message, or a DecodeFailure; decoders refuse, never throw. */
export type Decoded<T> = { readonly ok: true; readonly value: T } | DecodeFailure;

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * encodeMessage — JSON bytes of a request or reply. `Buffer.from` cuts a
 * message of a few hundred bytes from Node's shared pool of bytes, where
 * `TextEncoder.encode` gives each one an `ArrayBuffer` of its own (an
 * allocation outside the heap, registered, later swept): 1.0 µs a grant
 * against 4.0 µs, on every reply the coordinator sends. The bytes are a
 * view into that pool: read them through the view (its offset and length),
 * never through its `.buffer`.
 */
export function encodeMessage(message: Request | Reply): Uint8Array {
  return Buffer.from(JSON.stringify(message), 'utf8');
}

function parseObject(bytes: Uint8Array, bytesMax: number): Decoded<Fields> {
  if (bytes.byteLength > bytesMax) {
    return fail('bad-request', `message is ${bytes.byteLength} bytes; the limit is ${bytesMax}`, null);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(bytes));
  } catch {
    return fail('bad-request', 'message is not UTF-8 JSON', null);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return fail('bad-request', 'message is not a JSON object', null);
  }
  return { ok: true, value: parsed as Fields };
}

function fail(code: DecodeFailure['code'], message: string, seq: number | null): DecodeFailure {
  return { ok: false, code, message, seq };
}

function poolField(obj: Fields): string {
  const problem = poolNameProblem(obj['pool']);
  if (problem !== null) throw new FieldProblem('pool', problem);
  return obj['pool'] as string;
}

/** signatureField — a grant's signature: GRANT_SIGNATURE_PATTERN. */
function signatureField(obj: Fields): string {
  const value = obj['sig'];
  if (typeof value !== 'string' || !GRANT_SIGNATURE_PATTERN.test(value))
    throw new FieldProblem('sig', 'must be 86 characters of base64url');
  return value;
}

/** secretField — a lease secret: LEASE_SECRET_LENGTH_MIN to _MAX characters of base64url. */
function secretField(obj: Fields): string {
  const value = obj['leaseSecret'];
  if (
    typeof value !== 'string' ||
    value.length < LEASE_SECRET_LENGTH_MIN ||
    value.length > LEASE_SECRET_LENGTH_MAX ||
    !/^[A-Za-z0-9_-]+$/.test(value)
  ) {
    // The value is never echoed: it may be a secret.
    throw new FieldProblem('leaseSecret', `must be ${LEASE_SECRET_LENGTH_MIN} to ${LEASE_SECRET_LENGTH_MAX} characters of base64url`);
  }
  return value;
}

function readRequest(obj: Fields): Request {
  const op = oneOf(obj, 'op', ['acquire', 'return', 'report', 'status', 'pools', 'reload'] as const);
  if (op === 'pools' || op === 'reload') return readOperatorRequest(obj, op);
  const pool = poolField(obj);
  if (op === 'status') return obj['agentId'] === undefined ? { v: 2, op, pool } : { v: 2, op, pool, agentId: idField(obj, 'agentId') };
  const agentId = idField(obj, 'agentId');
  const leaseSecret = secretField(obj);
  const seq = intField(obj, 'seq', 0, SEQ_MAX);
  const tokensLeft = intField(obj, 'tokensLeft', 0, WIRE_TOKENS_MAX);
  const calls = op !== 'report' && obj['calls'] !== undefined ? { calls: readCallCounts(obj, 'calls') } : {};
  if (op === 'return' || op === 'report')
    return { v: 2, op, agentId, pool, leaseSecret, seq, leaseId: idField(obj, 'leaseId'), tokensLeft, ...calls };
  return {
    v: 2,
    op,
    agentId,
    pool,
    leaseSecret,
    seq,
    leaseId: nullableIdField(obj, 'leaseId'),
    tokensLeft,
    tokensWanted: intField(obj, 'tokensWanted', 0, WIRE_TOKENS_MAX),
    demandPerSecond: numberField(obj, 'demandPerSecond', 0, DEMAND_PER_SECOND_MAX),
    holdMs: intField(obj, 'holdMs', 0, HOLD_MS_MAX),
    ...(obj['agentClass'] === undefined ? {} : { agentClass: idField(obj, 'agentClass') }),
    ...(obj['fleetWeight'] === undefined ? {} : { fleetWeight: intField(obj, 'fleetWeight', 1, FLEET_WEIGHT_MAX) }),
    ...calls,
    ...(obj['clockMs'] === undefined ? {} : { clockMs: intField(obj, 'clockMs', 0, CLOCK_MS_MAX) }),
  };
}

const ERROR_CODES: readonly ErrorCode[] = [
  'bad-request',
  'unsupported-version',
  'unknown-pool',
  'stale-sequence',
  'forbidden',
  'not-owner',
  'unavailable',
  'clock-drift',
  'internal',
];

function readAgentLease(value: unknown): AgentLease | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw new FieldProblem('agentLease', 'must be an object or null');
  const lease = value as Fields;
  return {
    leaseId: idField(lease, 'leaseId'),
    tokensHeld: intField(lease, 'tokensHeld', 0, WIRE_TOKENS_MAX),
    expiresInMs: intField(lease, 'expiresInMs', 0, DURATION_MS_MAX),
  };
}

function readLeaseRate(value: unknown): LeaseRate {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FieldProblem('rate', 'must be an object');
  const rate = value as Fields;
  return {
    tokensPerPeriod: intField(rate, 'tokensPerPeriod', 0, WIRE_TOKENS_MAX),
    periodMs: intField(rate, 'periodMs', 1, DURATION_MS_MAX),
    capTokens: intField(rate, 'capTokens', 0, WIRE_TOKENS_MAX),
  };
}

function readReply(obj: Fields): Reply {
  const kind = oneOf(obj, 'kind', ['grant', 'receipt', 'status', 'error', 'pools', 'reload'] as const);
  const tokens = (field: string): number => intField(obj, field, 0, WIRE_TOKENS_MAX);
  const retryAfterMs = (): number => intField(obj, 'retryAfterMs', 0, DURATION_MS_MAX);
  switch (kind) {
    case 'grant':
      return {
        v: 2,
        kind,
        seq: intField(obj, 'seq', 0, SEQ_MAX),
        leaseId: idField(obj, 'leaseId'),
        tokensGranted: tokens('tokensGranted'),
        tokensHeld: tokens('tokensHeld'),
        ttlMs: intField(obj, 'ttlMs', 1, DURATION_MS_MAX),
        epoch: intField(obj, 'epoch', 0, SEQ_MAX),
        maxLeaseTokens: tokens('maxLeaseTokens'),
        capacityTokens: tokens('capacityTokens'),
        refillTokens: intField(obj, 'refillTokens', 1, WIRE_TOKENS_MAX),
        refillPeriodMs: intField(obj, 'refillPeriodMs', 1, DURATION_MS_MAX),
        retryAfterMs: retryAfterMs(),
        ...(obj['allowanceTokens'] === undefined ? {} : { allowanceTokens: tokens('allowanceTokens') }),
        ...(obj['window'] === undefined ? {} : { window: boolField(obj, 'window') }),
        ...(obj['holdMs'] === undefined ? {} : { holdMs: intField(obj, 'holdMs', 1, DURATION_MS_MAX) }),
        ...(obj['slotsMax'] === undefined ? {} : { slotsMax: tokens('slotsMax') }),
        ...(obj['rate'] === undefined ? {} : { rate: readLeaseRate(obj['rate']) }),
        ...(obj['shadow'] === undefined ? {} : { shadow: boolField(obj, 'shadow') }),
        ...(obj['sig'] === undefined ? {} : { sig: signatureField(obj) }),
      };
    case 'receipt':
      return { v: 2, kind, seq: intField(obj, 'seq', 0, SEQ_MAX), tokensReturned: tokens('tokensReturned') };
    case 'status':
      return {
        v: 2,
        kind,
        pool: poolField(obj),
        epoch: intField(obj, 'epoch', 0, SEQ_MAX),
        capacityTokens: tokens('capacityTokens'),
        levelTokens: tokens('levelTokens'),
        leasedTokens: tokens('leasedTokens'),
        leases: tokens('leases'),
        waiting: tokens('waiting'),
        quietMs: intField(obj, 'quietMs', 0, DURATION_MS_MAX),
        ...(obj['calls'] === undefined ? {} : { calls: readCallCounts(obj, 'calls') }),
        ...(obj['agentLease'] === undefined ? {} : { agentLease: readAgentLease(obj['agentLease']) }),
      };
    case 'error':
      return {
        v: 2,
        kind,
        seq: obj['seq'] === null ? null : intField(obj, 'seq', 0, SEQ_MAX),
        code: oneOf(obj, 'code', ERROR_CODES),
        fault: oneOf(obj, 'fault', ['peer', 'coordinator'] as const),
        message: textField(obj, 'message', MESSAGE_TEXT_LENGTH_MAX),
        retryAfterMs: retryAfterMs(),
        ...(obj['seqFloor'] === undefined ? {} : { seqFloor: intField(obj, 'seqFloor', 0, SEQ_MAX) }),
      };
    case 'pools':
    case 'reload':
      return readOperatorReply(obj, kind);
  }
}

function decodeWith<T>(bytes: Uint8Array, read: (obj: Fields) => T, bytesMax = MESSAGE_BYTES_MAX): Decoded<T> {
  const parsed = parseObject(bytes, bytesMax);
  if (!parsed.ok) return parsed;
  const obj = parsed.value;
  const seq = typeof obj['seq'] === 'number' && Number.isSafeInteger(obj['seq']) && obj['seq'] >= 0 ? obj['seq'] : null;
  if (obj['v'] !== PROTOCOL_VERSION) {
    return fail(
      'unsupported-version',
      `protocol version ${JSON.stringify(obj['v'])} is not supported; this side speaks v${PROTOCOL_VERSION}`,
      seq,
    );
  }
  try {
    return { ok: true, value: read(obj) };
  } catch (error) {
    if (error instanceof FieldProblem) return fail('bad-request', `field "${error.field}" ${error.problem}`, seq);
    throw error;
  }
}

/** decodeRequest — a validated request, or why it is refused. Never throws on input. */
export function decodeRequest(bytes: Uint8Array): Decoded<Request> {
  return decodeWith(bytes, readRequest);
}

/** decodeReply — a validated reply, or why it is unreadable. Never throws on input. */
export function decodeReply(bytes: Uint8Array): Decoded<Reply> {
  return decodeWith(bytes, readReply);
}

/** decodeOperatorReply — `decodeReply` for operators' tools, which read replies up to OPERATOR_REPLY_BYTES_MAX (a page of pools). */
export function decodeOperatorReply(bytes: Uint8Array): Decoded<Reply> {
  return decodeWith(bytes, readReply, OPERATOR_REPLY_BYTES_MAX);
}
