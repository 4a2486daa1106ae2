/**
 * LeaseKeeper property: random interleavings of admissions, give-backs
 * (of any receipt so far, once or again), ticks, grants
 * (random TTL and size, same or new lease id), error replies, failures,
 * stale replies, close and time jumps, checked against an independent
 * model of what the agent may spend. Every grant is one an honest
 * coordinator could send for the request in flight: at most what it asked
 * for, holding what it reported left plus the grant (the grant alone under
 * a new id), within the pool's lease limit and capacity, which never change,
 * and a wait (`retryAfterMs`) only when it fell short. Checked:
 *
 * - the keeper accepts every such grant;
 * - the balance is a whole number, never negative;
 * - no admission at or after the agent-side expiry of the lease it was
 *   admitted under: first send of the granting sequence + ⌊ttl·(1 − drift)⌋;
 * - the balance never exceeds the coordinator's bound on the lease (the
 *   tokens reported left at send, less what was counted since, plus the
 *   grant under the same id; the grant alone under a new one), nor what
 *   the keeper last told the coordinator (an acquire, a report, a return)
 *   plus what was granted since: a give-back never undoes a take the
 *   coordinator was told of;
 * - counted (admitted less given back) + held + returned ≤ granted, in total;
 * - one request in flight; a retry repeats its sequence and message; no
 *   acquire after close; the keeper settles once its requests are answered.
 *
 * `SEED=<n> npx vitest run src/core/lease-keeper-property.test.ts` replays a run.
 */
import type { ErrorCode, LeaseGrant, LeaseRequest, LeaseReturn, Reply } from '@tokenlease/shared';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertySeed } from '@tokenlease/shared/testing';
import { keeperOptions, type KeeperOptions } from './keeper-options.js';
import { LeaseKeeper, type SendAction } from './lease-keeper.js';
import { RECEIPT_DENIED } from './lease-slot.js';
import { TEST_SECRET, testHooks } from './lease-keeper.fixtures.js';

type Step =
  | { readonly kind: 'take'; readonly dtUs: number; readonly cost: number }
  /** Gives back the take of a receipt picked from those so far (`again`: it may be picked again). */
  | { readonly kind: 'giveBack'; readonly dtUs: number; readonly pick: number; readonly again: boolean }
  | { readonly kind: 'tick'; readonly dtUs: number }
  | { readonly kind: 'jump'; readonly dtUs: number }
  /** Moves the clock to just before, at or just after the lease's expiry (never back), then takes. */
  | { readonly kind: 'edge'; readonly dtUs: number; readonly offsetUs: number; readonly cost: number }
  /** A grant of `tokens` or what the request asked for, whichever is less; `retryAfterMs` only when that fell short. */
  | {
      readonly kind: 'grant';
      readonly dtUs: number;
      readonly ttlMs: number;
      readonly tokens: number;
      readonly sameLease: boolean;
      readonly retryAfterMs: number;
    }
  | { readonly kind: 'error'; readonly dtUs: number; readonly code: ErrorCode; readonly retryAfterMs: number }
  | { readonly kind: 'failure'; readonly dtUs: number }
  | { readonly kind: 'stale'; readonly dtUs: number; readonly pick: number; readonly tokens: number }
  | { readonly kind: 'close'; readonly dtUs: number };

/** The pool's lease limit and capacity, the same in every grant. */
const LEASE_TOKENS_MAX = 1_000;
const CAPACITY_TOKENS = 2_000;

