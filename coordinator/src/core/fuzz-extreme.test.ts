/**
 * Fuzzer: valid but extreme messages cannot crash, cheat or starve the
 * coordinator. The coordinator of fuzz.fixtures.ts (chunk pool "c", rate
 * pool "r", templates "tenant:*" and "rt:*") serves honest agents, which
 * renew, return, report and spend exactly what their grants allow, while
 * hostile clients send well-formed requests of every op with:
 *
 * - extreme numbers within the wire limits: 0, 1, 2^52, MAX_SAFE_INTEGER
 *   and its neighbours as seqs, HOLD_MS_MAX, DEMAND_PER_SECOND_MAX, the
 *   smallest positive demand, tokens of 0, 1 and WIRE_TOKENS_MAX;
 * - Object.prototype members (`constructor`, `__proto__`, `toString`, …)
 *   in every string field: agent id, agent class, pool names (through the
 *   templates, as `tenant:constructor`), identity tokens, lease ids; extra
 *   JSON keys named `__proto__` and `constructor`; names of 128 characters;
 * - secrets right (their own) and wrong, honest agents' ids and lease ids
 *   (an impersonator names an honest agent's pool, identity, lease and
 *   next seq, all but its secret), byte-for-byte retries, held ones too;
 * - floods of up to 80 new agents at one instant, each asking for all it
 *   may hold (past EXACT_LEASES_MAX leases, a rate pool's shares come from
 *   its water level);
 *
 * from a few hostile personas per run, interleaved at random with the
 * honest agents (modest, or greedy: asking for everything and spending it
 * at once, so that windows fill to the envelope), with time advancing by
 * random steps, ticks at random instants and at every deadline, and jumps
 * of hours. After every step:
 *
 * - no pool fault; no reply is `internal`; every reply survives the codec
 *   and fits its request and pool (seq, lease limit, TTL, refill; a
 *   receipt of no more than was left; an honest agent gets no more than
 *   it asked for and keeps no more than it reported);
 * - every pool held (configured, or made from a template) keeps
 *   level + leased ≤ capacity + allowance (its status at that instant, and
 *   exactly, in units), and its caps: maxLeases, maxWaiting, and per
 *   template maxPools; each identity its shares, maxLeasesPerIdentity and
 *   maxWaitingPerIdentity, counted as its records say;
 * - every request has had exactly one reply or is still held (a report:
 *   none, or one refusal); a retry of a held request takes its reply over;
 * - agent safety: what an honest agent may still spend is inside the live
 *   lease the coordinator holds for it under its secret, which lasts at
 *   least as long;
 * - the honest agents' spending stays within B + A + r·T in every window
 *   [tᵢ, tⱼ] between spend instants, exactly (EnvelopeWatch, and
 *   checkEnvelope over the whole log at the end). Hostile leases are not
 *   spent by anyone real, but they count against the pool's credit.
 *
 * After each run, flush answers every held request, and each pool still
 * serves: a new agent's acquire gets a grant or a typed refusal.
 *
 * Replay a failure with `SEED=<n> npx vitest run src/core/fuzz-extreme.test.ts`
 * (the seed is printed); `RUNS=<n>` changes the number of runs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { acquireRequest, checkEnvelope, EnvelopeWatch, propertySeed, worstWindowRatio, type Admission } from '@tokenlease/shared/testing';
import {
  DEMAND_PER_SECOND_MAX,
  HOLD_MS_MAX,
  ID_LENGTH_MAX,
  POOL_NAME_LENGTH_MAX,
  SEQ_MAX,
  subjectFor,
  WIRE_TOKENS_MAX,
  type LeaseGrant,
  type Reply,
  type Request,
} from '@tokenlease/shared';
import type { PoolConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import type { Delivery, Pool } from './pool.js';
import {
  acquireOf,
  CHUNK_TEMPLATE,
  FIXED_POOLS,
  fuzzConfig,
  giveBackOf,
  heldTargets,
  honestAgents,
  ensure,
  Ledger,
  PREFIX,
  PROTOTYPE_NAMES,
  RUNS,
  RATE_TEMPLATE,
  secretOf,
  subjectOf,
  TIME_LIMIT_MS,
  type HonestAgent,
} from './fuzz.fixtures.js';
import { internalsOf, tickThroughDeadlines } from './pool.fixtures.js';

const US_PER_MS = 1000;

const HONEST_POOLS = ['c', 'r', `${CHUNK_TEMPLATE}a`, `${CHUNK_TEMPLATE}constructor`, `${RATE_TEMPLATE}__proto__`];
const LONG = 'L'.repeat(ID_LENGTH_MAX);
/** Pools hostile requests name: the honest ones; a template pool per Object.prototype member; such members bare (no pool); one of 128 characters. */
const HOSTILE_POOLS = {
  honest: HONEST_POOLS,
  template: [...PROTOTYPE_NAMES.map((n) => `${CHUNK_TEMPLATE}${n}`), ...PROTOTYPE_NAMES.map((n) => `${RATE_TEMPLATE}${n}`)],
  other: [...PROTOTYPE_NAMES, `${CHUNK_TEMPLATE}${LONG}`.slice(0, POOL_NAME_LENGTH_MAX)],
};
/** Names for agent ids, identities and lease ids; quotes and backslashes double when a refusal quotes them. */
const NAMES = [...PROTOTYPE_NAMES, LONG, '"'.repeat(ID_LENGTH_MAX), '\\'.repeat(ID_LENGTH_MAX), '"\\\'', 'anon'];
const CLASSES = [undefined, ...PROTOTYPE_NAMES, 'gold', LONG];

