/**
 * ListingBudget: how much work `pools` listings may take of a coordinator,
 * so that repeated listings cannot stall it for the agents it serves.
 *
 * Rules:
 * - Work is counted in units of about 10 ns of a 2-core development
 *   machine: a page costs one unit per pool held (each name is compared)
 *   and SUMMARY_WORK_UNITS per pool it shows, its summary and its share of
 *   encoding the reply (pool-list.ts's `listingCost`). Measured there: a
 *   page of 1,000 among 20,001 pools takes about 1 ms to choose and
 *   summarize and 3 ms to encode (248 KB).
 * - The budget holds at most LISTING_WORK_BURST units (about 50 ms of
 *   work, a dozen full pages: what one burst of listings may hold the
 *   event loop for) and refills at LISTING_WORK_PER_US per µs (about 10%
 *   of one core), from full at the start. A full listing of 20,000 pools
 *   (21 pages) then takes under half a second, one of 100,000 about five.
 * - A page is served while the balance is positive, even one that costs
 *   more than the balance: the balance goes below zero and nothing more
 *   is served until refill has paid it back, so the average stays within
 *   the rate whatever the pages cost. A page refused changes nothing and
 *   says in how many ms the balance is positive again.
 * - Exact integers; a time earlier than the last one refills nothing.
 */
import { assertTimeUs } from '@tokenlease/shared';

/** LISTING_WORK_PER_US — units the budget refills per µs (10 per µs: about 100 ms of listing work per second). */
export const LISTING_WORK_PER_US = 10;
/** LISTING_WORK_BURST — the most units the budget holds (about 50 ms of listing work). */
export const LISTING_WORK_BURST = 5_000_000;
/** SUMMARY_WORK_UNITS — what one pool in a page costs, its summary and its share of the encoded reply, in units (about 4 µs). */
export const SUMMARY_WORK_UNITS = 400;

export class ListingBudget {
  private balance = LISTING_WORK_BURST;
  private lastUs: number;

  /** ListingBudget — a full budget, its clock starting at `startUs`. */
  constructor(startUs: number) {
    assertTimeUs(startUs, 'startUs');
    this.lastUs = startUs;
  }

  /**
   * spend — charges `costUnits` (a positive integer) at `nowUs` and returns
   * 0 when the balance is positive; otherwise charges nothing and returns
   * the whole ms (at least 1) until it is.
   */
  spend(costUnits: number, nowUs: number): number {
    assertTimeUs(nowUs);
    if (!Number.isSafeInteger(costUnits) || costUnits < 1) throw new RangeError(`costUnits must be a positive integer, got ${costUnits}`);
    if (nowUs > this.lastUs) {
      this.balance = Math.min(LISTING_WORK_BURST, this.balance + (nowUs - this.lastUs) * LISTING_WORK_PER_US);
      this.lastUs = nowUs;
    }
    if (this.balance <= 0) return Math.max(1, Math.ceil((1 - this.balance) / LISTING_WORK_PER_US / 1000));
    this.balance -= costUnits;
    return 0;
  }
}
