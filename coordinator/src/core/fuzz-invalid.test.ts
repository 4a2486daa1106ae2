/**
 * Fuzzer: no invalid message changes anything. A coordinator with a chunk
 * pool, a rate pool and template pools of both kinds (fuzz.fixtures.ts),
 * already serving honest agents that hold leases and wait in holds, gets,
 * between the honest agents' own requests and ticks, messages that are
 * wrong in every way a client can make them wrong:
 *
 * - arbitrary bytes, and arbitrary JSON, on the subject of any op;
 * - near-valid requests of every op with one field broken: missing, null,
 *   of the wrong type, out of range, negative, fractional, huge, "NaN" and
 *   "Infinity" as strings, 1e400 in the JSON text (Infinity once parsed),
 *   empty, over-long, non-ASCII; a wrong `v`; a duplicated key whose last
 *   value is wrong; with extra keys named `__proto__`, `constructor` and
 *   the other members of Object.prototype;
 * - good payloads on bad subjects: v1 and other versions, wildcards, empty
 *   or over-long tokens, too few or too many tokens, control characters;
 *   on the subject of another op or pool; padded past MESSAGE_BYTES_MAX;
 * - requests refused for what they mean: another secret than the one a
 *   lease is bound to, an agent of another identity (bindIdentity), a
 *   stale sequence, a pool that is not there; and reports that must be
 *   ignored (another secret or lease, an old seq, a bound they do not lower).
 *
 * For each: exactly one typed refusal (`kind: 'error'`, `fault: 'peer'`, a
 * code of the protocol's list that fits the fault, a reply that survives the
 * codec and names no honest agent's secret) — a report at most one — and
 * nothing changes: the status and exact internals of every pool, the pool
 * count and the next deadline are the same before and after, at the same
 * instant, and no pool fault is contained.
 *
 * Replay a failure with `SEED=<n> npx vitest run src/core/fuzz-invalid.test.ts`
 * (the seed is printed); `RUNS=<n>` changes the number of runs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import {
  DEMAND_PER_SECOND_MAX,
  HOLD_MS_MAX,
  ID_LENGTH_MAX,
  LEASE_SECRET_LENGTH_MAX,
  LEASE_SECRET_LENGTH_MIN,
  MESSAGE_BYTES_MAX,
  POOL_NAME_LENGTH_MAX,
  parseSubject,
  SEQ_MAX,
  subjectFor,
  WIRE_TOKENS_MAX,
  decodeRequest,
  type ErrorCode,
  type Request,
} from '@tokenlease/shared';
import { CoordinatorCore } from './coordinator-core.js';
import {
  acquireOf,
  CHUNK_TEMPLATE,
  fuzzConfig,
  giveBackOf,
  heldTargets,
  honestAgents,
  ensure,
  Ledger,
  PREFIX,
  PROTOTYPE_NAMES,
  RUNS,
  QUIET_MS,
  RATE_TEMPLATE,
  secretOf,
  snapshot,
  subjectOf,
  TIME_LIMIT_MS,
  type HonestAgent,
} from './fuzz.fixtures.js';

const OPS = ['acquire', 'return', 'report', 'status'] as const;
type Op = (typeof OPS)[number];

/** Pools the honest agents use (so they exist), and names that are no pool held now. */
const HONEST_POOLS = ['c', 'r', `${CHUNK_TEMPLATE}a`, `${CHUNK_TEMPLATE}__proto__`, `${RATE_TEMPLATE}constructor`];
const ABSENT_POOLS = [`${CHUNK_TEMPLATE}toString`, `${RATE_TEMPLATE}valueOf`, 'zz', 'constructor', CHUNK_TEMPLATE, 'hasOwnProperty'];
const TARGET_POOLS = [...HONEST_POOLS, ...ABSENT_POOLS];

// ---- broken values -------------------------------------------------------------

/** A value written into the JSON text as it is (to say 1e400, which JSON.stringify cannot). */
interface Raw {
  readonly raw: string;
}
const raw = (text: string): Raw => ({ raw: text });
const MISSING = Symbol('missing');
type Bad = unknown;

