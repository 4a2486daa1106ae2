/**
 * Lanes of the durable service: per pool, the store tasks (claim,
 * hand-over, forget) run one after another. A pool's lane is dropped once
 * its tasks are done and the pool is not owned. (Writes belong to an
 * ownership, not to a pool: each one's write lane lives with it.)
 */

export interface Lane {
  /** The pool's store tasks (claim, hand-over, forget), one after another. */
  tail: Promise<void>;
  /** Requests that wait for this template pool's claim; null when no claim is under way. */
  awaitingClaim: Array<() => void> | null;
}

export class Lanes {
  private readonly byPool = new Map<string, Lane>();

  constructor(
    /** Whether `pool` is owned (its lane is kept while it is). */
    private readonly owned: (pool: string) => boolean,
    private readonly onTaskFailed: (pool: string, error: unknown) => void,
  ) {}

  /** lane — the lane of `pool`, made if need be. */
  lane(pool: string): Lane {
    let l = this.byPool.get(pool);
    if (l === undefined) {
      l = { tail: Promise.resolve(), awaitingClaim: null };
      this.byPool.set(pool, l);
    }
    return l;
  }

  /** enqueue — runs `task` after every earlier task of `pool`, so its store operations stay in order. */
  enqueue(pool: string, task: () => Promise<void>): Promise<void> {
    const l = this.lane(pool);
    const run = l.tail.then(task).catch((error: unknown) => this.onTaskFailed(pool, error));
    l.tail = run;
    void run.then(() => {
      if (l.tail === run && !this.owned(pool)) this.byPool.delete(pool);
    });
    return run;
  }
}