const dtUs = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0, max: 2_000 }) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 100_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 1_000_000 }) },
);

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 30, arbitrary: fc.record({ kind: fc.constant('take' as const), dtUs, cost: fc.integer({ min: 1, max: 30 }) }) },
  { weight: 15, arbitrary: fc.record({ kind: fc.constant('giveBack' as const), dtUs, pick: fc.nat(), again: fc.boolean() }) },
  { weight: 25, arbitrary: fc.record({ kind: fc.constant('tick' as const), dtUs }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('jump' as const), dtUs: fc.integer({ min: 0, max: 5_000_000 }) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('edge' as const),
      dtUs: fc.constant(0),
      offsetUs: fc.integer({ min: -2, max: 1 }),
      cost: fc.integer({ min: 1, max: 5 }),
    }),
  },
  {
    weight: 16,
    arbitrary: fc.record({
      kind: fc.constant('grant' as const),
      dtUs,
      ttlMs: fc.oneof(
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 50 }) },
        { weight: 4, arbitrary: fc.integer({ min: 51, max: 5_000 }) },
      ),
      // Mostly all that was asked for, often less.
      tokens: fc.oneof(
        { weight: 2, arbitrary: fc.integer({ min: 0, max: 200 }) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 10 }) },
      ),
      sameLease: fc.boolean(),
      retryAfterMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2_000 })),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('error' as const),
      dtUs,
      code: fc.constantFrom<ErrorCode>('unknown-pool', 'internal', 'unavailable', 'not-owner'),
      retryAfterMs: fc.integer({ min: 0, max: 1_000 }),
    }),
  },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('failure' as const), dtUs }) },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('stale' as const), dtUs, pick: fc.nat(), tokens: fc.integer({ min: 0, max: 200 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('close' as const), dtUs }) },
);

const options: fc.Arbitrary<KeeperOptions> = fc
  .record({
    holdMs: fc.integer({ min: 0, max: 200 }),
    replyTimeoutMs: fc.integer({ min: 1, max: 1_000 }),
    driftMargin: fc.constantFrom(0, 0.05, 0.2, 0.3),
    refreshMs: fc.integer({ min: 10, max: 2_000 }),
    idleReturnMs: fc.integer({ min: 20, max: 5_000 }),
    initialTokens: fc.integer({ min: 1, max: 20 }),
    backoffMsMin: fc.integer({ min: 1, max: 50 }),
    backoffFactor: fc.integer({ min: 1, max: 64 }),
    assumedTtlMs: fc.integer({ min: 50, max: 3_000 }),
    reportMs: fc.constantFrom(0, 0, 5, 50),
  })
  .map(({ backoffFactor, ...rest }) => keeperOptions({ ...rest, backoffMsMax: rest.backoffMsMin * backoffFactor }));

/** How often each interesting path ran, over all runs: the property must reach them all. */
const reached = {
  admitted: 0,
  deniedExpired: 0,
  sameLease: 0,
  newLease: 0,
  retried: 0,
  abandoned: 0,
  returned: 0,
  expiredOnTick: 0,
  reported: 0,
  givenBack: 0,
  giveBackDropped: 0,
};

interface Flight {
  readonly seq: number;
  readonly message: LeaseRequest | LeaseReturn;
  readonly firstSentUs: number;
  readonly countedAtSend: number;
}

/** What the agent may do, worked out from the messages alone. */
class Model {
  nowUs = 0;
  inFlight: Flight | null = null;
  readonly sentSeqs: number[] = [];
  lease: { readonly id: string; readonly expiresAtUs: number } | null = null;
  /** The coordinator's bound on the lease held: an upper bound on the balance. */
  boundTokens = 0;
  /** What the keeper last told the coordinator the lease holds, plus what was granted since: an upper bound on the balance. */
  toldTokens = 0;
  grantedTokens = 0;
  returnedTokens = 0;
  admittedTokens = 0;
  refundedTokens = 0;
  /** The receipts of the takes admitted so far, with their costs. */
  readonly receipts: { readonly cost: number; readonly receipt: number }[] = [];
  knownTtlUs: number;
  closing = false;
  leases = 0;

  constructor(
    readonly keeper: LeaseKeeper,
    readonly options: KeeperOptions,
  ) {
    this.knownTtlUs = options.assumedTtlMs * 1000;
  }

