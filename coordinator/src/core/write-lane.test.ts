/** WriteLane: write before reply, group commit, what fenced or failed writes turn replies into, and lanes of ended ownerships. */
import { describe, expect, it } from 'vitest';
import type { Reply } from '@tokenlease/shared';
import type { Delivery } from './chunk-grant.js';
import { routeCatchAll } from './ownership.js';
import type { PoolChanges } from './pool-state.js';
import { WriteLane, type ChangeSource, type LaneStep, type WriteOutcome } from './write-lane.js';

const grant = (to: string, seq: number, epoch = 1): Delivery<string> => ({
  to,
  reply: {
    v: 2,
    kind: 'grant',
    seq,
    leaseId: 'l',
    tokensGranted: 1,
    tokensHeld: 1,
    ttlMs: 1000,
    epoch,
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

/** Source — one pool's changes, numbered as they are made; a requeue puts them back. */
class Source implements ChangeSource {
  changed = 0;
  taken = 0;
  requeued: PoolChanges[] = [];
  takeChanges(): PoolChanges | null {
    if (this.changed === 0) return null;
    const changes = { levelTokens: this.changed, upserts: [], removes: [] };
    this.changed = 0;
    this.taken += 1;
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
    const src = new Source();
    const lane = new WriteLane<string>(3, src);
    src.changed = 1;
    const first = lane.submit({ deliveries: [grant('a', 1)], producedUs: 1 });
    expect([sent(first), first.write]).toEqual([[], { epoch: 3, changes: { levelTokens: 1, upserts: [], removes: [] } }]);
    src.changed = 2;
    expect(sent(lane.submit({ deliveries: [grant('b', 1)], producedUs: 2 }))).toEqual([]);
    expect(lane.submit({ deliveries: [grant('c', 1)], producedUs: 3 }).write).toBeNull();
    const second = lane.landed('written');
    expect(sent(second)).toEqual([['a', 'grant']]);
    expect([second.write?.epoch, second.write?.changes.levelTokens]).toEqual([3, 2]);
    expect(sent(lane.landed('written'))).toEqual([
      ['b', 'grant'],
      ['c', 'grant'],
    ]);
    expect(lane.writing).toBe(false);
  });

  it('sends a batch with nothing to write at once', () => {
    const lane = new WriteLane<string>(1, new Source());
    expect(sent(lane.submit({ deliveries: [stale('a')], producedUs: 1 }))).toEqual([['a', 'stale-sequence']]);
  });

  it('turns grants covered by a fenced write, and every later one, into not-owner, and says to step down', () => {
    const src = new Source();
    const lane = new WriteLane<string>(1, src);
    src.changed = 1;
    lane.submit({ deliveries: [grant('a', 1), stale('x')], producedUs: 1 });
    const step = lane.landed('fenced');
    expect([sent(step), step.stepDown]).toEqual([
      [
        ['a', 'not-owner'],
        ['x', 'stale-sequence'],
      ],
      true,
    ]);
    src.changed = 1;
    const later = lane.submit({ deliveries: [grant('b', 2)], producedUs: 2 });
    expect([sent(later), later.write, src.changed]).toEqual([[['b', 'not-owner']], null, 1]);
  });

  it('turns grants of an unanswered write into unavailable and puts its changes back', () => {
    const src = new Source();
    const lane = new WriteLane<string>(1, src);
    src.changed = 7;
    lane.submit({ deliveries: [grant('a', 1)], producedUs: 1 });
    const step = lane.landed('unavailable');
    expect([sent(step), step.stepDown, src.requeued.map((c) => c.levelTokens)]).toEqual([[['a', 'unavailable']], false, [7]]);
    expect(lane.isFenced).toBe(false);
  });

  it('refuses grants as not-owner and writes nothing when the process does not own the pool', () => {
    const lane = WriteLane.unowned<string>();
    const step = lane.submit({ deliveries: [grant('a', 1), stale('x')], producedUs: 1 });
    expect([sent(step), step.write, lane.ended, lane.epoch]).toEqual([
      [
        ['a', 'not-owner'],
        ['x', 'stale-sequence'],
      ],
      null,
      true,
      0,
    ]);
  });

  it('refuses an epoch that is no epoch', () => {
    for (const epoch of [-1, 1.5, Number.NaN]) expect(() => new WriteLane<string>(epoch, new Source())).toThrow(RangeError);
  });
});

/**
 * Give-up and re-claim: the old ownership's lane (epoch 1, pool object
 * `old`) and the new one's (epoch 2, pool object `fresh`), events in
 * every order the store and the process can produce them. Each row is a
 * timeline; what each lane sent, wrote and asked is checked at the end.
 */
type Event =
  | { readonly at: number; readonly lane: 'old' | 'new'; readonly submit: string; readonly changed?: number }
  | { readonly at: number; readonly lane: 'old' | 'new'; readonly land: WriteOutcome }
  | { readonly at: number; readonly lane: 'old'; readonly end: true };

interface Seen {
  /** What left, as [lane, agent, reply kind or refusal code], in order. */
  readonly sent: Array<[string, string, string]>;
  /** The writes asked for, as [lane, epoch, levelTokens of the changes]. */
  readonly writes: Array<[string, number, number]>;
  /** Lanes that asked their ownership to step down. */
  readonly stepDowns: string[];
  /** Changes given back to each pool object. */
  readonly requeued: { readonly old: number[]; readonly fresh: number[] };
}

function play(events: readonly Event[]): Seen {
  const sources = { old: new Source(), new: new Source() };
  const lanes = { old: new WriteLane<string>(1, sources.old), new: new WriteLane<string>(2, sources.new) };
  const seen: Seen = { sent: [], writes: [], stepDowns: [], requeued: { old: [], fresh: [] } };
  let last = 0;
  for (const e of events) {
    expect(e.at, 'events in time order').toBeGreaterThanOrEqual(last);
    last = e.at;
    const lane = lanes[e.lane];
    let step: LaneStep<string>;
    if ('submit' in e) {
      sources[e.lane].changed = e.changed ?? 0;
      step = lane.submit({ deliveries: [grant(e.submit, e.at, lane.epoch)], producedUs: e.at });
    } else if ('land' in e) step = lane.landed(e.land);
    else step = lane.end();
    for (const [to, code] of sent(step)) seen.sent.push([e.lane, to, code]);
    if (step.write !== null) seen.writes.push([e.lane, step.write.epoch, step.write.changes.levelTokens]);
    if (step.stepDown) seen.stepDowns.push(e.lane);
  }
  seen.requeued.old.push(...sources.old.requeued.map((c) => c.levelTokens));
  seen.requeued.fresh.push(...sources.new.requeued.map((c) => c.levelTokens));
  return seen;
}

describe('WriteLane across a give-up and re-claim', () => {
  // The old lane starts a write of its pool's changes (level 10) for a's grant; b's grant waits behind it.
  const oldWriting: Event[] = [
    { at: 100, lane: 'old', submit: 'a', changed: 10 },
    { at: 200, lane: 'old', submit: 'b', changed: 11 },
  ];
  // The process steps down (the old lane ends) and claims again: the new lane writes its own pool (level 20).
  const reclaimed: Event[] = [
    { at: 300, lane: 'old', end: true },
    { at: 400, lane: 'new', submit: 'c', changed: 20 },
  ];
  const newWrites: Array<[string, number, number]> = [['new', 2, 20]];

  it.each([
    {
      name: 'a slow write (written before the lapse) lands after the new lane wrote',
      events: [...oldWriting, ...reclaimed, { at: 500, lane: 'new', land: 'written' }, { at: 600, lane: 'old', land: 'written' }],
      sent: [
        ['old', 'b', 'not-owner'],
        ['new', 'c', 'grant'],
        ['old', 'a', 'not-owner'],
      ],
    },
    {
      name: 'a write written before the claim lands late, while the new lane writes',
      events: [...oldWriting, ...reclaimed, { at: 450, lane: 'old', land: 'written' }, { at: 500, lane: 'new', land: 'written' }],
      sent: [
        ['old', 'b', 'not-owner'],
        ['old', 'a', 'not-owner'],
        ['new', 'c', 'grant'],
      ],
    },
    {
      name: 'a timeout (unavailable) lands after the re-claim',
      events: [...oldWriting, ...reclaimed, { at: 450, lane: 'old', land: 'unavailable' }, { at: 500, lane: 'new', land: 'written' }],
      sent: [
        ['old', 'b', 'not-owner'],
        ['old', 'a', 'not-owner'],
        ['new', 'c', 'grant'],
      ],
    },
    {
      name: 'a fenced result lands after the new claim, the new write still in flight',
      events: [...oldWriting, ...reclaimed, { at: 450, lane: 'old', land: 'fenced' }, { at: 500, lane: 'new', land: 'written' }],
      sent: [
        ['old', 'b', 'not-owner'],
        ['old', 'a', 'not-owner'],
        ['new', 'c', 'grant'],
      ],
    },
    {
      name: 'a fenced result lands after the new claim and after the new write',
      events: [...oldWriting, ...reclaimed, { at: 500, lane: 'new', land: 'written' }, { at: 900, lane: 'old', land: 'fenced' }],
      sent: [
        ['old', 'b', 'not-owner'],
        ['new', 'c', 'grant'],
        ['old', 'a', 'not-owner'],
      ],
    },
    {
      name: 'the old write lands between the step-down and the new claim',
      events: [
        ...oldWriting,
        { at: 300, lane: 'old', end: true },
        { at: 350, lane: 'old', land: 'unavailable' },
        { at: 400, lane: 'new', submit: 'c', changed: 20 },
        { at: 500, lane: 'new', land: 'written' },
      ],
      sent: [
        ['old', 'b', 'not-owner'],
        ['old', 'a', 'not-owner'],
        ['new', 'c', 'grant'],
      ],
    },
    {
      name: 'the old lane is asked to send after it ended (a tick of the old pool)',
      events: [
        ...oldWriting,
        ...reclaimed,
        { at: 420, lane: 'old', submit: 'd', changed: 12 },
        { at: 500, lane: 'new', land: 'written' },
        { at: 600, lane: 'old', land: 'written' },
      ],
      sent: [
        ['old', 'b', 'not-owner'],
        ['old', 'd', 'not-owner'],
        ['new', 'c', 'grant'],
        ['old', 'a', 'not-owner'],
      ],
    },
  ] as const)('$name: the old outcome changes nothing of the new ownership', ({ events, sent: expected }) => {
    const seen = play(events);
    expect(seen.sent).toEqual(expected);
    // Writes: the old lane's one write under epoch 1 of its own pool, then the new lane's under epoch 2, never the old lane again.
    expect(seen.writes).toEqual([['old', 1, 10], ...newWrites]);
    expect(seen.stepDowns).toEqual([]);
    // Nothing given back to either pool: the old one is gone, and the new one never had those changes.
    expect(seen.requeued).toEqual({ old: [], fresh: [] });
  });

  it.each([
    ['fenced', ['old'], [['old', 'a', 'not-owner']], []],
    ['unavailable', [], [['old', 'a', 'unavailable']], [10]],
    ['written', [], [['old', 'a', 'grant']], []],
  ] as const)('an outcome (%s) that lands before the end still acts on its own ownership', (outcome, stepDowns, firstSent, requeued) => {
    const seen = play([
      { at: 100, lane: 'old', submit: 'a', changed: 10 },
      { at: 200, lane: 'old', land: outcome },
      { at: 300, lane: 'old', end: true },
      { at: 400, lane: 'new', submit: 'c', changed: 20 },
      { at: 500, lane: 'new', land: 'written' },
    ]);
    expect(seen.stepDowns).toEqual(stepDowns);
    expect(seen.sent).toEqual([...firstSent, ['new', 'c', 'grant']]);
    expect(seen.requeued).toEqual({ old: requeued, fresh: [] });
    expect(seen.writes).toEqual([['old', 1, 10], ...newWrites]);
  });

  it('ends once: a second end, and a landing with nothing in flight, return nothing', () => {
    const src = new Source();
    const lane = new WriteLane<string>(1, src);
    src.changed = 1;
    lane.submit({ deliveries: [grant('a', 1)], producedUs: 1 });
    lane.submit({ deliveries: [grant('b', 2)], producedUs: 2 });
    expect(sent(lane.end())).toEqual([['b', 'not-owner']]);
    expect(lane.end()).toEqual({ send: [], write: null, stepDown: false });
    expect(sent(lane.landed('written'))).toEqual([['a', 'not-owner']]);
    expect(lane.landed('written')).toEqual({ send: [], write: null, stepDown: false });
    expect([lane.ended, lane.writing, src.taken]).toEqual([true, false, 1]);
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