// ---- scenario ----------------------------------------------------------------

const dtArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(0) },
  { weight: 16, arbitrary: fc.integer({ min: 1, max: 5_000 }) },
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 50_000 }) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 400_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5_000_000 }) },
  // Jumps of up to three hours: every lease lapses, every hold ends, template pools are evicted.
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 10_000_000_000 }) },
);
const tokensArb = fc.oneof(
  fc.constantFrom(0, 1, 2, WIRE_TOKENS_MAX, WIRE_TOKENS_MAX - 1, 2 ** 31, 2 ** 32 + 1),
  fc.nat(40),
  fc.integer({ min: 0, max: WIRE_TOKENS_MAX }),
);
const seqArb = fc.oneof(
  fc.constantFrom<'next' | 'same' | number>('next', 'same', 0, 1, 2 ** 52, 2 ** 52 + 1, SEQ_MAX, SEQ_MAX - 1),
  fc.nat(10),
  fc.integer({ min: 0, max: SEQ_MAX }),
);
const demandArb = fc.oneof(
  fc.constantFrom(0, Number.MIN_VALUE, 1e-300, 0.5, 1, DEMAND_PER_SECOND_MAX, DEMAND_PER_SECOND_MAX - 1, 1e9),
  fc.double({ min: 0, max: DEMAND_PER_SECOND_MAX, noNaN: true }),
);
const holdArb = fc.oneof(fc.constantFrom(0, 1, HOLD_MS_MAX, HOLD_MS_MAX - 1), fc.nat(300));

/** Who a hostile client is: the pool it names, its identity token and agent id; a run has a few, each acting many times. */
const personaArb = fc.record({
  poolKind: fc.constantFrom('honest', 'honest', 'template', 'template', 'other'),
  pool: fc.nat(),
  identity: fc.nat(),
  /** An agent id of the identity, an honest agent's id (an impersonator also names its pool, identity, lease and seq), or any name. */
  agentKind: fc.constantFrom('identity', 'identity', 'sub', 'honest', 'impersonate', 'impersonate', 'any'),
  agent: fc.nat(),
});

const hostileArb = fc.record({
  t: fc.constant('hostile' as const),
  dtUs: dtArb,
  persona: fc.nat(),
  op: fc.constantFrom('acquire', 'acquire', 'return', 'report', 'status'),
  retry: fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 }),
  agentClass: fc.nat(CLASSES.length - 1),
  /** Its own secret for the agent id, or one drawn anew. */
  ownSecret: fc.oneof({ arbitrary: fc.constant(true), weight: 4 }, { arbitrary: fc.constant(false), weight: 1 }),
  secretLength: fc.integer({ min: 22, max: 128 }),
  seq: seqArb,
  /** null (acquire), its own lease, an honest agent's lease, or a name. */
  lease: fc.constantFrom('own', 'own', 'honest', 'null', 'name'),
  leasePick: fc.nat(),
  tokensLeft: tokensArb,
  tokensWanted: tokensArb,
  demandPerSecond: demandArb,
  holdMs: holdArb,
  extraKeys: fc.boolean(),
  statusAgent: fc.boolean(),
});

const honestArb = fc.record({
  t: fc.constant('honest' as const),
  dtUs: dtArb,
  agent: fc.nat(),
  action: fc.constantFrom('acquire', 'acquire', 'spend', 'spend', 'spend', 'spend', 'return', 'report'),
  tokens: fc.integer({ min: 1, max: 30 }),
  tokensWanted: fc.nat(25),
  holdMs: fc.constantFrom(0, 0, 50, 150),
  /** How much of what it holds a report tells (100: all; an honest agent keeps only what it reports). */
  reportPercent: fc.constantFrom(100, 100, 50, 0),
});

/** Many new agents at one instant, each asking for everything: past EXACT_LEASES_MAX leases a rate pool shares by a water level. */
const floodArb = fc.record({
  t: fc.constant('flood' as const),
  dtUs: dtArb,
  pool: fc.nat(),
  agents: fc.integer({ min: 1, max: 80 }),
  demandPerSecond: demandArb,
  holdMs: holdArb,
});