  /** sent — checks and records what the keeper sends. */
  sent(actions: readonly SendAction[]): void {
    for (const { type, seq, message } of actions) {
      expect(message.seq).toBe(seq);
      const flight = this.inFlight;
      if (message.op === 'report') {
        // A usage report: only with nothing in flight (so it counts every grant), of the lease held, never above its bound.
        expect(type).toBe('publish');
        expect(flight, 'a report while a request is in flight').toBeNull();
        expect(message.leaseId).toBe(this.lease?.id);
        expect(message.tokensLeft).toBeLessThanOrEqual(this.boundTokens);
        expect(message.tokensLeft).toBe(this.keeper.slot.balanceTokens);
        this.toldTokens = message.tokensLeft;
        expect(this.sentSeqs, 'a reused sequence number').not.toContain(seq);
        this.sentSeqs.push(seq);
        reached.reported += 1;
        continue;
      }
      if (flight !== null && flight.seq === seq) {
        expect(message, 'a retry repeats the message').toBe(flight.message);
        reached.retried += 1;
        continue;
      }
      expect(flight, 'a second request while one is in flight').toBeNull();
      expect(this.sentSeqs, 'a reused sequence number').not.toContain(seq);
      this.sentSeqs.push(seq);
      this.inFlight = { seq, message, firstSentUs: this.nowUs, countedAtSend: this.countedTokens };
      expect(message.tokensLeft).toBeLessThanOrEqual(this.boundTokens);
      this.toldTokens = message.op === 'return' ? 0 : message.tokensLeft;
      if (message.op === 'return') {
        expect(this.keeper.slot.balanceTokens, 'a return zeroes the balance').toBe(0);
        this.returnedTokens += message.tokensLeft;
        reached.returned += 1;
        this.boundTokens = 0;
        this.lease = null;
      } else {
        expect(this.closing, 'an acquire after close').toBe(false);
        expect(message.tokensLeft).toBe(this.keeper.slot.hasLease ? this.keeper.slot.balanceTokens : 0);
      }
    }
  }

  /** grant — the honest coordinator's grant to `request` (see the header), and the bound it puts on the balance. */
  grant(flight: Flight, request: LeaseRequest, s: Extract<Step, { kind: 'grant' }>): LeaseGrant {
    const sameId = s.sameLease && request.leaseId !== null;
    const leaseId = sameId && request.leaseId !== null ? request.leaseId : `L${++this.leases}`;
    const tokensGranted = Math.min(s.tokens, request.tokensWanted);
    const tokensHeld = (sameId ? request.tokensLeft : 0) + tokensGranted;
    expect(tokensHeld, 'the keeper asked for more than a lease may hold').toBeLessThanOrEqual(LEASE_TOKENS_MAX);
    const leftTokens = Math.max(0, request.tokensLeft - (this.countedTokens - flight.countedAtSend));
    this.boundTokens = (sameId ? leftTokens : 0) + tokensGranted;
    this.toldTokens = (sameId ? request.tokensLeft : 0) + tokensGranted;
    if (sameId) reached.sameLease += 1;
    else reached.newLease += 1;
    this.lease = { id: leaseId, expiresAtUs: flight.firstSentUs + Math.floor(s.ttlMs * 1000 * (1 - this.options.driftMargin)) };
    this.grantedTokens += tokensGranted;
    this.knownTtlUs = s.ttlMs * 1000;
    this.inFlight = null;
    const retryAfterMs = tokensGranted < request.tokensWanted ? s.retryAfterMs : 0;
    return {
      v: 2,
      kind: 'grant',
      seq: flight.seq,
      leaseId,
      tokensGranted,
      tokensHeld,
      ttlMs: s.ttlMs,
      epoch: 1,
      maxLeaseTokens: LEASE_TOKENS_MAX,
      capacityTokens: CAPACITY_TOKENS,
      refillTokens: 1_000,
      refillPeriodMs: 1_000,
      retryAfterMs,
    };
  }

  get countedTokens(): number {
    return this.admittedTokens - this.refundedTokens;
  }

