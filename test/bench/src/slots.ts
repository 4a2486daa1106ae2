/**
 * Concurrency slots (`npm run bench`, item 9): what one acquire and its
 * release cost, against a Redis semaphore's round-trips for the same.
 *
 * - Through a limiter: `limiter.acquire()` then `limiter.release(handle)`
 *   on a concurrency pool (SLOTS_POOL) of a coordinator process, both
 *   with their clock reads, from a lease of 1000 slots: the figure a
 *   service pays per request.
 * - On the slot alone: `acquireAt` / `releaseAt` at a time the caller
 *   read, on a LeaseSlot set up by hand as a live concurrency lease: the
 *   logic's own cost.
 * - A Redis semaphore, the design a service would otherwise reach for: a
 *   sorted set of holders, acquired by one Lua script (drop holders past
 *   the hold bound, then add this one if fewer than the limit hold) and
 *   released by ZREM, both awaited in turn over one connection.
 * Every pair must be admitted: an acquire refused while measuring throws,
 * rather than timing a refusal as a pair.
 */
import { LeaseSlot, type Limiter } from '@tokenlease/agent';
import { provideRedis } from '@tokenlease/harness/redis';
import { redisSemaphore } from './compare/redis-deciders.js';
import { timeAsyncCalls, timeCalls, type Timing } from './measure.js';

/**
 * SLOTS_POOL — the concurrency pool the limiter figure leases from: far
 * more slots than the loop holds at once, and a short hold bound (a fresh
 * coordinator holds every slot back for its quiet period plus that bound).
 */
export const SLOTS_POOL = { concurrency: { limit: 100_000, maxHoldMs: 1000 }, leaseTtlMs: 2000, maxLeaseTokens: 1000 };
/** The Redis semaphore's limit and hold bound, as the pool's. */
const SEMAPHORE_LIMIT = 1000;
const SEMAPHORE_HOLD_MS = 60_000;
/** SlotFigures — ns per acquire+release pair through a limiter and on the slot alone, and a Redis semaphore's. */
export interface SlotFigures {
  readonly limiter: Timing;
  readonly slot: Timing;
  readonly redis: Timing;
  /** Where Redis came from, and its URL. */
  readonly redisAt: string;
}

/** waitForSlots — until `limiter` holds at least `slots` free slots; throws after `timeoutMs`. */
async function waitForSlots(limiter: Limiter, slots: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // Asking is using: a refused acquire tells the keeper it wants slots.
    const handle = limiter.acquire();
    if (handle !== 0) limiter.release(handle);
    if (limiter.availableTokens >= slots) return;
    if (Date.now() > deadline) throw new Error(`no lease of ${slots} slots within ${timeoutMs} ms: ${JSON.stringify(limiter.stats())}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** refused — the error of a pair refused while measuring. */
function refused(where: string): Error {
  return new Error(`an acquire was refused ${where} while measuring: the figure would time refusals`);
}

/** limiterPairs — pairs through `limiter` (a concurrency pool's), `batches` batches of 1000. */
export async function limiterPairs(limiter: Limiter, batches: number): Promise<Timing> {
  await waitForSlots(limiter, 10, 15_000);
  return timeCalls(
    (n) => {
      for (let i = 0; i < n; i += 1) {
        const handle = limiter.acquire();
        if (handle === 0) throw refused('by the limiter');
        limiter.release(handle);
      }
    },
    batches,
    1000,
  );
}

/** slotPairs — pairs on a LeaseSlot set up by hand as a live lease of 1000 slots, at a moving caller-read time. */
export function slotPairs(batches: number): Timing {
  const slot = new LeaseSlot('slots');
  Object.assign(slot, { concurrency: true, hasLease: true, balanceTokens: 1000, expiresAtUs: Number.MAX_SAFE_INTEGER });
  slot.holds.holdUs = SEMAPHORE_HOLD_MS * 1000;
  let nowUs = 0;
  return timeCalls(
    (n) => {
      for (let i = 0; i < n; i += 1) {
        nowUs += 1;
        const handle = slot.acquireAt(nowUs);
        if (handle === 0) throw refused('by the slot');
        slot.releaseAt(handle, nowUs);
      }
    },
    batches,
    1000,
  );
}

/** redisPairs — a Redis semaphore's pairs (Lua acquire, ZREM release; compare/redis-deciders.ts), one after another, `batches` batches of `batchSize`. */
export async function redisPairs(batches: number, batchSize: number): Promise<{ timing: Timing; redisAt: string }> {
  const server = await provideRedis();
  try {
    const semaphore = await redisSemaphore(server.url, `tlbench:semaphore:${process.pid}`, SEMAPHORE_LIMIT, SEMAPHORE_HOLD_MS);
    try {
      let member = 0;
      const timing = await timeAsyncCalls(
        async (n) => {
          for (let i = 0; i < n; i += 1) {
            const holder = String((member += 1));
            if (!(await semaphore.acquire(holder))) throw refused('by the Redis semaphore');
            await semaphore.release(holder);
          }
        },
        batches,
        batchSize,
      );
      return { timing, redisAt: `${server.source} ${server.url}` };
    } finally {
      await semaphore.close();
    }
  } finally {
    await server.stop();
  }
}
