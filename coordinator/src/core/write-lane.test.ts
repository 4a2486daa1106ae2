/** WriteLane: write before reply, group commit, and what fenced or failed writes turn replies into. */
import { describe, expect, it } from 'vitest';
import type { Reply } from '@tokenlease/shared';
import type { Delivery } from './chunk-grant.js';
import { routeCatchAll } from './ownership.js';
import type { PoolChanges } from './pool-state.js';
import { WriteLane, type ChangeSource, type LaneStep } from './write-lane.js';

const grant = (to: string, seq: number): Delivery<string> => ({
  to,
  reply: {
    v: 2,
    kind: 'grant',
    seq,
    leaseId: 'l',
    tokensGranted: 1,
    tokensHeld: 1,
    ttlMs: 1000,
    epoch: 1,
    maxLeaseTokens: 5,
    capacityTokens: 10,
    refillTokens: 1000,
    refillPeriodMs: 1000,
    retryAfterMs: 0,
  },
});
const stale = (to: string): Delivery<string> => ({
  to,
  reply: { v: 2, kind: 'error', seq: 1, code: 'stale-sequence', fault: 'peer', message: 'old', retryAfterMs: 0 },
});

/** Source — changes numbered as they are made; a requeue puts them back. */
class Source implements ChangeSource {
  changed = 0;
  requeued: PoolChanges[] = [];
  takeChanges(): PoolChanges | null {
    if (this.changed === 0) return null;
    const changes = { levelTokens: this.changed, upserts: [], removes: [] };
    this.changed = 0;
    return changes;
  }
  requeueChanges(changes: PoolChanges): void {
    this.requeued.push(changes);
  }
}

const sent = (step: LaneStep<string>): Array<[string, string]> =>
  step.send.flatMap((b) => b.deliveries.map((d): [string, string] => [d.to, codeOf(d.reply)]));
const codeOf = (r: Reply): string => (r.kind === 'error' ? r.code : r.kind);

describe('WriteLane', () => {
  it('holds replies until their write lands, and groups what piles up meanwhile into the next write', () => {
    const lane = new WriteLane<string>();
    const src = new Source();
    src.changed = 1;
    const first = lane.submit({ deliveries: [grant('a', 1)], producedUs: 1 }, src, true);
    expect([sent(first), first.write?.levelTokens]).toEqual([[], 1]);
    src.changed = 2;
    expect(sent(lane.submit({ deliveries: [grant('b', 1)], producedUs: 2 }, src, true))).toEqual([]);
    expect(lane.submit({ deliveries: [grant('c', 1)], producedUs: 3 }, src, true).write).toBeNull();
    const second = lane.landed('written', src, true);
    expect(sent(second)).toEqual([['a', 'grant']]);
    expect(second.write?.levelTokens).toBe(2);
    expect(sent(lane.landed('written', src, true))).toEqual([
      ['b', 'grant'],
      ['c', 'grant'],
    ]);
    expect(lane.writing).toBe(false);
  });

  it('sends a batch with nothing to write at once', () => {
    const lane = new WriteLane<string>();
    expect(sent(lane.submit({ deliveries: [stale('a')], producedUs: 1 }, new Source(), true))).toEqual([['a', 'stale-sequence']]);
  });

  it('turns grants covered by a fenced write, and every later one, into not-owner, and says to step down', () => {
    const lane = new WriteLane<string>();
    const src = new Source();
    src.changed = 1;
    lane.submit({ deliveries: [grant('a', 1), stale('x')], producedUs: 1 }, src, true);
    const step = lane.landed('fenced', src, true);
    expect([sent(step), step.stepDown]).toEqual([
      [
        ['a', 'not-owner'],
        ['x', 'stale-sequence'],
      ],
      true,
    ]);
    src.changed = 1;
    const later = lane.submit({ deliveries: [grant('b', 2)], producedUs: 2 }, src, true);
    expect([sent(later), later.write, src.changed]).toEqual([[['b', 'not-owner']], null, 1]);
  });

  it('turns grants of an unanswered write into unavailable and puts its changes back', () => {
    const lane = new WriteLane<string>();
    const src = new Source();
    src.changed = 7;
    lane.submit({ deliveries: [grant('a', 1)], producedUs: 1 }, src, true);
    const step = lane.landed('unavailable', src, true);
    expect([sent(step), step.stepDown, src.requeued.map((c) => c.levelTokens)]).toEqual([[['a', 'unavailable']], false, [7]]);
    expect(lane.isFenced).toBe(false);
  });

  it('refuses grants as not-owner and writes nothing when the process does not own the pool', () => {
    const src = new Source();
    src.changed = 1;
    const step = new WriteLane<string>().submit({ deliveries: [grant('a', 1)], producedUs: 1 }, src, false);
    expect([sent(step), step.write, src.changed]).toEqual([[['a', 'not-owner']], null, 1]);
  });
});

describe('routeCatchAll', () => {
  it.each([
    [null, null, false, false, 'refuse'],
    ['nosuch', null, false, false, 'refuse'],
    ['api', 'fixed', false, false, 'ignore'],
    ['tenant:a', 'template', true, false, 'serve'],
    ['tenant:a', 'template', false, true, 'serve'],
    ['tenant:a', 'template', false, false, 'claim'],
  ] as const)('%s (%s, held %s, status %s) → %s', (pool, kind, held, status, route) => {
    expect(routeCatchAll(pool, kind, held, status)).toBe(route);
  });
});
