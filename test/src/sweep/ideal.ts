/**
 * idealAdmitted — what one ideal shared bucket (capacity B, refill r, no
 * latency, no leases) admits of the arrivals: the yardstick of utilization.
 *
 * A request that fails fast (tryTake) is admitted when the tokens are there.
 * A request that may wait (take) is admitted as late as its wait allows,
 * earlier only when the bucket would otherwise overflow and waste refill:
 * deferring it never takes a token from a request that cannot wait. For
 * requests of cost 1 this admits the most any limiter could while keeping
 * the envelope; for mixed costs it is a close upper estimate. Exact units.
 */
import { tokenScale, type Rate } from '@tokenlease/shared';
import type { Arrival } from '../sim/workload.js';

interface Pending {
  readonly cost: number;
  readonly deadlineUs: number;
}

export function idealAdmitted(arrivals: readonly Arrival[], capacity: number, rate: Rate): number {
  const scale = tokenScale(capacity, rate);
  const capUnits = scale.capacityUnits;
  let levelUnits = capUnits;
  let lastUs = 0;
  let admitted = 0;
  const pending: Pending[] = []; // sorted by deadline

  const refillTo = (tUs: number): void => {
    if (tUs <= lastUs) return;
    const roomUnits = capUnits - levelUnits;
    levelUnits += tUs - lastUs >= Math.ceil(roomUnits / scale.unitsPerUs) ? roomUnits : (tUs - lastUs) * scale.unitsPerUs;
    lastUs = tUs;
  };
  const admit = (cost: number): boolean => {
    const units = cost * scale.unitsPerToken;
    if (levelUnits < units) return false;
    levelUnits -= units;
    admitted += cost;
    return true;
  };
  // Moves time forward to `toUs`, admitting waiting requests at their
  // deadlines, or earlier when the bucket fills up.
  const advance = (toUs: number): void => {
    for (let head = pending[0]; head !== undefined; head = pending[0]) {
      const fullAtUs = levelUnits >= capUnits ? lastUs : lastUs + Math.ceil((capUnits - levelUnits) / scale.unitsPerUs);
      const atUs = Math.min(fullAtUs, head.deadlineUs);
      if (atUs > toUs) break;
      refillTo(atUs);
      pending.shift();
      admit(head.cost);
    }
    if (Number.isFinite(toUs)) refillTo(toUs);
  };

  for (const a of arrivals) {
    advance(a.tUs);
    if (a.cost > capacity) continue;
    if (a.waitMs === 0) {
      admit(a.cost);
      continue;
    }
    const item = { cost: a.cost, deadlineUs: a.tUs + a.waitMs * 1000 };
    let i = pending.length;
    while (i > 0 && (pending[i - 1] as Pending).deadlineUs > item.deadlineUs) i -= 1;
    pending.splice(i, 0, item);
  }
  advance(Infinity);
  return admitted;
}