const WRONG_TYPES: Bad[] = [true, false, null, [], {}, [1], { v: 2 }];
const NOT_FINITE: Bad[] = ['NaN', 'Infinity', '-Infinity', raw('1e400'), raw('-1e400'), raw('1E999')];
const badInt = (max: number): Bad[] => [
  ...WRONG_TYPES,
  ...NOT_FINITE,
  -1,
  -(2 ** 53),
  0.5,
  1.5,
  -0.5,
  max + 1,
  2 ** 53,
  1e300,
  '1',
  '0',
  MISSING,
];
/** Text that JSON escaping makes several times longer, for refusals that quote it (MESSAGE_TEXT_LENGTH_MAX). */
const LONG_ESCAPED = '"\u0001'.repeat(300);
const BAD_DEMAND: Bad[] = [...WRONG_TYPES, ...NOT_FINITE, -1, -1e-300, DEMAND_PER_SECOND_MAX * 1.5, 1e300, '1', MISSING];
const BAD_ID_VALUES: Bad[] = [
  '',
  'x'.repeat(ID_LENGTH_MAX + 1),
  'a b',
  ' a',
  'é',
  '\u0000',
  '\u007f',
  '\t',
  'a\nb',
  '\ud800',
  'ab\u200b',
  5,
  ['a'],
];
const badId = (nullable: boolean, optional: boolean): Bad[] => [
  ...BAD_ID_VALUES,
  ...WRONG_TYPES.filter((v) => !(nullable && v === null)),
  ...(optional ? [] : [MISSING]),
];
const SECRET_BASE = 'A'.repeat(LEASE_SECRET_LENGTH_MIN - 1);
const BAD_SECRET: Bad[] = [
  ...WRONG_TYPES,
  '',
  SECRET_BASE,
  'A'.repeat(LEASE_SECRET_LENGTH_MAX + 1),
  ...['+', '/', '=', '.', ' ', 'é', '\u0000', '*'].map((c) => SECRET_BASE + c),
  5,
  MISSING,
];
const badPool = (pool: string): Bad[] =>
  [
    ...WRONG_TYPES,
    '',
    'x'.repeat(POOL_NAME_LENGTH_MAX + 1),
    'a.b',
    'a*',
    '>',
    'a b',
    'é',
    5,
    MISSING,
    pool === 'c' ? 'r' : 'c',
    'constructor',
    `${pool}x`,
  ].filter((v) => v !== pool);
const badOp = (op: Op): Bad[] => [...WRONG_TYPES, MISSING, 5, op.toUpperCase(), 'steal', '', ` ${op}`, ...OPS.filter((o) => o !== op)];
const BAD_V: Bad[] = [MISSING, null, 1, 3, '2', 2.5, true, [2], {}, -2, 0, 'v2', raw('1e400'), 2 ** 53, LONG_ESCAPED];

/** The fields each op reads, and the values that break each. */
function breakables(op: Op, pool: string): ReadonlyArray<readonly [string, Bad[]]> {
  const head: Array<readonly [string, Bad[]]> = [
    ['v', BAD_V],
    ['op', badOp(op)],
    ['pool', badPool(pool)],
  ];
  if (op === 'status') return [...head, ['agentId', badId(false, true)]];
  const lease: Array<readonly [string, Bad[]]> = [
    ['agentId', badId(false, false)],
    ['leaseSecret', BAD_SECRET],
    ['seq', badInt(SEQ_MAX)],
    ['tokensLeft', badInt(WIRE_TOKENS_MAX)],
  ];
  if (op !== 'acquire') return [...head, ...lease, ['leaseId', badId(false, false)]];
  return [
    ...head,
    ...lease,
    ['leaseId', badId(true, false)],
    ['tokensWanted', badInt(WIRE_TOKENS_MAX)],
    ['demandPerSecond', BAD_DEMAND],
    ['holdMs', badInt(HOLD_MS_MAX)],
    ['agentClass', badId(false, true)],
  ];
}

type Entries = Array<readonly [string, unknown]>;