  take(cost: number): void {
    const slot = this.keeper.slot;
    const fits = cost <= slot.balanceTokens && this.nowUs < slot.expiresAtUs;
    const receipt = slot.takeReceiptAt(cost, this.nowUs);
    const admitted = receipt !== RECEIPT_DENIED;
    expect(admitted).toBe(fits);
    if (admitted) this.receipts.push({ cost, receipt });
    if (!admitted) {
      if (slot.lastDenial === 'expired') reached.deniedExpired += 1;
      return;
    }
    reached.admitted += 1;
    if (this.lease === null) throw new Error(`admitted ${cost} at ${this.nowUs} under no lease`);
    expect(this.nowUs, 'admitted at or after the lease expiry').toBeLessThan(this.lease.expiresAtUs);
    this.boundTokens -= cost;
    this.admittedTokens += cost;
    expect(this.boundTokens, 'admitted more than the lease holds').toBeGreaterThanOrEqual(0);
  }

  /** giveBack — gives back a take picked from those so far; a refund lifts the bound by what it gave. */
  giveBack(pick: number, again: boolean): void {
    if (this.receipts.length === 0) return;
    const index = pick % this.receipts.length;
    const { cost, receipt } = this.receipts[index] as { readonly cost: number; readonly receipt: number };
    if (!again) this.receipts.splice(index, 1);
    const slot = this.keeper.slot;
    const current = receipt === slot.toldGeneration && slot.hasLease && this.nowUs < slot.expiresAtUs;
    const given = slot.giveBackAt(cost, receipt, this.nowUs);
    expect(given).toBeGreaterThanOrEqual(0);
    expect(given).toBeLessThanOrEqual(cost);
    if (!current) expect(given, 'gave back a take the coordinator was told of, or to a lease not live').toBe(0);
    if (given > 0) reached.givenBack += 1;
    else reached.giveBackDropped += 1;
    this.refundedTokens += given;
    this.boundTokens += given;
    expect(slot.refundedTokens).toBe(this.refundedTokens);
  }

  check(): void {
    const slot = this.keeper.slot;
    expect(Number.isSafeInteger(slot.balanceTokens)).toBe(true);
    expect(slot.balanceTokens).toBeGreaterThanOrEqual(0);
    expect(slot.balanceTokens).toBeLessThanOrEqual(this.boundTokens);
    if (slot.hasLease) expect(slot.balanceTokens, 'more than last told plus granted since').toBeLessThanOrEqual(this.toldTokens);
    expect(this.countedTokens + slot.balanceTokens + this.returnedTokens).toBeLessThanOrEqual(this.grantedTokens);
    expect(this.keeper.stats.tokensGranted).toBe(this.grantedTokens);
    if (slot.hasLease) expect(slot.expiresAtUs).toBe(this.lease?.expiresAtUs);
  }
}

/** What a reply or failure may change, read through the public surface. */
function stateOf(keeper: LeaseKeeper): unknown {
  const { balanceTokens, expiresAtUs, costMaxTokens, hasLease, lowWatermarkTokens, lowSignalled, wantedCostTokens } = keeper.slot;
  return [{ balanceTokens, expiresAtUs, costMaxTokens, hasLease, lowWatermarkTokens, lowSignalled, wantedCostTokens }, { ...keeper.stats }];
}

