/**
 * SimAgent: one agent process in the simulator: the real LeaseKeeper (and
 * its LeaseSlot fast path) on a local clock that may drift, plus the
 * waiting `take()` calls, which the real Limiter keeps in its adapter.
 */
import { keeperOptions, LeaseKeeper, type KeeperOptions, type SendAction } from '@tokenlease/agent';
import type { Random } from '../harness/random.js';

export interface Waiter {
  readonly cost: number;
  readonly arrivedUs: number;
  readonly deadlineUs: number;
}

/** A deferred event for a paused agent, replayed in order when it resumes. */
export type Deferred = () => void;

export class SimAgent {
  readonly keeper: LeaseKeeper;
  alive = true;
  pausedUntilUs = -1;
  readonly deferred: Deferred[] = [];
  readonly waiters: Waiter[] = [];
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

  constructor(
    readonly slot: number,
    readonly id: string,
    private readonly startUs: number,
    /** Local clock rate error, e.g. 0.01 = runs 1% fast. */
    private readonly drift: number,
    options: Partial<KeeperOptions>,
    random: Random,
  ) {
    const resolved = keeperOptions(options);
    this.driftMargin = resolved.driftMargin;
    this.keeper = new LeaseKeeper(id, 'pool', () => (this.seq += 1), resolved, () => random.next());
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
    const sent = this.firstSentLocalUs.get(seq);
    if (sent === undefined) return;
    const expected = sent + Math.floor(ttlMs * 1000 * (1 - this.driftMargin));
    if (this.keeper.slot.expiresAtUs === expected) this.expectedExpiryLocalUs = expected;
  }
}