/** serialize — the JSON text of `entries` in order, duplicates kept, Raw values as written, MISSING left out. */
function serialize(entries: Entries): Uint8Array {
  const parts = entries
    .filter(([, v]) => v !== MISSING)
    .map(([k, v]) => `${JSON.stringify(k)}:${typeof v === 'object' && v !== null && 'raw' in v ? (v as Raw).raw : JSON.stringify(v)}`);
  return new TextEncoder().encode(`{${parts.join(',')}}`);
}

// ---- scenario ----------------------------------------------------------------

const pick = fc.nat(1_000_000);
const targetArb = fc.record({ op: fc.constantFrom(...OPS), pool: fc.nat(TARGET_POOLS.length - 1), agent: fc.nat(3) });
const extrasArb = fc.array(fc.tuple(fc.constantFrom(...PROTOTYPE_NAMES, 'prototype', 'x', 'pad'), fc.jsonValue({ maxDepth: 2 })), {
  maxLength: 3,
});
const dtArb = fc.oneof(
  { weight: 2, arbitrary: fc.constant(0) },
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 20_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 1_000_000 }) },
);

const invalidArb = fc.oneof(
  { weight: 2, arbitrary: fc.record({ k: fc.constant('bytes' as const), target: targetArb, bytes: fc.uint8Array({ maxLength: 64 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('json' as const),
      target: targetArb,
      value: fc.jsonValue({ maxDepth: 3 }),
      // An object that starts like a request: v and op right, the rest arbitrary.
      likeRequest: fc.boolean(),
      fields: fc.dictionary(
        fc.constantFrom('pool', 'agentId', 'leaseSecret', 'seq', 'leaseId', 'tokensLeft', 'tokensWanted', 'holdMs', '__proto__'),
        fc.jsonValue({ maxDepth: 1 }),
      ),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant('field' as const),
      target: targetArb,
      field: pick,
      value: pick,
      extras: extrasArb,
      dup: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('subject' as const),
      target: targetArb,
      which: pick,
      noise: fc.string({ unit: 'binary', maxLength: 40 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('mismatch' as const), target: targetArb, which: pick }) },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('oversize' as const),
      target: targetArb,
      padBytes: fc.integer({ min: 1, max: 8_000 }),
      wide: fc.boolean(),
    }),
  },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('semantic' as const), target: targetArb, which: pick, seqPick: pick }) },
);

const stepArb = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('honest' as const),
      agent: fc.nat(100),
      action: fc.constantFrom('acquire', 'acquire', 'acquire', 'return', 'report'),
      dtUs: dtArb,
      tokensLeft: fc.nat(25),
      tokensWanted: fc.nat(25),
      holdMs: fc.constantFrom(0, 50, 150, 300),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('tick' as const), dtUs: dtArb }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('invalid' as const), dtUs: fc.oneof(fc.constant(0), dtArb), msg: invalidArb }) },
);

const scenarioArb = fc.record({
  bindIdentity: fc.boolean(),
  allowance: fc.constantFrom(0, 0, 7),
  startUs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1e12 })),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 150, size: 'max' }),
});

type Invalid = ReturnType<typeof invalidArb.generate>['value'];
type Step = ReturnType<typeof stepArb.generate>['value'];
type Target = Invalid['target'];

/** A message to send and what must come of it. */
interface Case {
  readonly subject: string;
  readonly payload: Uint8Array;
  readonly codes: readonly ErrorCode[];
  /** Whether no reply at all is right (a report the pool ignores). */
  readonly silentOk: boolean;
}

const SYNTAX: readonly ErrorCode[] = ['bad-request', 'unsupported-version'];
const choose = <T>(items: readonly T[], n: number): T => {
  const item = items[n % items.length];
  if (item === undefined) throw new Error('nothing to choose from');
  return item;
};

// ---- the simulation ----------------------------------------------------------