const stepArb = fc.oneof(
  { weight: 10, arbitrary: honestArb },
  { weight: 8, arbitrary: hostileArb },
  { weight: 1, arbitrary: floodArb },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('tick' as const), dtUs: dtArb }) },
);

const scenarioArb = fc.record({
  bindIdentity: fc.boolean(),
  allowance: fc.constantFrom(0, 0, 7),
  startUs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1e12 }), fc.constant(2 ** 52)),
  /** Tick at every deadline the core reports, as the adapter does; otherwise only when a step says so. */
  adapterTicks: fc.boolean(),
  honestPerPool: fc.integer({ min: 1, max: 2 }),
  /** Greedy honest agents ask for all they may hold, renew as soon as they are empty and spend everything at once. */
  greedy: fc.boolean(),
  personas: fc.array(personaArb, { minLength: 1, maxLength: 5 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 150, size: 'max' }),
});

type Scenario = ReturnType<typeof scenarioArb.generate>['value'];
type Step = ReturnType<typeof stepArb.generate>['value'];
type Hostile = Extract<Step, { t: 'hostile' }>;
type Persona = Scenario['personas'][number];
type HonestStep = Extract<Step, { t: 'honest' }>;

const choose = <T>(items: readonly T[], n: number): T => {
  const item = items[n % items.length];
  if (item === undefined) throw new Error('nothing to choose from');
  return item;
};

// ---- honest agents that spend --------------------------------------------------

/**
 * Spender — an honest agent that spends only what its grants allow and only
 * before its lease's expiry, counted from when it sent the request whose
 * grant it applied. On a rate lease its balance is a bucket, as the agent's
 * lease slot keeps it: it accrues ρ per period from the reply, in whole µs,
 * up to the cap, and freezes while a renewal is on its way.
 */
interface Spender extends HonestAgent {
  balance: number;
  expiryUs: number;
  outstanding: { readonly seq: number; readonly firstSentUs: number } | null;
  rho: number;
  capTokens: number;
  periodUs: number;
  rateAtUs: number;
  carry: bigint;
}

/**
 * accrue — brings a rate lease's bucket up to `nowUs` as the agent's lease
 * slot does: carry + elapsed µs × ρ, whole tokens per period, the rest
 * carried, never past the cap (a full bucket drops its carry). The slot
 * keeps the carry across a renewal of the same lease; this model drops it,
 * which only ever spends less.
 */
function accrue(a: Spender, nowUs: number): void {
  if (a.rho === 0 || nowUs <= a.rateAtUs) return;
  const room = a.capTokens - a.balance;
  const units = a.carry + BigInt(nowUs - a.rateAtUs) * BigInt(a.rho);
  a.rateAtUs = nowUs;
  const whole = units / BigInt(a.periodUs);
  if (room <= 0 || whole >= BigInt(room)) {
    a.balance = Math.max(a.balance, a.capTokens);
    a.carry = 0n;
    return;
  }
  a.balance += Number(whole);
  a.carry = units - whole * BigInt(a.periodUs);
}

/** What each run exercised, summed and printed, so that a vacuous fuzzer shows. */
type Counts = Record<string, number>;

// ---- the simulation ----------------------------------------------------------

class Simulation {
  readonly core: CoordinatorCore<number>;
  readonly agents: Spender[];
  readonly ledger = new Ledger();
  readonly honest = new Map<number, Spender>();
  /** Every request by ledger id, to check its replies against. */
  readonly requests = new Map<number, Request>();
  /** Hostile requests by ledger id: which of their keys they were for. */
  readonly hostileOf = new Map<number, string>();
  /** Per hostile (pool, agent id): its own secret, last seq and the lease it was granted. */
  readonly hostiles = new Map<string, { secret: string; seq: number; leaseId: string | null }>();
  /** Per hostile key, its last request as sent, for byte-for-byte retries. */
  readonly lastSent = new Map<
    string,
    { readonly req: Request; readonly identity: string; readonly payload: Uint8Array; readonly id: number }
  >();
  readonly spends = new Map<string, Admission[]>();
  readonly watches = new Map<string, EnvelopeWatch>();
  readonly poolNames = new Set<string>([...FIXED_POOLS, ...HONEST_POOLS]);
  readonly counts: Counts = {};
  nowUs: number;

  constructor(readonly sc: Scenario) {
    this.core = new CoordinatorCore<number>(fuzzConfig(sc.bindIdentity, sc.allowance), 11, sc.startUs);
    const classes = [undefined, 'gold', ...PROTOTYPE_NAMES];
    this.agents = honestAgents(HONEST_POOLS, sc.honestPerPool, classes).map((a) => ({
      ...a,
      balance: 0,
      expiryUs: 0,
      outstanding: null,
      rho: 0,
      capTokens: 0,
      periodUs: 1,
      rateAtUs: 0,
      carry: 0n,
    }));
    this.nowUs = sc.startUs;
  }

