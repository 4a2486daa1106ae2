/**
 * SimAgent: one agent process in the simulator: the real LeaseKeeper (and
 * its LeaseSlot fast path) and the real TakeQueue of its waiting `take()`
 * calls, on a local clock that may drift.
 *
 * It can also be broken on purpose (`Broken`), by reaching into the slot
 * after the keeper acted, to prove the checks catch such an agent:
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
import { keeperOptions, LeaseKeeper, TakeQueue, type KeeperOptions, type SendAction } from '@tokenlease/agent';
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

export class SimAgent {
  readonly keeper: LeaseKeeper;
  alive = true;
  pausedUntilUs = -1;
  readonly deferred: Deferred[] = [];
  readonly takes: TakeQueue<SimTake>;
  /** True time of the next take-deadline event in the queue for this agent; Infinity: none. */
  takeAlarmUs = Infinity;
  tickGeneration = 0;
  private seq = 0;
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

  constructor(
    readonly slot: number,
    readonly id: string,
    private readonly startUs: number,
    /** Local clock rate error, e.g. 0.01 = runs 1% fast. */
    private readonly drift: number,
    options: Partial<KeeperOptions>,
    random: Random,
    private readonly broken?: Broken,
  ) {
    const resolved = keeperOptions(options);
    this.driftMargin = resolved.driftMargin;
    const nextSeq = (floor = 0): number => (this.seq = Math.max(this.seq, floor) + 1);
    this.keeper = new LeaseKeeper(id, 'pool', nextSeq, resolved, () => random.next(), simSecret(id));
    this.takes = new TakeQueue<SimTake>(this.keeper);
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
  attemptOf(action: SendAction, trueUs: number): number {
    const attempt = (this.attemptCounts.get(action.seq) ?? 0) + 1;
    this.attemptCounts.set(action.seq, attempt);
    if (attempt === 1) this.firstSentLocalUs.set(action.seq, this.localUs(trueUs));
    return attempt;
  }

  /**
   * noteGrant — after the keeper handled a grant to `seq`: if it took it
   * (its expiry is the one the design prescribes: first send + TTL less the
   * drift margin), that becomes the expiry the admission check holds it to.
   */
  noteGrant(seq: number, ttlMs: number): void {
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
  beforeReply(localUs: number): void {
    if (this.broken === 'accrue-in-flight') this.keeper.slot.freezeRate(localUs);
  }

  /**
   * afterActions — sabotage after the keeper acted at local time `localUs`
   * (nothing for an honest agent): broken so, a lease that never expires,
   * or a rate left running while the renewal just sent is in flight.
   */
  afterActions(actions: readonly SendAction[], localUs: number): void {
    const s = this.keeper.slot;
    if (this.broken === 'spend-past-expiry' && s.hasLease) s.expiresAtUs = Number.MAX_VALUE;
    const renewing = actions.some((a) => a.message.op === 'acquire');
    if (this.broken === 'accrue-in-flight' && renewing && s.hasLease && s.rateTokens === 0 && this.grantedRate !== null) {
      s.startRate(this.grantedRate.tokens, this.grantedRate.periodUs, this.grantedRate.capTokens, localUs);
    }
  }
}

/** simSecret — the lease secret of agent `id`: fixed by the id (so a run's random draws stay as they were), distinct per incarnation. */
function simSecret(id: string): string {
  return `sim-secret-${id.replace(/[^A-Za-z0-9_-]/g, '_')}`.padEnd(22, '0');
}