class Simulation {
  readonly core: CoordinatorCore<number>;
  readonly agents: HonestAgent[];
  readonly ledger = new Ledger();
  /** Honest requests by ledger id: whose, and its seq. */
  readonly honest = new Map<number, { readonly agent: HonestAgent; readonly seq: number }>();
  readonly names = new Set<string>([...TARGET_POOLS]);
  /** What the run sent, by kind and outcome, summed and printed so that a vacuous fuzzer shows. */
  readonly counts: Record<string, number> = { sent: 0, ignored: 0, whileHeld: 0, whileLeased: 0, skipped: 0 };
  nowUs: number;

  constructor(readonly sc: { readonly bindIdentity: boolean; readonly allowance: number; readonly startUs: number }) {
    this.core = new CoordinatorCore<number>(fuzzConfig(sc.bindIdentity, sc.allowance), 9, sc.startUs);
    this.agents = honestAgents(HONEST_POOLS, 3, [undefined, 'gold', 'toString', '__proto__', 'constructor']);
    this.nowUs = sc.startUs;
  }

  /** warmUp — past the quiet period, every honest agent takes a lease, and some of them wait. */
  warmUp(): void {
    this.nowUs += QUIET_MS * 1000 + 20_000;
    for (const a of this.agents) this.sendHonest(a, acquireOf(a, 0, 20, 150));
    for (const a of this.agents) if (a.leaseId !== null) this.sendHonest(a, acquireOf(a, 0, 20, 150));
  }

  sendHonest(a: HonestAgent, req: Request): void {
    const s = this.ledger.open(req.op);
    if ('seq' in req) this.honest.set(s.id, { agent: a, seq: req.seq });
    if (req.op === 'return') a.leaseId = null;
    this.deliver(this.core.receive(subjectOf(req, a.identity), new TextEncoder().encode(JSON.stringify(req)), s.id, this.nowUs));
  }

  deliver(out: ReturnType<CoordinatorCore<number>['tick']>): void {
    this.ledger.deliver(out);
    for (const d of out) {
      const h = this.honest.get(d.to);
      if (h !== undefined && d.reply.kind === 'grant' && h.seq === h.agent.seq) h.agent.leaseId = d.reply.leaseId;
    }
  }

  /** agentOn — an honest agent of `pool`, one whose lease holds tokens when there is one: the request would change most. */
  agentOn(pool: string, n: number): HonestAgent | undefined {
    const mine = this.agents.filter((a) => a.pool === pool);
    const holding = mine.filter((a) => (this.core.pool(pool)?.leases.get(a.agentId)?.boundTokens ?? 0) > 0);
    return holding.length > 0 ? choose(holding, n) : mine.length > 0 ? choose(mine, n) : undefined;
  }

  step(step: Step): void {
    this.nowUs += step.dtUs;
    if (step.t === 'tick') this.deliver(this.core.tick(this.nowUs));
    else if (step.t === 'honest') this.honestStep(step);
    else this.invalid(step.msg);
    const faults = this.core.takeFaults();
    if (faults.length > 0) expect(faults).toEqual([]);
    this.ledger.expectAnsweredOrHeld(heldTargets(this.core, this.names));
  }

  honestStep(step: Extract<Step, { t: 'honest' }>): void {
    const a = choose(this.agents, step.agent);
    if (step.action === 'acquire' || a.leaseId === null) this.sendHonest(a, acquireOf(a, step.tokensLeft, step.tokensWanted, step.holdMs));
    else this.sendHonest(a, giveBackOf(a, step.action, step.tokensLeft));
  }