  bump(key: string, by = 1): void {
    this.counts[key] = (this.counts[key] ?? 0) + by;
  }

  /** configOf — the configuration of `pool`, held now or not (a template pool may have been evicted). */
  configOf(pool: string): PoolConfig {
    const { pools, templates } = this.core.config;
    const config = pools.find((p) => p.name === pool) ?? templates.find((t) => pool.startsWith(t.prefix))?.pool;
    if (config === undefined) throw new Error(`no pool ${pool}`);
    return config;
  }

  usable(a: Spender): number {
    accrue(a, this.nowUs);
    return this.nowUs < a.expiryUs ? a.balance : 0;
  }

  // -- time ------------------------------------------------------------------

  advance(dtUs: number): void {
    const target = this.nowUs + dtUs;
    if (this.sc.adapterTicks)
      tickThroughDeadlines(this.core, this.nowUs, target, (_deadlineUs, atUs) => {
        this.nowUs = atUs;
        this.deliver(this.core.tick(atUs));
        this.check();
      });
    this.nowUs = target;
  }

  // -- sending and replies -------------------------------------------------------

  /** send — one request at now; `whose` names its sender before its replies are delivered (an honest agent, or a hostile key). */
  send(
    req: Request,
    identity: string,
    whose: Spender | string,
    payload: Uint8Array = new TextEncoder().encode(JSON.stringify(req)),
  ): number {
    const s = this.ledger.open(req.op);
    this.requests.set(s.id, req);
    if (typeof whose === 'string') this.hostileOf.set(s.id, whose);
    else this.honest.set(s.id, whose);
    if (req.op === 'acquire') this.noteRetry(req.pool, req.agentId, req.leaseSecret, req.seq, s.id);
    this.deliverTo(s.id, this.core.receive(subjectFor(PREFIX, req.op, req.pool, identity), payload, s.id, this.nowUs));
    return s.id;
  }

  /** noteRetry — a retry of a held acquire (same agent, secret and seq) takes its reply target over. */
  noteRetry(pool: string, agentId: string, secret: string, seq: number, id: number): void {
    for (const w of this.core.pool(pool)?.heldRequests() ?? []) {
      if (w.record.agentId !== agentId || w.record.secret !== secret || w.record.lastSeq !== seq) continue;
      const first = this.ledger.sent[w.to];
      if (first !== undefined) first.supersededBy = id;
      this.bump('supersededHolds');
    }
  }

  deliverTo(id: number, out: Delivery<number>[]): void {
    if (this.ledger.sent[id]?.op !== 'report' && out.every((d) => d.to !== id))
      this.bump(this.hostileOf.has(id) ? 'hostileHeld' : 'honestHeld');
    this.deliver(out);
  }

  deliver(out: readonly Delivery<number>[]): void {
    this.ledger.deliver(out);
    for (const d of out) {
      const req = this.requests.get(d.to);
      if (req !== undefined) this.checkReply(req, d.reply, this.honest.has(d.to));
      const a = this.honest.get(d.to);
      if (a !== undefined) this.apply(a, d.to, d.reply);
      const key = this.hostileOf.get(d.to);
      if (key !== undefined) this.learn(key, d.reply);
    }
  }

  /**
   * checkReply — a reply fits its request and the pool: its seq, a grant
   * within the lease limit, TTL, capacity and refill, a receipt of no more
   * than was said to be left. An honest agent's request (one body per seq)
   * also gets no more than it asked for, and keeps no more than it reported.
   */
  checkReply(req: Request, reply: Reply, honest: boolean): void {
    const what = (): string => `${JSON.stringify(req)} got ${JSON.stringify(reply)}`;
    const seq = 'seq' in req ? req.seq : null;
    if (reply.kind === 'error' || reply.kind === 'status') {
      ensure(reply.kind === 'error' ? reply.seq === seq : req.op === 'status' && reply.pool === req.pool, what);
      return;
    }
    // The fuzzer sends no operator requests: anything but a grant or receipt now is a reply out of place.
    if (reply.kind !== 'grant' && reply.kind !== 'receipt') {
      ensure(false, () => `an operator reply to a lease request: ${what()}`);
      return;
    }
    ensure(reply.seq === seq, what);
    if (reply.kind === 'receipt') {
      ensure(req.op === 'return' && reply.tokensReturned <= req.tokensLeft, () => `a receipt for more than was left: ${what()}`);
      return;
    }
    const c = this.configOf(req.pool);
    const limits = reply.tokensHeld <= c.maxLeaseTokens && reply.ttlMs <= c.leaseTtlMs && reply.capacityTokens === c.capacity;
    ensure(req.op === 'acquire' && reply.tokensGranted <= reply.tokensHeld && limits, () => `a grant past the pool's limits: ${what()}`);
    const rate = reply.rate;
    if (rate !== undefined) {
      const ok = rate.tokensPerPeriod <= c.refill.tokens && rate.capTokens <= c.maxLeaseTokens && rate.capTokens >= reply.tokensHeld;
      ensure(ok, () => `a rate past the pool's refill or lease limit: ${what()}`);
    }
    if (!honest || req.op !== 'acquire') return;
    const kept = reply.tokensHeld - reply.tokensGranted;
    ensure(reply.tokensGranted <= req.tokensWanted, () => `a grant of more than was asked for: ${what()}`);
    ensure(req.leaseId === reply.leaseId ? kept <= req.tokensLeft : kept === 0, () => `a lease kept past what was reported: ${what()}`);
  }

