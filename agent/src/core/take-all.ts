/**
 * takeAllAt — all-or-nothing admission across several pools, e.g. a global
 * pool and a tenant pool charged together or not at all.
 *
 * Rules: one clock reading for every part; nothing is spent unless every
 * part can be; a denial is recorded on the first part that cannot be
 * admitted (its `lastDenial` says why) and no other part changes; a bad
 * cost throws before anything is spent; the same pool twice is refused
 * (its parts would each fit alone and not together). Synchronous, no
 * allocation, no lookup: callers keep their charge list and reuse it.
 *
 * A part whose pool is in shadow mode never denies the whole: when every
 * enforced part can be admitted, it is taken as `tryTake` takes it in
 * shadow mode (spent if it fits, else a would-be denial counted on it and
 * admitted); when an enforced part cannot, the denial is recorded there
 * and the shadowed parts change as little as the others.
 *
 * Receipts: given an array `receipts` (kept and reused by the caller, as
 * the charge list), an admission writes each part's receipt at its index
 * (LeaseSlot.takeReceiptAt); `giveBackAllAt` gives every part back under
 * its receipt, each pool by its own refund rules. A denial writes none.
 */
import { AgentError } from '../errors.js';
import { RECEIPT_DENIED, type LeaseSlot } from './lease-slot.js';

/** SlotCharge — one part: the limiter (anything holding the pool's slot) and the cost in tokens. */
export interface SlotCharge {
  readonly limiter: { readonly slot: LeaseSlot };
  readonly cost: number;
}

/**
 * takeAllAt — -1 when every part was admitted at `nowUs`, else the index of
 * the part that was denied. With `receipts`, an admission writes each
 * part's receipt at its index.
 */
export function takeAllAt(charges: readonly SlotCharge[], nowUs: number, receipts?: number[]): number {
  const count = charges.length;
  for (let i = 0; i < count; i += 1) {
    const charge = charges[i] as SlotCharge;
    for (let j = 0; j < i; j += 1) {
      if ((charges[j] as SlotCharge).limiter.slot === charge.limiter.slot) {
        throw new AgentError('invalid-argument', `pool ${charge.limiter.slot.pool} is charged twice; charge it once with the summed cost`, {
          pool: charge.limiter.slot.pool,
        });
      }
    }
    const slot = charge.limiter.slot;
    if (slot.canTakeAt(charge.cost, nowUs)) continue;
    if (!slot.shadowAt(nowUs)) {
      slot.takeAt(charge.cost, nowUs); // records why (or throws for a bad cost); spends nothing
      return i;
    }
    slot.checkCost(charge.cost); // a shadowed part is admitted below, but never at a bad cost
  }
  for (let i = 0; i < count; i += 1) {
    const charge = charges[i] as SlotCharge;
    if (receipts === undefined) charge.limiter.slot.takeAt(charge.cost, nowUs);
    else receipts[i] = charge.limiter.slot.takeReceiptAt(charge.cost, nowUs);
  }
  return -1;
}

/**
 * noteArrivalsAt — records one arrival of every part whose pool is recorded
 * (LeaseSlot.arrivals) at `nowUs`: a call of `tryTakeAll` or `takeAll`,
 * once, whatever it decided. No allocation.
 */
export function noteArrivalsAt(charges: readonly SlotCharge[], nowUs: number): void {
  for (let i = 0; i < charges.length; i += 1) {
    const charge = charges[i] as SlotCharge;
    const arrivals = charge.limiter.slot.arrivals;
    if (arrivals !== null) arrivals.note(charge.cost, nowUs);
  }
}

/**
 * giveBackAllAt — gives each part of an admission back at `nowUs` under its
 * receipt (`receipts[i]`, from `takeAllAt`); each pool gives back what its
 * refund rules allow (LeaseSlot.giveBackAt). Returns the tokens given back
 * over all parts. Throws AgentError('invalid-argument') for a bad cost,
 * before anything is given back.
 */
export function giveBackAllAt(charges: readonly SlotCharge[], receipts: readonly number[], nowUs: number): number {
  for (const charge of charges) charge.limiter.slot.checkCost(charge.cost);
  let tokens = 0;
  for (let i = 0; i < charges.length; i += 1) {
    const charge = charges[i] as SlotCharge;
    tokens += charge.limiter.slot.giveBackAt(charge.cost, receipts[i] ?? RECEIPT_DENIED, nowUs);
  }
  return tokens;
}