  /** invalid — sends one bad message at a settled instant; one typed refusal (a report: at most one), and nothing changes. */
  invalid(msg: Invalid): void {
    this.deliver(this.core.tick(this.nowUs));
    const c = this.caseOf(msg);
    if (c === null) {
      this.counts['skipped'] = (this.counts['skipped'] ?? 0) + 1;
      return;
    }
    const before = snapshot(this.core, this.names, this.nowUs);
    const held = heldTargets(this.core, this.names).size > 0;
    const subjectOp = parseSubject(PREFIX, c.subject)?.op ?? null;
    const s = this.ledger.open(subjectOp);
    const out = this.core.receive(c.subject, c.payload, s.id, this.nowUs);
    const what = (): string =>
      `${msg.k} message on ${JSON.stringify(c.subject.slice(0, 80))}: ${new TextDecoder().decode(c.payload).slice(0, 300)}`;
    ensure(out.length <= 1, () => `${what()} got ${JSON.stringify(out)}`);
    ensure(out.length === 1 || c.silentOk || subjectOp === 'report', () => `${what()} got no reply`);
    this.ledger.deliver(out);
    for (const { to, reply } of out) {
      ensure(to === s.id, () => `${what()} answered request ${to}`);
      const code = reply.kind === 'error' && reply.fault === 'peer' ? reply.code : null;
      ensure(
        code !== null && c.codes.includes(code),
        () => `${what()}: got ${JSON.stringify(reply)}; want a peer error of ${c.codes.join(', ')}`,
      );
      const text = JSON.stringify(reply);
      ensure(!this.agents.some((a) => text.includes(a.secret)), () => `${what()}: the refusal shows a lease secret`);
    }
    const after = snapshot(this.core, this.names, this.nowUs);
    if (after !== before) expect(after, `${what()} changed the coordinator`).toBe(before);
    const faults = this.core.takeFaults();
    if (faults.length > 0) expect(faults, what()).toEqual([]);
    const first = out[0]?.reply;
    this.count(first?.kind === 'error' ? first.code : 'ignored', msg.k, held);
  }

  count(outcome: string, kind: string, held: boolean): void {
    const c = this.counts;
    c['sent'] = (c['sent'] ?? 0) + 1;
    c[outcome] = (c[outcome] ?? 0) + 1;
    c[kind] = (c[kind] ?? 0) + 1;
    if (held) c['whileHeld'] = (c['whileHeld'] ?? 0) + 1;
    const leased = [...this.names].some((n) => (this.core.pool(n)?.leases.size ?? 0) > 0);
    if (leased) c['whileLeased'] = (c['whileLeased'] ?? 0) + 1;
  }

  // -- the messages ------------------------------------------------------------

  /** base — a well-formed request of the target's op that would change its pool if it were let through. */
  base(t: Target): {
    readonly entries: Entries;
    readonly identity: string;
    readonly pool: string;
    readonly agent: HonestAgent | undefined;
  } {
    const pool = choose(TARGET_POOLS, t.pool);
    const a = this.agentOn(pool, t.agent);
    const agentId = a?.agentId ?? 'stranger';
    const identity = a?.identity ?? 'stranger';
    const lease: Entries = [
      ['agentId', agentId],
      ['leaseSecret', a?.secret ?? secretOf('stranger')],
      ['seq', (a?.seq ?? 0) + 1],
    ];
    const head: Entries = [
      ['v', 2],
      ['op', t.op],
      ['pool', pool],
    ];
    let entries: Entries;
    if (t.op === 'status') entries = [...head, ['agentId', agentId]];
    else if (t.op === 'acquire') {
      entries = [
        ...head,
        ...lease,
        ['leaseId', a?.leaseId ?? null],
        ['tokensLeft', 0],
        ['tokensWanted', 12],
        ['demandPerSecond', 10],
        ['holdMs', 0],
        ['agentClass', 'gold'],
      ];
    } else entries = [...head, ...lease, ['leaseId', a?.leaseId ?? 'zz-1'], ['tokensLeft', 0]];
    return { entries, identity, pool, agent: a };
  }