  /** apply — the honest agent acts on the reply to its outstanding request (it sends no other while one is out). */
  apply(a: Spender, id: number, reply: Reply): void {
    const s = a.outstanding;
    this.bump(`honest:${reply.kind === 'error' ? reply.code : reply.kind}`);
    if (s === null || this.ledger.sent[id]?.op !== 'acquire') return;
    a.outstanding = null;
    if (reply.kind !== 'grant') return;
    const kept = reply.leaseId === a.leaseId ? this.usable(a) : 0;
    a.leaseId = reply.leaseId;
    a.balance = kept + reply.tokensGranted;
    a.expiryUs = s.firstSentUs + reply.ttlMs * US_PER_MS;
    ensure(a.balance <= reply.tokensHeld, () => `${a.agentId} holds more than its grant says the lease holds: ${JSON.stringify(reply)}`);
    this.startRate(a, reply);
    this.bump('honestTokensGranted', reply.tokensGranted);
  }

  startRate(a: Spender, grant: LeaseGrant): void {
    a.rho = grant.rate?.tokensPerPeriod ?? 0;
    a.capTokens = grant.rate?.capTokens ?? 0;
    a.periodUs = (grant.rate?.periodMs ?? 1) * US_PER_MS;
    a.rateAtUs = this.nowUs;
    a.carry = 0n;
    ensure(a.rho === 0 || a.capTokens >= a.balance, () => `${a.agentId} holds more than its rate lease's cap: ${JSON.stringify(grant)}`);
  }

  learn(key: string, reply: Reply): void {
    this.bump(`hostile:${reply.kind === 'error' ? reply.code : reply.kind}`);
    const h = this.hostiles.get(key);
    if (h !== undefined && reply.kind === 'grant') h.leaseId = reply.leaseId;
  }

  // -- honest steps --------------------------------------------------------------

  honestStep(step: HonestStep): void {
    const a = choose(this.agents, step.agent);
    if (step.action !== 'spend') return this.honestRequest(a, step);
    // Every agent of the pool spends at once, so that windows fill up; like a lease keeper, one whose lease
    // is gone or past half its time renews first.
    for (const b of this.agents) {
      if (b.pool !== a.pool) continue;
      const ttlUs = this.configOf(b.pool).leaseTtlMs * US_PER_MS;
      const due = b.leaseId === null || b.expiryUs - this.nowUs < ttlUs / 2 || (this.sc.greedy && this.usable(b) === 0);
      if (b.outstanding === null && due) this.honestRequest(b, { ...step, action: 'acquire' });
      this.spend(b, this.sc.greedy ? Infinity : step.tokens);
    }
  }

  /** honestRequest — the agent's acquire, return or report, unless a request of its own is on its way. */
  honestRequest(a: Spender, step: HonestStep): void {
    if (a.outstanding !== null) return;
    const usable = this.usable(a);
    if (step.action === 'acquire' || a.leaseId === null) {
      // Renewing, it reports what it holds and stops the accrual of a rate lease until the reply.
      a.rho = 0;
      a.balance = usable;
      const req = acquireOf(a, usable, this.sc.greedy ? WIRE_TOKENS_MAX : step.tokensWanted, step.holdMs);
      a.outstanding = { seq: req.seq, firstSentUs: this.nowUs };
      this.send(req, a.identity, a);
      return;
    }
    const tokensLeft = Math.floor((usable * step.reportPercent) / 100);
    const req = giveBackOf(a, step.action === 'return' ? 'return' : 'report', tokensLeft);
    if (step.action === 'return') {
      a.leaseId = null;
      a.balance = 0;
      a.rho = 0;
    } else a.balance = Math.min(usable, tokensLeft);
    this.send(req, a.identity, a);
  }

