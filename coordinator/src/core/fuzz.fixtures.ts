/**
 * Fixtures of the two fuzzers (fuzz-invalid.test.ts, fuzz-extreme.test.ts):
 * one coordinator with a chunk pool "c", a rate pool "r" and two templates,
 * "tenant:*" (chunk) and "rt:*" (rate), all with class weights that name
 * Object.prototype members; the honest agents' requests; the one-reply
 * ledger; and the snapshot that "nothing changed" compares.
 *
 * Instants are in µs. The coordinator starts at `startUs` with a quiet
 * period of QUIET_MS, so every pool is empty until then.
 */
import { expect } from 'vitest';
import {
  decodeReply,
  encodeMessage,
  subjectFor,
  type LeaseReport,
  type LeaseRequest,
  type LeaseReturn,
  type Reply,
  type Request,
} from '@tokenlease/shared';
import { parseCoordinatorConfig, type CoordinatorConfig } from './config.js';
import type { CoordinatorCore } from './coordinator-core.js';
import type { Delivery } from './pool.js';
import { internals } from './pool.fixtures.js';

/** RUNS — fast-check runs per fuzzer property (`$RUNS` to change it). */
export const RUNS = Number(process.env['RUNS'] ?? '60');
/** TIME_LIMIT_MS — how long fast-check may run and shrink in all, ms; a passing run takes a few seconds. */
export const TIME_LIMIT_MS = 60_000;

export const PREFIX = 'tokenlease';
/** QUIET_MS — the coordinator's quiet period (the longest TTL). */
export const QUIET_MS = 400;
/** The names every string field is tried with: members of Object.prototype. */
export const PROTOTYPE_NAMES = [
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
  'propertyIsEnumerable',
] as const;
export const FIXED_POOLS = ['c', 'r'] as const;
export const CHUNK_TEMPLATE = 'tenant:';
export const RATE_TEMPLATE = 'rt:';

/**
 * Class weights as a configuration file gives them: "toString" and
 * "__proto__" are real classes here (own keys, as JSON.parse makes them),
 * so a lookup that reaches Object.prototype gets them wrong both ways.
 */
const CLASS_WEIGHTS: unknown = JSON.parse('{"gold": 3, "toString": 2, "__proto__": 4}');

/** fuzzConfig — the fuzzers' coordinator: pools c (chunk) and r (rate), templates tenant:* (chunk) and rt:* (rate). */
export function fuzzConfig(bindIdentity: boolean, allowance: number): CoordinatorConfig {
  const chunk = { capacity: 60, refill: '200/s', leaseTtlMs: 400, maxLeaseTokens: 20, minGrantTokens: 5, maxHoldMs: 150 };
  return parseCoordinatorConfig('fuzz.yaml', {
    bindIdentity,
    quietPeriodMs: QUIET_MS,
    pools: {
      c: { ...chunk, allowance, classWeights: CLASS_WEIGHTS, maxWaiting: 6 },
      r: { capacity: 60, refill: '200/s', leaseTtlMs: 400, maxLeaseTokens: 20, leaseMode: 'rate', allowance, classWeights: CLASS_WEIGHTS },
    },
    templates: {
      [`${CHUNK_TEMPLATE}*`]: {
        capacity: 30,
        refill: '100/s',
        leaseTtlMs: 300,
        maxLeaseTokens: 12,
        minGrantTokens: 4,
        maxHoldMs: 100,
        allowance,
        classWeights: CLASS_WEIGHTS,
        maxLeases: 8,
        idleEvictMs: 600,
        maxPools: 6,
      },
      [`${RATE_TEMPLATE}*`]: {
        capacity: 40,
        refill: '90/s',
        leaseTtlMs: 300,
        maxLeaseTokens: 15,
        leaseMode: 'rate',
        classWeights: CLASS_WEIGHTS,
        idleEvictMs: 300,
        maxPools: 3,
      },
    },
  });
}

/** secretOf — a well-formed lease secret (base64url, 22 to 128 characters) made from `seed`. */
export function secretOf(seed: string, length = 24): string {
  let hash = 2166136261;
  for (let i = 0; i < seed.length; i += 1) hash = Math.imul(hash ^ seed.charCodeAt(i), 16777619) >>> 0;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let out = '';
  for (let i = 0; i < length; i += 1) {
    hash = Math.imul(hash ^ (hash >>> 13), 1597334677) >>> 0;
    out += alphabet[hash % 64] ?? 'A';
  }
  return out;
}

// ---- honest agents -----------------------------------------------------------

/** HonestAgent — an agent that follows the protocol: its own secret, rising seqs, the lease it was granted. */
export interface HonestAgent {
  readonly pool: string;
  readonly identity: string;
  readonly agentId: string;
  readonly secret: string;
  readonly agentClass: string | undefined;
  seq: number;
  leaseId: string | null;
}

/** honestAgents — `perPool` agents on each of `pools`; under bindIdentity their ids are their identity or `<identity>.w`. */
export function honestAgents(pools: readonly string[], perPool: number, classes: readonly (string | undefined)[]): HonestAgent[] {
  const agents: HonestAgent[] = [];
  pools.forEach((pool, p) => {
    for (let i = 0; i < perPool; i += 1) {
      const identity = `h${p}-${i}`;
      agents.push({
        pool,
        identity,
        agentId: i % 2 === 0 ? identity : `${identity}.w`,
        secret: secretOf(`honest ${pool} ${i}`),
        agentClass: classes[(p + i) % classes.length],
        seq: 0,
        leaseId: null,
      });
    }
  });
  return agents;
}