  caseOf(msg: Invalid): Case | null {
    const b = this.base(msg.target);
    const subject = subjectFor(PREFIX, msg.target.op, b.pool, b.identity);
    switch (msg.k) {
      case 'bytes':
        return { subject, payload: msg.bytes, codes: SYNTAX, silentOk: false };
      case 'json': {
        const value = msg.likeRequest ? { v: 2, op: msg.target.op, ...msg.fields } : msg.value;
        const payload = new TextEncoder().encode(JSON.stringify(value));
        // Arbitrary JSON is all but never a valid request; when it is one, it is not this fuzzer's business.
        return decodeRequest(payload).ok ? null : { subject, payload, codes: SYNTAX, silentOk: false };
      }
      case 'field':
        return this.brokenField(msg, b.entries, b.pool, subject);
      case 'subject':
        return this.badSubject(msg, b, serialize(b.entries));
      case 'mismatch': {
        // The payload of one op or pool on the subject of another.
        const op =
          msg.which % 2 === 0
            ? choose(
                OPS.filter((o) => o !== msg.target.op),
                msg.which >> 1,
              )
            : msg.target.op;
        const pool =
          msg.which % 2 === 0
            ? b.pool
            : choose(
                TARGET_POOLS.filter((p) => p !== b.pool),
                msg.which >> 1,
              );
        return {
          subject: subjectFor(PREFIX, op, pool, b.identity),
          payload: serialize(b.entries),
          codes: ['bad-request'],
          silentOk: false,
        };
      }
      case 'oversize': {
        const bodyBytes = serialize(b.entries).byteLength;
        // Padded just past the limit or far past it; 'é' is two bytes, so a wide pad is under the limit in characters.
        const padBytes = MESSAGE_BYTES_MAX - bodyBytes + msg.padBytes;
        const pad = msg.wide ? 'é'.repeat(Math.ceil(padBytes / 2)) : 'x'.repeat(padBytes);
        return { subject, payload: serialize([...b.entries, ['pad', pad]]), codes: ['bad-request'], silentOk: false };
      }
      case 'semantic':
        return this.semantic(msg);
    }
  }

  brokenField(msg: Extract<Invalid, { k: 'field' }>, entries: Entries, pool: string, subject: string): Case {
    const [field, values] = choose(breakables(msg.target.op, pool), msg.field);
    const bad = choose(values, msg.value);
    const extras = msg.extras.filter(([k]) => !entries.some(([f]) => f === k));
    // Either the field replaced in place, or the good value first and the bad one after it (JSON.parse keeps the last).
    const broken: Entries =
      msg.dup && bad !== MISSING
        ? [...entries, [field, bad]]
        : entries.filter(([k]) => k !== field || bad !== MISSING).map(([k, v]) => (k === field ? [k, bad] : [k, v]));
    if (!entries.some(([k]) => k === field)) broken.push([field, bad]);
    const payload = serialize([...extras.slice(0, 1), ...broken, ...extras.slice(1)]);
    return { subject, payload, codes: field === 'v' ? ['unsupported-version'] : ['bad-request'], silentOk: false };
  }

