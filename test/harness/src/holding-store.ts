/**
 * HoldingStore: a StateStore in front of a real one (Redis) that lets a
 * test hold one write of a pool out for as long as it likes and answer one
 * renewal as lapsed: the store side of a give-up and re-claim with a write
 * still out (ioredis keeps a command that failed with CLUSTERDOWN in its
 * retry queue while later commands go through, so its outcome comes back
 * after them). Everything else passes through unchanged.
 *
 * A held write settles when the test says, as one of:
 * - `unavailable`: it fails as a CLUSTERDOWN would (the store did not
 *   answer), never having reached Redis;
 * - `fenced`: it reaches Redis only now (whatever Redis says, usually
 *   fenced by the epoch claimed meanwhile);
 * - `written`: it reached Redis when it was made, before the lapse; only
 *   its answer comes late.
 */
import { CoordinatorError, type PoolChanges, type StateStore } from '@tokenlease/coordinator/internal';

/** HeldOutcome — how a held write settles (see the module comment). */
export type HeldOutcome = 'unavailable' | 'fenced' | 'written';

/** HeldWrite — a write caught and held: what it was, and how to let it go. */
export interface HeldWrite {
  readonly pool: string;
  readonly epoch: number;
  readonly changes: PoolChanges;
  /** settle — lets the write's promise settle as `outcome`; resolves with what Redis said (null: it never reached Redis). */
  settle(outcome: HeldOutcome): Promise<boolean | null>;
}

export interface HoldingStore extends StateStore {
  /** holdNextWrite — the next write of `pool` is held (reaching Redis at once when `early`); resolves once it is caught. */
  holdNextWrite(pool: string, early: boolean): Promise<HeldWrite>;
  /** lapseNextRenewal — the next renewal of `pool` answers that the ownership lapsed; resolves once it did. */
  lapseNextRenewal(pool: string): Promise<void>;
}

/** holdingStore — `inner`, with one write and one renewal at a time under the test's control. */
export function holdingStore(inner: StateStore): HoldingStore {
  let hold: { pool: string; early: boolean; caught: (write: HeldWrite) => void } | null = null;
  let lapse: { pool: string; done: () => void } | null = null;

  function held(pool: string, member: string, epoch: number, changes: PoolChanges, early: boolean): Promise<boolean> {
    // Reached Redis now (before any lapse) when early: only the answer waits.
    const written = early ? inner.write(pool, member, epoch, changes) : null;
    return new Promise<boolean>((resolve, reject) => {
      const settle = async (outcome: HeldOutcome): Promise<boolean | null> => {
        if (outcome === 'unavailable') {
          reject(new CoordinatorError('store-unavailable', 'Redis did not answer: CLUSTERDOWN The cluster is down'));
          return null;
        }
        const result = await (written ?? inner.write(pool, member, epoch, changes));
        resolve(result);
        return result;
      };
      hold?.caught({ pool, epoch, changes, settle });
      hold = null;
    });
  }

  return {
    heartbeat: (member, ttlMs) => inner.heartbeat(member, ttlMs),
    ownerOf: (unit) => inner.ownerOf(unit),
    claim: (unit, member, ttlMs) => inner.claim(unit, member, ttlMs),
    async renew(unit, member, epoch, ttlMs) {
      if (lapse?.pool !== unit) return inner.renew(unit, member, epoch, ttlMs);
      lapse.done();
      lapse = null;
      return false;
    },
    write(unit, member, epoch, changes) {
      return hold?.pool === unit ? held(unit, member, epoch, changes, hold.early) : inner.write(unit, member, epoch, changes);
    },
    release: (unit, member, epoch) => inner.release(unit, member, epoch),
    forget: (unit, member, epoch) => inner.forget(unit, member, epoch),
    durabilityWarning: () => inner.durabilityWarning(),
    replicaWarning: () => inner.replicaWarning(),
    close: () => inner.close(),
    holdNextWrite(pool, early) {
      return new Promise((caught) => {
        hold = { pool, early, caught };
      });
    },
    lapseNextRenewal(pool) {
      return new Promise((done) => {
        lapse = { pool, done };
      });
    },
  };
}