/** acquireOf — the next acquire of `a` (its seq raised), naming its lease. */
export function acquireOf(a: HonestAgent, tokensLeft: number, tokensWanted: number, holdMs: number, demandPerSecond = 50): LeaseRequest {
  a.seq += 1;
  return {
    v: 2,
    op: 'acquire',
    leaseSecret: a.secret,
    agentId: a.agentId,
    pool: a.pool,
    seq: a.seq,
    leaseId: a.leaseId,
    tokensLeft,
    tokensWanted,
    demandPerSecond,
    holdMs,
    ...(a.agentClass === undefined ? {} : { agentClass: a.agentClass }),
  };
}

/** giveBackOf — the next return (or report) of `a`'s lease, which it must hold; `tokensLeft` is what it says is left. */
export function giveBackOf(a: HonestAgent, op: 'return' | 'report', tokensLeft: number): LeaseReturn | LeaseReport {
  if (a.leaseId === null) throw new Error(`${a.agentId} holds no lease to ${op}`);
  a.seq += 1;
  return { v: 2, op, leaseSecret: a.secret, agentId: a.agentId, pool: a.pool, seq: a.seq, leaseId: a.leaseId, tokensLeft };
}

/** subjectOf — the subject `req` goes on from `identity`. */
export const subjectOf = (req: Request, identity: string): string => subjectFor(PREFIX, req.op, req.pool, identity);

// ---- the one-reply ledger ----------------------------------------------------

/** Sent — one request the core received, and what it got. */
export interface Sent {
  readonly id: number;
  /** The op its subject names, or null for a subject that names none. */
  readonly op: Request['op'] | null;
  readonly replies: Reply[];
  /** The request that took over this held one's reply target (a retry of the same seq), if any. */
  supersededBy: number | null;
}

/** Ledger — every request sent, so that each is answered once (a report: never, or with one refusal). */
export class Ledger {
  readonly sent: Sent[] = [];
  /** Requests that have no reply yet (reports are never waited for). */
  private readonly unanswered = new Set<Sent>();

  open(op: Sent['op']): Sent {
    const s: Sent = { id: this.sent.length, op, replies: [], supersededBy: null };
    this.sent.push(s);
    if (op !== 'report') this.unanswered.add(s);
    return s;
  }

  /** deliver — records deliveries; each is well-formed, not `internal`, and the first and only reply of its request. */
  deliver(deliveries: readonly Delivery<number>[]): void {
    for (const d of deliveries) {
      const s = this.sent[d.to];
      if (s === undefined) throw new Error(`a delivery to request ${d.to}, which was never sent`);
      s.replies.push(d.reply);
      this.unanswered.delete(s);
      ensure(s.replies.length === 1, () => `request ${s.id} (${s.op}) got a second reply: ${JSON.stringify(d.reply)}`);
      expectWellFormed(d.reply);
      ensure(s.op !== 'report' || d.reply.kind === 'error', () => `a report got an answer: ${JSON.stringify(d.reply)}`);
    }
  }

  /** expectAnsweredOrHeld — every request has its one reply, is held in `held`, was superseded by a retry, or is a report. */
  expectAnsweredOrHeld(held: ReadonlySet<number>): void {
    for (const s of this.unanswered) {
      ensure(s.supersededBy !== null || held.has(s.id), () => `request ${s.id} (${s.op}) got no reply and is not held`);
    }
  }
}

/** expectWellFormed — a reply survives the codec unchanged and is not an `internal` refusal. */
export function expectWellFormed(reply: Reply): void {
  const decoded = decodeReply(encodeMessage(reply));
  if (!decoded.ok || JSON.stringify(decoded.value) !== JSON.stringify(reply)) {
    // The codec writes fields in its own order: only a real difference fails.
    expect(decoded, `a reply the codec refuses: ${JSON.stringify(reply).slice(0, 600)}`).toEqual({ ok: true, value: reply });
  }
  ensure(!(reply.kind === 'error' && reply.code === 'internal'), () => `an internal refusal: ${JSON.stringify(reply)}`);
}

/** ensure — fails the test with `message()` unless `ok`: the fuzzers' hot loops check this way, as expect() costs far more. */
export function ensure(ok: boolean, message: () => string): void {
  if (!ok) throw new Error(message());
}

/** heldTargets — the reply targets of every held request in the pools named. */
export function heldTargets(core: CoordinatorCore<number>, names: Iterable<string>): Set<number> {
  const held = new Set<number>();
  for (const name of names) for (const w of core.pool(name)?.heldRequests() ?? []) held.add(w.to);
  return held;
}

/**
 * snapshot — every pool's state at `nowUs` as a string: its status (level,
 * leased, leases, waiting) and its exact internals, with the pool count and
 * the next deadline. Reading it must deliver nothing: the caller settles
 * the clock first with a tick at `nowUs`.
 */
export function snapshot(core: CoordinatorCore<number>, names: Iterable<string>, nowUs: number): string {
  const pools: unknown[] = [];
  for (const name of new Set(names)) {
    const pool = core.pool(name);
    if (pool === undefined) continue;
    const out: Delivery<number>[] = [];
    const s = pool.status(nowUs, out);
    ensure(out.length === 0, () => `reading the status of ${name} answered requests: the clock was not settled`);
    pools.push([name, s.levelTokens, s.leasedTokens, s.leases, s.waiting, internals(pool)]);
  }
  return JSON.stringify({ poolCount: core.poolCount, deadlineUs: core.nextDeadlineUs(), pools });
}