  spend(a: Spender, tokens: number): void {
    const cost = Math.min(tokens, this.usable(a));
    if (cost === 0) return;
    a.balance -= cost;
    const log = this.spends.get(a.pool) ?? [];
    log.push({ tUs: this.nowUs, cost });
    this.spends.set(a.pool, log);
    const config = this.configOf(a.pool);
    const watch = this.watches.get(a.pool) ?? new EnvelopeWatch(config.capacity + config.allowance, config.refill);
    this.watches.set(a.pool, watch);
    const excess = watch.admit(this.nowUs, cost);
    ensure(excess <= 0, () => `${a.pool}: honest spending passed B + A + r·T by ${excess} in ${JSON.stringify(watch.worstWindow)}`);
    this.bump('tokensSpent', cost);
  }

  // -- hostile steps ---------------------------------------------------------------

  hostile(h: Hostile): void {
    const who = choose(this.sc.personas, h.persona);
    // An impersonator names an honest agent, its pool, identity, lease and next seq, but not its secret.
    const victim = who.agentKind === 'impersonate' ? choose(this.agents, who.agent) : undefined;
    const pool = victim?.pool ?? choose(HOSTILE_POOLS[who.poolKind], who.pool);
    if (this.core.kindOf(pool) !== null) this.poolNames.add(pool);
    const identity = victim?.identity ?? choose([...NAMES, ...this.agents.map((a) => a.identity)], who.identity);
    const agentId = victim?.agentId ?? this.hostileAgentId(who, identity);
    const key = `${pool}\n${agentId}`;
    if (h.retry && this.retry(key, h.leasePick)) return;
    const mine = this.hostiles.get(key) ?? { secret: secretOf(`hostile ${key}`, h.secretLength), seq: 0, leaseId: null };
    this.hostiles.set(key, mine);
    const secret = h.ownSecret ? mine.secret : secretOf(`other ${h.leasePick}`, h.secretLength);
    const lastSeq = victim?.seq ?? mine.seq;
    const seq = h.seq === 'next' ? Math.min(SEQ_MAX, lastSeq + 1) : h.seq === 'same' ? lastSeq : h.seq;
    mine.seq = Math.max(mine.seq, seq);
    const honestLeases = this.agents.map((a) => a.leaseId).filter((id) => id !== null);
    const named = choose([...NAMES, ...honestLeases], h.leasePick);
    const own = victim === undefined ? mine.leaseId : victim.leaseId;
    const leaseId = h.lease === 'own' ? (own ?? named) : h.lease === 'honest' ? choose([...honestLeases, named], h.leasePick) : named;
    const tokensLeft = victim !== undefined && h.tokensLeft % 2 === 0 ? 0 : h.tokensLeft;
    const agentClass = CLASSES[h.agentClass];
    let req: Request;
    if (h.op === 'status') req = { v: 2, op: 'status', pool, ...(h.statusAgent ? { agentId } : {}) };
    else if (h.op === 'acquire') {
      req = {
        v: 2,
        op: 'acquire',
        agentId,
        pool,
        leaseSecret: secret,
        seq,
        leaseId: h.lease === 'null' ? null : leaseId,
        tokensLeft,
        tokensWanted: h.tokensWanted,
        demandPerSecond: h.demandPerSecond,
        holdMs: h.holdMs,
        ...(agentClass === undefined ? {} : { agentClass }),
      };
    } else req = { v: 2, op: h.op, agentId, pool, leaseSecret: secret, seq, leaseId, tokensLeft };
    // Extra keys named after Object.prototype members, which the codec must leave alone.
    const json = JSON.stringify(req);
    const text = h.extraKeys ? `{"__proto__":{"seq":0,"pool":"c"},"constructor":{"prototype":1},${json.slice(1)}` : json;
    const payload = new TextEncoder().encode(text);
    const id = this.send(req, identity, key, payload);
    this.lastSent.set(key, { req, identity, payload, id });
    this.bump(`hostile-${h.op}`);
  }

  /** flood — `agents` new agents (or the same again, renewing) ask a pool for everything at once. */
  flood(step: Extract<Step, { t: 'flood' }>): void {
    const pool = choose([...HONEST_POOLS, ...HOSTILE_POOLS.template], step.pool);
    if (this.core.kindOf(pool) !== null) this.poolNames.add(pool);
    for (let i = 0; i < step.agents; i += 1) {
      const agentId = `flood.${PROTOTYPE_NAMES[i % PROTOTYPE_NAMES.length] ?? ''}.${i}`;
      const key = `${pool}\n${agentId}`;
      const mine = this.hostiles.get(key) ?? { secret: secretOf(`flood ${key}`), seq: 0, leaseId: null };
      this.hostiles.set(key, mine);
      mine.seq += 1;
      const req: Request = {
        v: 2,
        op: 'acquire',
        agentId,
        pool,
        leaseSecret: mine.secret,
        seq: mine.seq,
        leaseId: mine.leaseId,
        tokensLeft: 0,
        tokensWanted: WIRE_TOKENS_MAX,
        demandPerSecond: step.demandPerSecond,
        holdMs: step.holdMs,
        agentClass: choose(['gold', ...PROTOTYPE_NAMES], i),
      };
      this.send(req, 'flood', key);
    }
    this.bump('flooded', step.agents);
  }