  badSubject(msg: Extract<Invalid, { k: 'subject' }>, b: ReturnType<Simulation['base']>, payload: Uint8Array): Case | null {
    const op = msg.target.op;
    const { pool, identity: id } = b;
    const v2 = `${PREFIX}.v2`;
    const cases: ReadonlyArray<readonly [string, ErrorCode]> = [
      [`${PREFIX}.v1.${op}.${pool}`, 'unsupported-version'],
      [`${PREFIX}.v1.${op}.${pool}.${id}`, 'unsupported-version'],
      [`${PREFIX}.v3.${op}.${pool}.${id}`, 'unsupported-version'],
      [`${PREFIX}.v999999.${op}.${pool}.${id}`, 'unsupported-version'],
      [`${PREFIX}.v1`, 'unsupported-version'],
      [`${PREFIX}.v1.${msg.noise}`, 'unsupported-version'],
      [`${PREFIX}.v0.${op}.${pool}.${id}`, 'bad-request'],
      [`${PREFIX}.v02.${op}.${pool}.${id}`, 'bad-request'],
      [`${PREFIX}.v1000000.${op}.${pool}.${id}`, 'bad-request'],
      [`${v2}.*.${pool}.${id}`, 'bad-request'],
      [`${v2}.${op}.*.${id}`, 'bad-request'],
      [`${v2}.${op}.${pool}.*`, 'bad-request'],
      [`${v2}.${op}.${pool}.>`, 'bad-request'],
      [`${v2}.${op}.>`, 'bad-request'],
      [`${v2}.>`, 'bad-request'],
      [`${PREFIX}.>`, 'bad-request'],
      ['>', 'bad-request'],
      [`${v2}.${op}.${pool}`, 'bad-request'],
      [`${v2}.${op}.${pool}.${id}.x`, 'bad-request'],
      [`${v2}.${op}..${id}`, 'bad-request'],
      [`${v2}.${op}.${pool}.`, 'bad-request'],
      [`${v2}..${pool}.${id}`, 'bad-request'],
      [`.${v2}.${op}.${pool}.${id}`, 'bad-request'],
      [`${PREFIX}..v2.${op}.${pool}.${id}`, 'bad-request'],
      [`TOKENLEASE.v2.${op}.${pool}.${id}`, 'bad-request'],
      [`${PREFIX}.V2.${op}.${pool}.${id}`, 'bad-request'],
      [`${v2}.${op.toUpperCase()}.${pool}.${id}`, 'bad-request'],
      [`${v2}.steal.${pool}.${id}`, 'bad-request'],
      [`${v2}.${op}.${'x'.repeat(POOL_NAME_LENGTH_MAX + 1)}.${id}`, 'bad-request'],
      [`${v2}.${op}.${pool}.${'i'.repeat(POOL_NAME_LENGTH_MAX + 1)}`, 'bad-request'],
      [`${v2}.${op}.${pool}.${id} `, 'bad-request'],
      [`${v2}.${op}.${pool}.a b`, 'bad-request'],
      [`${v2}.${op}.${pool}é.${id}`, 'bad-request'],
      [`${v2}.${op}.${pool}.\u0000`, 'bad-request'],
      [`${v2}.${op}.${'"'.repeat(POOL_NAME_LENGTH_MAX + 1)}.${id}`, 'bad-request'],
      [`${v2}.${op}.${pool}.${LONG_ESCAPED}`, 'bad-request'],
      ['', 'bad-request'],
      [' ', 'bad-request'],
      [PREFIX, 'bad-request'],
      [`other.v2.${op}.${pool}.${id}`, 'bad-request'],
      [`${v2}.${msg.noise}`, 'bad-request'],
      [msg.noise, 'bad-request'],
    ];
    const [subject, code] = choose(cases, msg.which);
    // Noise may spell a valid subject, or another version's; such a subject is not this case.
    if (parseSubject(PREFIX, subject) !== null) return null;
    const codes: readonly ErrorCode[] = subject === msg.noise ? SYNTAX : [code];
    return { subject, payload, codes, silentOk: false };
  }