function play(model: Model, s: Step): void {
  const keeper = model.keeper;
  model.nowUs += s.dtUs;
  const nowUs = model.nowUs;
  const flight = model.inFlight;
  switch (s.kind) {
    case 'take':
      return model.take(s.cost);
    case 'giveBack':
      return model.giveBack(s.pick, s.again);
    case 'edge':
      model.nowUs = Math.max(model.nowUs, keeper.slot.expiresAtUs + s.offsetUs);
      return model.take(s.cost);
    case 'jump':
      return;
    case 'close':
      model.closing = true;
      return model.sent(keeper.close(nowUs));
    case 'stale': {
      const old = model.sentSeqs.filter((seq) => seq !== flight?.seq);
      const seq = old.length === 0 ? 0 : (old[s.pick % old.length] as number); // 0 is never sent
      const before = stateOf(keeper);
      const deadlineUs = keeper.nextDeadlineUs();
      const reply: Reply = {
        v: 2,
        kind: 'grant',
        seq,
        leaseId: `stale-${seq}`,
        tokensGranted: s.tokens,
        tokensHeld: s.tokens,
        ttlMs: 60_000,
        epoch: 1,
        maxLeaseTokens: 1_000,
        capacityTokens: 2_000,
        refillTokens: 1_000,
        refillPeriodMs: 1_000,
        retryAfterMs: 0,
      };
      expect(keeper.onReply(seq, reply, nowUs)).toEqual([]);
      expect(keeper.onFailure(seq, 'timeout', 'late', nowUs)).toEqual([]);
      expect(stateOf(keeper), 'a stale reply changed state').toEqual(before);
      expect(keeper.nextDeadlineUs()).toBe(deadlineUs);
      return;
    }
    case 'tick': {
      const expiring = keeper.slot.hasLease && nowUs >= keeper.slot.expiresAtUs;
      model.sent(keeper.tick(nowUs));
      if (expiring) {
        expect(keeper.slot.balanceTokens, 'an expired lease kept its tokens').toBe(0);
        reached.expiredOnTick += 1;
      }
      return;
    }
    default:
      break;
  }
  if (flight === null) return model.sent(keeper.tick(nowUs));
  if (s.kind === 'failure') {
    const staleAfterUs = (model.knownTtlUs * (1 - model.options.driftMargin) * 3) / 4;
    const abandoned = (model.closing && flight.message.op === 'acquire') || nowUs - flight.firstSentUs >= staleAfterUs;
    if (abandoned) {
      model.inFlight = null;
      reached.abandoned += 1;
    }
    const actions = keeper.onFailure(flight.seq, 'timeout', 'no reply', nowUs);
    if (!abandoned) expect(actions, 'a retry before its backoff').toEqual([]);
    return model.sent(actions);
  }
  if (s.kind === 'error') {
    model.inFlight = null;
    const reply: Reply = {
      v: 2,
      kind: 'error',
      seq: flight.seq,
      code: s.code,
      fault: 'coordinator',
      message: 'test',
      retryAfterMs: s.retryAfterMs,
    };
    return model.sent(keeper.onReply(flight.seq, reply, nowUs));
  }
  if (flight.message.op === 'return') {
    model.inFlight = null;
    return model.sent(
      keeper.onReply(flight.seq, { v: 2, kind: 'receipt', seq: flight.seq, tokensReturned: flight.message.tokensLeft }, nowUs),
    );
  }
  const reply = model.grant(flight, flight.message, s);
  model.sent(keeper.onReply(flight.seq, reply, nowUs));
  expect(keeper.takeRejection(), 'an honest grant refused').toBeNull();
}

/** Closes the keeper and answers everything: it must settle. */
function settle(model: Model): void {
  model.closing = true;
  model.nowUs += 1_000;
  model.sent(model.keeper.close(model.nowUs));
  for (let round = 0; round < 4 && model.inFlight !== null; round += 1) {
    play(model, { kind: 'grant', dtUs: 1_000, ttlMs: 60_000, tokens: 3, sameLease: true, retryAfterMs: 0 });
    model.check();
  }
  expect(model.inFlight).toBeNull();
  expect(model.keeper.settled).toBe(true);
}

describe('LeaseKeeper property', () => {
  // Several seconds of CPU: the runner's timeout is not a speed target.
  it('never spends past the expiry or the tokens of the lease, whatever the interleaving', { timeout: 60_000 }, () => {
    const seed = propertySeed('src/core/lease-keeper-property.test.ts');
    const randoms = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(options, randoms, fc.array(step, { maxLength: 200, size: 'max' }), (opts, draws, steps) => {
        let seq = 0;
        let draw = 0;
        const random = (): number => draws[draw++ % draws.length] as number;
        const model = new Model(new LeaseKeeper('agent-p', 'pool-p', () => ++seq, opts, random, TEST_SECRET, testHooks()), opts);
        for (const s of steps) {
          play(model, s);
          model.check();
        }
        settle(model);
      }),
      { seed, numRuns: 300 },
    );
    console.log('lease-keeper-property.test.ts: paths reached', reached);
    for (const [path, count] of Object.entries(reached)) expect(count, `the runs never reached: ${path}`).toBeGreaterThan(0);
  });
});
