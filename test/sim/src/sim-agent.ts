/**
 * SimAgent: one agent process in the simulator: the real AgentDriver with
 * its one pool (the real LeaseKeeper and its LeaseSlot fast path), and the
 * real TakeQueue of its waiting `take()` calls, on a local clock that may
 * drift. The simulation carries out the driver's commands (simulation.ts
 * `carry`); the agent here is the driver's waiters for its pool, served as
 * the Limiter serves them (sim-limiter.ts).
 *
 * It can also be broken on purpose (`Broken`), by reaching into the slot
 * after the keeper acted and before its waiters are served, to prove the
 * checks catch such an agent:
 * - spend-past-expiry: its lease never expires on its side;
 * - shadow-outlives-lease: the shadow flag of its last grant stays on after
 *   that lease ends, until the next grant (as agents once did);
 * - accrue-from-send: a rate lease's new rate accrues from when the request
 *   was first sent, not from the reply's arrival (the coordinator's accrual
 *   starts at its grant, which is later);
 * - accrue-in-flight: a rate lease keeps accruing its old rate while a
 *   renewal is in flight, though the coordinator re-bases the lease on the
 *   balance reported when it was sent.
 */
import {
  AgentDriver,
  keeperOptions,
  TakeQueue,
  type AgentPool,
  type KeeperOptions,
  type LeaseKeeper,
  type PoolWaiters,
} from '@tokenlease/agent/internal';
import { ANONYMOUS_IDENTITY } from '@tokenlease/shared';
import type { Random } from '@tokenlease/shared/testing';
import type { Broken } from './sim-config.js';

/** A rate lease's accrual as the slot holds it: tokens per period of `periodUs`, up to `capTokens`. */
interface Accrual {
  readonly tokens: number;
  readonly periodUs: number;
  readonly capTokens: number;
}

/** SimTake — a waiting `take()` as the simulator answers it: its cost and when it arrived, true µs. */
export interface SimTake {
  readonly cost: number;
  readonly arrivedUs: number;
}

/** A deferred event for a paused agent, replayed in order when it resumes. */
export type Deferred = () => void;

/** SimAgentHost — the simulation as an agent's waiters see it. */
export interface SimAgentHost {
  /** True time now, µs. */
  readonly now: () => number;
  /** serve — polls the agent's take queue now (SimLimiter.poll). */
  readonly serve: (agent: SimAgent) => void;
  /** cancel — ends the agent's waiting takes (SimLimiter.close). */
  readonly cancel: (agent: SimAgent) => void;
}

/** The pool every simulated agent leases from. */
const SIM_POOL = 'pool';
/** Limiters of a simulated agent are never swept (it runs one pool for its whole life), ms. */
const SIM_LIMITER_IDLE_MS = 2 ** 31;

export class SimAgent implements PoolWaiters {
  readonly driver: AgentDriver<SimAgent>;
  readonly pool: AgentPool<SimAgent>;
  alive = true;
  pausedUntilUs = -1;
  readonly deferred: Deferred[] = [];
  readonly takes: TakeQueue<SimTake>;
  /** True time of the next take-deadline event in the queue for this agent; Infinity: none. */
  takeAlarmUs = Infinity;
  /** Bumped by each wake-at command: a tick event of an older generation was replaced. */
  tickGeneration = 0;
  /** A wake-soon event is in the queue. */
  wakePending = false;
  /** (seq:attempt) of the attempts answered or failed, so a late timeout does nothing. */
  readonly settledAttempts = new Set<string>();
  readonly attemptCounts = new Map<number, number>();
  /** Local clock reading when each sequence was first sent. */
  private readonly firstSentLocalUs = new Map<number, number>();
  /** Agent-side expiry of the lease in hand, computed here from the send time: the check's own figure. */
  expectedExpiryLocalUs = -Infinity;
  readonly driftMargin: number;
  /** The rate the last grant the keeper took started (null: none, or a chunk lease). */
  private grantedRate: Accrual | null = null;
  /** The grant being handed to the driver now (its request and TTL), until the keeper has acted on it. */
  private arriving: { readonly seq: number; readonly ttlMs: number } | null = null;
  /** The keeper's attempts counted when its waiters were last served: more since means it just sent. */
  private attemptsSeen = 0;

  constructor(
    readonly slot: number,
    readonly id: string,
    private readonly startUs: number,
    /** Local clock rate error, e.g. 0.01 = runs 1% fast. */
    private readonly drift: number,
    /** The subject prefix its requests go to: the root's or its relay's. */
    prefix: string,
    options: Partial<KeeperOptions>,
    random: Random,
    private readonly host: SimAgentHost,
    private readonly broken?: Broken,
  ) {
    const keeper = keeperOptions(options);
    this.driftMargin = keeper.driftMargin;
    this.driver = new AgentDriver<SimAgent>({
      agentId: id,
      identity: ANONYMOUS_IDENTITY,
      prefixes: [prefix],
      keeper,
      limiterIdleMs: SIM_LIMITER_IDLE_MS,
      secret: simSecret(id),
      random: () => random.next(),
      idSuffix: () => simIdSuffix(random),
    });
    this.pool = this.driver.open(SIM_POOL, {}, () => this);
    this.takes = new TakeQueue<SimTake>(this.pool.keeper);
  }

  get keeper(): LeaseKeeper {
    return this.pool.keeper;
  }