  /** semantic — a well-formed request refused (or, a report, ignored) for what it means. */
  semantic(msg: Extract<Invalid, { k: 'semantic' }>): Case | null {
    const op = msg.target.op === 'status' ? 'acquire' : msg.target.op;
    const b = this.base({ ...msg.target, op });
    const a = b.agent;
    const record = a === undefined ? undefined : this.core.pool(a.pool)?.leases.get(a.agentId);
    const changed = (changes: Entries): Uint8Array => {
      const byKey = new Map(changes);
      return serialize(b.entries.map(([k, v]) => [k, byKey.has(k) ? byKey.get(k) : v]));
    };
    const on = (pool: string, identity = b.identity): string => subjectFor(PREFIX, op, pool, identity);
    // Another secret and a stale seq twice as often as the rest: those refusals guard every lease.
    switch (msg.which % 7) {
      case 0:
      case 5: {
        // Another secret than the one the lease is bound to: refused, and a report ignored.
        if (record === undefined) return null;
        const secret = secretOf(
          `thief ${msg.seqPick}`,
          LEASE_SECRET_LENGTH_MIN + (msg.seqPick % (LEASE_SECRET_LENGTH_MAX - LEASE_SECRET_LENGTH_MIN + 1)),
        );
        // Naming the lease and a newer seq: with the right secret, a renewal, a return or a lower bound.
        const payload = changed([
          ['leaseSecret', secret],
          ['seq', record.lastSeq + 1 + (msg.seqPick % 3)],
          ['leaseId', record.leaseId],
        ]);
        return { subject: on(b.pool), payload, codes: ['forbidden'], silentOk: op === 'report' };
      }
      case 1: {
        // An agent of another identity, when identities are bound.
        if (!this.sc.bindIdentity) return null;
        const identity = choose(['anon', ...PROTOTYPE_NAMES, 'h0-0', `${b.identity}x`], msg.seqPick);
        if (identity === b.identity || b.identity.startsWith(`${identity}.`)) return null;
        return { subject: on(b.pool, identity), payload: changed([]), codes: ['forbidden'], silentOk: false };
      }
      case 2:
      case 6: {
        // A sequence the pool has already handled: an acquire is refused, a report ignored.
        if (record === undefined || record.lastSeq === 0 || op === 'return') return null;
        const seq = op === 'report' ? msg.seqPick % (record.lastSeq + 1) : msg.seqPick % record.lastSeq;
        const payload = changed([
          ['seq', seq],
          ['leaseId', op === 'report' ? record.leaseId : (a?.leaseId ?? null)],
        ]);
        return { subject: on(b.pool), payload, codes: ['stale-sequence'], silentOk: op === 'report' };
      }
      case 3: {
        // A pool that is not there: any op on a name no template matches; anything but an acquire on a template pool not made.
        const absent = ABSENT_POOLS.filter((p) => this.core.pool(p) === undefined && (op !== 'acquire' || this.core.kindOf(p) === null));
        const pool = choose(absent, msg.seqPick);
        if (msg.target.op !== 'status')
          return { subject: on(pool), payload: changed([['pool', pool]]), codes: ['unknown-pool'], silentOk: false };
        const payload = serialize([
          ['v', 2],
          ['op', 'status'],
          ['pool', pool],
        ]);
        return { subject: subjectFor(PREFIX, 'status', pool, b.identity), payload, codes: ['unknown-pool'], silentOk: false };
      }
      default: {
        // A report the pool must ignore: of another lease, or of a bound it does not lower.
        if (record === undefined || a === undefined) return null;
        const r = this.base({ ...msg.target, op: 'report' });
        const tokensLeft = msg.seqPick % 2 === 0 ? 0 : record.boundTokens + (msg.seqPick % 3);
        const leaseId = msg.seqPick % 2 === 0 ? `${record.leaseId}x` : record.leaseId;
        const byKey = new Map<string, unknown>([
          ['leaseId', leaseId],
          ['tokensLeft', tokensLeft],
        ]);
        const payload = serialize(r.entries.map(([k, v]) => [k, byKey.has(k) ? byKey.get(k) : v]));
        return { subject: subjectFor(PREFIX, 'report', b.pool, b.identity), payload, codes: [], silentOk: true };
      }
    }
  }

  run(steps: readonly Step[]): void {
    this.warmUp();
    for (const step of steps) this.step(step);
    this.nowUs += 1;
    this.deliver(this.core.flush(this.nowUs));
    this.ledger.expectAnsweredOrHeld(new Set());
  }
}

describe('CoordinatorCore under invalid messages (fuzz)', () => {
  it('refuses every invalid message once, with a typed peer error, and changes nothing', { timeout: 2 * TIME_LIMIT_MS }, () => {
    const seed = propertySeed('src/core/fuzz-invalid.test.ts');
    let runs = 0;
    const total: Record<string, number> = {};
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        runs += 1;
        const sim = new Simulation(sc);
        sim.run(sc.steps);
        for (const [k, v] of Object.entries(sim.counts)) total[k] = (total[k] ?? 0) + v;
      }),
      // Past TIME_LIMIT_MS a failure stops shrinking and reports the smallest counterexample so far.
      { seed, numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS },
    );
    console.log(`fuzz-invalid: ${runs} runs; ${JSON.stringify(total)}`);
    const exercised = ['whileHeld', 'ignored', 'bad-request', 'unsupported-version', 'forbidden', 'stale-sequence', 'unknown-pool'];
    for (const key of exercised) expect(total[key], key).toBeGreaterThan(0);
  });
});