  /** retry — resends, byte for byte, a hostile request that is held now (or else the last of `key`); false when there is none. */
  retry(key: string, pick: number): boolean {
    const held = heldTargets(this.core, this.poolNames);
    const waiting = [...this.lastSent.values()].filter((l) => held.has(l.id));
    const last = waiting.length > 0 ? choose(waiting, pick) : this.lastSent.get(key);
    if (last === undefined) return false;
    this.send(last.req, last.identity, this.hostileOf.get(last.id) ?? key, last.payload);
    this.bump(held.has(last.id) ? 'hostileRetriesOfHeld' : 'hostileRetries');
    return true;
  }

  hostileAgentId(h: Persona, identity: string): string {
    switch (h.agentKind) {
      case 'identity':
        return identity;
      case 'sub':
        return `${identity}.${choose(NAMES, h.agent)}`.slice(0, ID_LENGTH_MAX);
      case 'honest':
      case 'impersonate':
        return choose(this.agents, h.agent).agentId;
      case 'any':
        return choose(NAMES, h.agent);
    }
  }

  // -- invariants ----------------------------------------------------------------

  /** check — after every step: no fault, credit within B + A in every pool, one reply or held, agent safety. */
  check(): void {
    this.expectNoFault();
    let held = 0;
    for (const name of this.poolNames) {
      const pool = this.core.pool(name);
      if (pool === undefined) continue;
      held += 1;
      const out: Delivery<number>[] = [];
      const s = pool.status(this.nowUs, out);
      this.deliver(out);
      const { capacity, allowance } = pool.config;
      const { levelUnits } = internalsOf(pool).credit;
      const { unitsPerToken, capacityUnits } = pool.scale;
      const creditUnits = levelUnits + pool.leases.boundTokensSum * unitsPerToken;
      const credit = `${name}: level ${s.levelTokens} + leased ${s.leasedTokens} (${levelUnits} + leased in units ${creditUnits - levelUnits})`;
      ensure(s.levelTokens + s.leasedTokens <= capacity + allowance, () => `${credit} over capacity ${capacity} + allowance ${allowance}`);
      ensure(levelUnits >= 0 && levelUnits <= capacityUnits, () => `${credit}: level outside [0, ${capacityUnits}]`);
      ensure(creditUnits <= (capacity + allowance) * unitsPerToken, () => `${credit}: over B + A, in units`);
      // No stream of agent ids or requests grows a pool past its caps (the first hold is let in whatever maxWaiting says).
      ensure(s.leases <= pool.config.maxLeases, () => `${name} holds ${s.leases} leases, past maxLeases`);
      ensure(s.waiting <= Math.max(1, pool.config.maxWaiting), () => `${name} holds ${s.waiting} requests, past maxWaiting`);
      this.checkIdentityCaps(name, pool);
    }
    // Every pool the core holds was checked: pools are made only by acquires, on names this run sent.
    ensure(held === this.core.poolCount, () => `the core holds ${this.core.poolCount} pools, ${held} of them known`);
    for (const t of this.core.config.templates) {
      const made = [...this.poolNames].filter((n) => n.startsWith(t.prefix) && this.core.pool(n) !== undefined).length;
      ensure(made <= t.maxPools, () => `template ${t.prefix}* holds ${made} pools, more than its ${t.maxPools}`);
    }
    this.expectNoFault();
    this.ledger.expectAnsweredOrHeld(heldTargets(this.core, this.poolNames));
    this.checkAgents();
  }

  /**
   * checkIdentityCaps — no identity holds more of `pool` than its share
   * (the first hold is let in whatever the caps say), and the counts the
   * table and the queue keep per identity are what their records say.
   */
  checkIdentityCaps(name: string, pool: Pool<number>): void {
    const leases = new Map<string, number>();
    for (const r of pool.leases.all()) if (r.identity !== null) leases.set(r.identity, (leases.get(r.identity) ?? 0) + 1);
    const waiting = new Map<string, number>();
    for (const w of pool.heldRequests()) {
      if (w.record.identity !== null) waiting.set(w.record.identity, (waiting.get(w.record.identity) ?? 0) + 1);
    }
    const { maxLeasesPerIdentity, maxWaitingPerIdentity } = pool.config;
    for (const [identity, count] of leases) {
      ensure(
        pool.leases.leasesOf(identity) === count,
        () => `${name}: identity ${identity} counted ${pool.leases.leasesOf(identity)} leases, holds ${count}`,
      );
      ensure(count <= maxLeasesPerIdentity, () => `${name}: identity ${identity} holds ${count} leases, past maxLeasesPerIdentity`);
    }
    for (const [identity, count] of waiting) {
      ensure(
        count <= Math.max(1, maxWaitingPerIdentity),
        () => `${name}: identity ${identity} has ${count} requests held, past maxWaitingPerIdentity`,
      );
    }
  }