  /** nowLocalUs — this agent's clock reading now. */
  nowLocalUs(): number {
    return this.localUs(this.host.now());
  }

  /** localUs — this agent's clock reading at true time `trueUs` (starts at an arbitrary offset). */
  localUs(trueUs: number): number {
    return 1_000_000_000 + Math.floor((trueUs - this.startUs) * (1 + this.drift));
  }

  /** trueUs — the true time at which this agent's clock reads `localUs`. */
  trueUs(localUs: number): number {
    return this.startUs + Math.ceil((localUs - 1_000_000_000) / (1 + this.drift));
  }

  paused(trueUs: number): boolean {
    return trueUs < this.pausedUntilUs;
  }

  /** attemptOf — numbers each send of a sequence so its timeout can be told apart. */
  attemptOf(seq: number, trueUs: number): number {
    const attempt = (this.attemptCounts.get(seq) ?? 0) + 1;
    this.attemptCounts.set(seq, attempt);
    if (attempt === 1) this.firstSentLocalUs.set(seq, this.localUs(trueUs));
    return attempt;
  }

  /**
   * grantArriving — the grant to `seq` with TTL `ttlMs` is handed to the
   * driver now, reaching the agent at local `localUs`: noted once the keeper
   * has acted on it (`noteGrant`), before its waiters are served.
   */
  grantArriving(seq: number, ttlMs: number, localUs: number): void {
    this.beforeReply(localUs);
    this.arriving = { seq, ttlMs };
  }

  /** replyArriving — a reply other than a grant is handed to the driver now, at local `localUs`. */
  replyArriving(localUs: number): void {
    this.beforeReply(localUs);
    this.arriving = null;
  }

  /** serveWaiters — (the driver, after the keeper acted) the sabotage of a broken agent, then its take queue is polled. */
  serveWaiters(): void {
    const arriving = this.arriving;
    this.arriving = null;
    if (arriving !== null) this.noteGrant(arriving.seq, arriving.ttlMs);
    const attempts = this.keeper.stats.attempts;
    this.afterActions(attempts > this.attemptsSeen, this.nowLocalUs());
    this.attemptsSeen = attempts;
    this.host.serve(this);
  }

  /** cancelWaiters — (the driver, closing) its waiting takes end unadmitted. */
  cancelWaiters(): void {
    this.host.cancel(this);
  }

  get waiting(): boolean {
    return this.takes.length > 0;
  }

  /**
   * noteGrant — after the keeper handled a grant to `seq`: if it took it
   * (its expiry is the one the design prescribes: first send + TTL less the
   * drift margin), that becomes the expiry the admission check holds it to.
   */
  private noteGrant(seq: number, ttlMs: number): void {
    // Broken: the grant's flag held as the service's own, so it outlives the lease (a later grant sets it anew).
    if (this.broken === 'shadow-outlives-lease') this.keeper.slot.shadowForced = this.keeper.slot.shadowGranted;
    const sent = this.firstSentLocalUs.get(seq);
    if (sent === undefined) return;
    const expected = sent + Math.floor(ttlMs * 1000 * (1 - this.driftMargin));
    if (this.keeper.slot.expiresAtUs !== expected) return;
    this.expectedExpiryLocalUs = expected;
    const s = this.keeper.slot;
    this.grantedRate = s.rateTokens === 0 ? null : { tokens: s.rateTokens, periodUs: s.ratePeriodUs, capTokens: s.rateCapTokens };
    // Broken: restart the new rate's clock at the send, so the time the request and reply spent in flight accrues too.
    const rate = this.grantedRate;
    if (this.broken === 'accrue-from-send' && rate !== null) s.startRate(rate.tokens, rate.periodUs, rate.capTokens, sent);
  }

  /**
   * beforeReply — (broken: accrue-in-flight) brings the balance accrued in
   * flight up to the reply's arrival, `localUs`, before the keeper takes it.
   */
  private beforeReply(localUs: number): void {
    if (this.broken === 'accrue-in-flight') this.keeper.slot.freezeRate(localUs);
  }

  /**
   * afterActions — sabotage after the keeper acted at local time `localUs`
   * (nothing for an honest agent): broken so, a lease that never expires,
   * or a rate left running while the renewal just sent (`sent`: an attempt
   * left; one of a return leaves no lease) is in flight.
   */
  private afterActions(sent: boolean, localUs: number): void {
    const s = this.keeper.slot;
    if (this.broken === 'spend-past-expiry' && s.hasLease) s.expiresAtUs = Number.MAX_VALUE;
    const renewing = sent;
    if (this.broken === 'accrue-in-flight' && renewing && s.hasLease && s.rateTokens === 0 && this.grantedRate !== null) {
      s.startRate(this.grantedRate.tokens, this.grantedRate.periodUs, this.grantedRate.capTokens, localUs);
    }
  }
}

/** simSecret — the lease secret of agent `id`: fixed by the id (so a run's random draws stay as they were), distinct per incarnation. */
function simSecret(id: string): string {
  return `sim-secret-${id.replace(/[^A-Za-z0-9_-]/g, '_')}`.padEnd(22, '0');
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** simIdSuffix — a moved id's suffix drawn from the run's seeded random: 16 base64url characters, the same for the same seed. */
function simIdSuffix(random: Random): string {
  let suffix = '';
  for (let i = 0; i < 16; i += 1) suffix += BASE64URL[random.int(0, 63)];
  return suffix;
}
