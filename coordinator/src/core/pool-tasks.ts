/**
 * PoolTasks — the store tasks of each pool (claim, step-down, hand-over,
 * forget) one after another: a task starts once every earlier task of its
 * pool said it was done. A pool's queue is dropped once its tasks are done
 * and the pool is not owned. (Writes belong to an ownership, not to a
 * pool: each one's write lane lives with it.)
 *
 * Also kept per pool: the requests that wait for a template pool's claim
 * (`awaitClaim`), so that one claim serves every request that came while it
 * was under way.
 *
 * Pure: a task is a function given `done`, which it calls, now or from a
 * later event, when it is finished.
 */

/** Task — a pool's store task; calls `done` once, when it is finished. */
export type Task = (done: () => void) => void;

interface Queue {
  running: boolean;
  readonly waiting: Array<{ readonly task: Task; readonly after: () => void }>;
  /** Requests that wait for this template pool's claim; null when no claim is under way. */
  awaitingClaim: Array<() => void> | null;
}

export class PoolTasks {
  private readonly byPool = new Map<string, Queue>();

  /**
   * @param owned whether `pool` is owned (its queue is kept while it is).
   * @param failed what a task threw as it started (the task counts as done).
   */
  constructor(
    private readonly owned: (pool: string) => boolean,
    private readonly failed: (pool: string, error: unknown) => void,
  ) {}

  /** enqueue — runs `task` after every earlier task of `pool`; `after` once it is done. */
  enqueue(pool: string, task: Task, after: () => void = () => undefined): void {
    const q = this.queue(pool);
    q.waiting.push({ task, after });
    if (!q.running) this.next(pool, q);
  }

  /**
   * awaitClaim — `run` waits for the claim of template pool `pool`; true
   * when this is the first such request (the caller enqueues the claim).
   */
  awaitClaim(pool: string, run: () => void): boolean {
    const q = this.queue(pool);
    if (q.awaitingClaim !== null) {
      q.awaitingClaim.push(run);
      return false;
    }
    q.awaitingClaim = [run];
    return true;
  }

  /** claimEnded — the requests that waited for `pool`'s claim, to run now; none wait after this. */
  claimEnded(pool: string): Array<() => void> {
    const q = this.byPool.get(pool);
    const waiting = q?.awaitingClaim ?? [];
    if (q !== undefined) q.awaitingClaim = null;
    return waiting;
  }

  /** busy — whether `pool` has a task running or waiting. */
  busy(pool: string): boolean {
    return this.byPool.get(pool)?.running === true;
  }

  private queue(pool: string): Queue {
    let q = this.byPool.get(pool);
    if (q === undefined) {
      q = { running: false, waiting: [], awaitingClaim: null };
      this.byPool.set(pool, q);
    }
    return q;
  }

  private next(pool: string, q: Queue): void {
    const item = q.waiting.shift();
    if (item === undefined) {
      q.running = false;
      if (q.awaitingClaim === null && !this.owned(pool) && this.byPool.get(pool) === q) this.byPool.delete(pool);
      return;
    }
    q.running = true;
    let finished = false;
    const done = (): void => {
      if (finished) return;
      finished = true;
      item.after();
      this.next(pool, q);
    };
    try {
      item.task(done);
    } catch (error) {
      this.failed(pool, error);
      done();
    }
  }
}