  expectNoFault(): void {
    const faults = this.core.takeFaults();
    if (faults.length > 0) expect(faults).toEqual([]);
  }

  /** checkAgents — what an honest agent may spend is inside a live lease bound to its secret that lasts as long. */
  checkAgents(): void {
    for (const a of this.agents) {
      if (this.usable(a) === 0) continue;
      const r = this.core.pool(a.pool)?.leases.get(a.agentId);
      const who = (): string => `${a.agentId} on ${a.pool}, holding ${a.balance} of ${a.leaseId} (${JSON.stringify(r)})`;
      ensure(r !== undefined && r.leaseId === a.leaseId, () => `${who()}: the coordinator does not hold that lease`);
      ensure(r?.secret === a.secret, () => `${who()}: the lease is bound to another secret`);
      ensure((r?.boundTokens ?? 0) >= Math.max(a.balance, a.rho > 0 ? a.capTokens : 0), () => `${who()}: more than the lease's bound`);
      ensure((r?.ratePerPeriod ?? 0) >= a.rho, () => `${who()}: accrues at ${a.rho}, faster than the lease`);
      ensure((r?.expiresAtUs ?? 0) >= a.expiryUs, () => `${who()}: may spend until ${a.expiryUs}, after the coordinator reclaims it`);
    }
  }

  /** finish — flush answers every held request; the envelope holds over the whole log; every pool still serves. */
  finish(): void {
    this.nowUs += 1;
    this.deliver(this.core.flush(this.nowUs));
    this.check();
    this.ledger.expectAnsweredOrHeld(new Set());
    for (const [pool, log] of this.spends) {
      const config = this.configOf(pool);
      const report = checkEnvelope(log, config.capacity + config.allowance, config.refill);
      expect(report.ok, `${pool}: the envelope broke in ${JSON.stringify(report.worstWindow)}`).toBe(true);
      const ratio = worstWindowRatio(log, config.capacity + config.allowance, config.refill);
      this.counts['closestWindow%'] = Math.max(this.counts['closestWindow%'] ?? 0, Math.round(ratio * 100));
    }
    const fresh = [`${CHUNK_TEMPLATE}fresh`, `${RATE_TEMPLATE}fresh`];
    for (const pool of [...this.poolNames, ...fresh]) {
      if (this.core.kindOf(pool) === null) continue;
      const agentId = 'fresh';
      const req: Request = acquireRequest({ agentId, pool, leaseSecret: secretOf(`fresh ${pool}`), tokensWanted: 1 });
      const id = this.ledger.open('acquire').id;
      const out = this.core.receive(subjectOf(req, agentId), new TextEncoder().encode(JSON.stringify(req)), id, this.nowUs);
      this.ledger.deliver(out);
      const reply = out.find((d) => d.to === id)?.reply;
      expect(reply?.kind === 'grant' || reply?.kind === 'error', `${pool} no longer serves: ${JSON.stringify(reply)}`).toBe(true);
      this.bump(`fresh:${reply?.kind === 'error' ? reply.code : reply?.kind}`);
    }
    this.expectNoFault();
  }

  run(): void {
    for (const step of this.sc.steps) {
      this.advance(step.dtUs);
      if (step.t === 'honest') this.honestStep(step);
      else if (step.t === 'hostile') this.hostile(step);
      else if (step.t === 'flood') this.flood(step);
      else this.deliver(this.core.tick(this.nowUs));
      this.check();
    }
    this.finish();
  }
}

describe('CoordinatorCore under valid but extreme messages (fuzz)', () => {
  it('keeps credit and caps, answers once, keeps honest agents safe and within B + A + r·T', { timeout: 2 * TIME_LIMIT_MS }, () => {
    const seed = propertySeed('src/core/fuzz-extreme.test.ts');
    let runs = 0;
    const total: Counts = {};
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        runs += 1;
        const sim = new Simulation(sc);
        sim.run();
        for (const [k, v] of Object.entries(sim.counts)) total[k] = k.endsWith('%') ? Math.max(total[k] ?? 0, v) : (total[k] ?? 0) + v;
      }),
      // Past TIME_LIMIT_MS a failure stops shrinking and reports the smallest counterexample so far.
      { seed, numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS },
    );
    console.log(`fuzz-extreme: ${runs} runs; ${JSON.stringify(total)}`);
    for (const key of ['tokensSpent', 'honestHeld', 'hostileHeld', 'hostile:grant', 'hostile:forbidden', 'honest:grant', 'flooded'])
      expect(total[key], key).toBeGreaterThan(0);
    // Greedy runs spend up to the envelope: the check is not vacuous.
    expect(total['closestWindow%']).toBeGreaterThanOrEqual(90);
  });
});
