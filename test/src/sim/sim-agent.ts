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

  constructor(
    readonly slot: number,
    readonly id: string,
    private readonly startUs: number,
    /** Local clock rate error, e.g. 0.01 = runs 1% fast. */
    private readonly drift: number,
    options: Partial<KeeperOptions>,
    random: Random,
  ) {
    this.keeper = new LeaseKeeper(id, 'pool', () => (this.seq += 1), keeperOptions(options), () => random.next());
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
  attemptOf(action: SendAction): number {
    const attempt = (this.attemptCounts.get(action.seq) ?? 0) + 1;
    this.attemptCounts.set(action.seq, attempt);
    return attempt;
  }
}
