/**
 * OwnershipDriver at fixed instants (µs), its store answered by hand: what
 * it claims and subscribes on a heartbeat, that a hand-over releases only
 * once the pool's write settled, that a fenced write steps the ownership
 * down, what the catch-all does with a configured pool's request, and stop.
 *
 * Member "m1" alone (or with "m2"); pool "p" (the standard pool), template
 * "tenant:*"; ownership TTL 3 s (heartbeat every second).
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor } from '@tokenlease/shared';
import { parseCoordinatorConfig, type CoordinatorConfig } from './config.js';
import type { OwnershipCommand } from './ownership-commands.js';
import { OwnershipDriver } from './ownership-driver.js';
import type { StoreCall, StoreResult } from './ownership-store.js';
import { CATCH_ALL_UNIT, preferredOwner } from './ownership.js';
import { MS, S, STANDARD_POOL_FIELDS, acquireOf } from './pool.fixtures.js';

type Command = OwnershipCommand<string>;

const config = parseCoordinatorConfig('ownership-driver.test.yaml', {
  quietPeriodMs: 1000,
  pools: { p: STANDARD_POOL_FIELDS },
  templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, maxLeaseTokens: 5 } },
});

/** Loop — the driver and the commands it gave that wait for an answer. */
class Loop {
  readonly driver: OwnershipDriver<string>;
  readonly seen: Command[] = [];
  private readonly calls: Array<{ ticket: number; call: StoreCall }> = [];
  private readonly tickets: number[] = [];

  constructor(served: CoordinatorConfig = config) {
    this.driver = new OwnershipDriver<string>({ config: served, member: 'm1', ownershipTtlMs: 3000, startUs: 0 });
  }

  /** Set: bus probes get no answer (the bus is cut); else each is answered at once. */
  silentBus = false;
  /** Probes left unanswered while the bus was silent. */
  readonly probes: number[] = [];

  take(commands: Command[]): Command[] {
    this.seen.push(...commands);
    const answered: number[] = [];
    for (const c of commands) {
      if (c.kind === 'store') this.calls.push(c);
      if (c.kind === 'unsubscribe' || c.kind === 'flush-bus') this.tickets.push(c.ticket);
      if (c.kind === 'probe-bus') (this.silentBus ? this.probes : answered).push(c.ticket);
    }
    for (const t of answered) this.take(this.driver.done(t, this.driver.lastEventUs, true));
    return commands;
  }

  /** calls — the store calls of `op` waiting for an answer. */
  waiting(op: StoreCall['op']): StoreCall[] {
    return this.calls.filter((c) => c.call.op === op).map((c) => c.call);
  }

  /** answer — answers the first waiting call of `op` with `value`; the commands that made. */
  answer(op: StoreCall['op'], value: unknown, nowUs: number): Command[] {
    const i = this.calls.findIndex((c) => c.call.op === op);
    const [c] = this.calls.splice(i, 1);
    if (c === undefined) throw new Error(`no ${op} waits`);
    return this.take(this.driver.stored(c.ticket, { ok: true, value } as StoreResult, nowUs));
  }

  /** fail — the first waiting call of `op` fails (the store did not answer); the commands that made. */
  fail(op: StoreCall['op'], nowUs: number): Command[] {
    const i = this.calls.findIndex((c) => c.call.op === op);
    const [c] = this.calls.splice(i, 1);
    if (c === undefined) throw new Error(`no ${op} waits`);
    return this.take(this.driver.stored(c.ticket, { ok: false, error: new Error('command timed out') }, nowUs));
  }

  /** busDone — every unsubscribe and bus flush waiting ends now. */
  busDone(nowUs: number): void {
    for (const t of this.tickets.splice(0)) this.take(this.driver.done(t, nowUs));
  }

  /** own — started alone at 0: owns "p" (epoch 5, level 100) and the catch-all (epoch 9). */
  own(): void {
    this.take(this.driver.start(0));
    this.answer('heartbeat', { members: ['m1'], droppedImpossible: 0 }, 0);
    this.answer('claim', { taken: true, epoch: 5, state: { levelTokens: 100, leases: [] }, clearedOwner: false }, 0);
    this.answer('claim', { taken: true, epoch: 9, state: null, clearedOwner: false }, 0);
    this.busDone(0);
  }
}

const acquire = (agentId: string, seq: number, pool = 'p'): [string, Uint8Array] => {
  const req = acquireOf({ agentId, seq, pool });
  return [subjectFor('tokenlease', 'acquire', pool), encodeMessage(req)];
};
const of = <K extends Command['kind']>(commands: readonly Command[], kind: K): Array<Extract<Command, { kind: K }>> =>
  commands.filter((c): c is Extract<Command, { kind: K }> => c.kind === kind);

describe('OwnershipDriver', () => {
  it('claims the units it is preferred for on the first heartbeat and subscribes each as its kind says', () => {
    const loop = new Loop();
    loop.own();
    expect(loop.driver.ownedEpochs()).toEqual(
      new Map([
        ['p', 5],
        [CATCH_ALL_UNIT, 9],
      ]),
    );
    expect(of(loop.seen, 'subscribe').map((s) => [s.key, s.subject, s.queueGroup])).toEqual([
      ['*v1', 'tokenlease.v1.>', 'tokenlease-catch-all'],
      ['p', 'tokenlease.v2.*.p.*', 'tokenlease-owner.5'],
      [CATCH_ALL_UNIT, 'tokenlease.v2.*.*.*', 'tokenlease-catch-all'],
    ]);
    expect(of(loop.seen, 'log').filter((l) => l.line.fields['event'] === 'pool-owned')).toHaveLength(2);
    expect(loop.driver.serving()).toBe(true);
  });

  it('sends a grant only once its write landed, and steps the ownership down when the write is fenced', () => {
    const loop = new Loop();
    loop.own();
    const sent = loop.take(loop.driver.message('p', ...acquire('a1', 1), 'a1#1', 2 * S));
    expect(of(sent, 'send')).toEqual([]);
    expect(loop.waiting('write')).toMatchObject([{ unit: 'p', epoch: 5 }]);
    const landed = loop.answer('write', true, 2 * S + 5 * MS);
    expect(of(landed, 'send').flatMap((s) => s.deliveries.map((d) => d.reply.kind))).toEqual(['grant']);
    loop.take(loop.driver.message('p', ...acquire('a2', 1), 'a2#1', 3 * S));
    const fenced = loop.answer('write', false, 3 * S + 5 * MS);
    expect(of(fenced, 'send').flatMap((s) => s.deliveries.map((d) => d.reply.kind === 'error' && d.reply.code))).toEqual(['not-owner']);
    expect(of(fenced, 'log').map((l) => l.line.fields['event'])).toContain('stepped-down');
    expect(loop.driver.ownedEpochs().has('p')).toBe(false);
    expect(of(fenced, 'unsubscribe').map((u) => u.key)).toEqual(['p']);
  });

  it('hands a pool over only once its write in flight settled: the release waits for the outcome', () => {
    const loop = new Loop();
    loop.own();
    loop.take(loop.driver.message('p', ...acquire('a1', 1), 'a1#1', 2 * S));
    // A member preferred for "p" joins: the next heartbeat hands "p" over.
    const other = ['m2', 'm3', 'm4', 'm5'].find((m) => preferredOwner('p', ['m1', m]) === m) as string;
    loop.take(loop.driver.tick(3 * S));
    loop.answer('heartbeat', { members: ['m1', other], droppedImpossible: 0 }, 3 * S);
    loop.answer('renew', true, 3 * S);
    loop.answer('renew', true, 3 * S);
    loop.busDone(3 * S);
    const releases = (): StoreCall[] => loop.waiting('release').filter((c) => 'unit' in c && c.unit === 'p');
    expect(releases()).toEqual([]);
    expect(loop.driver.ownedEpochs().get('p')).toBe(5);
    const landed = loop.answer('write', true, 3 * S + 10 * MS);
    expect(of(landed, 'send').flatMap((s) => s.deliveries.map((d) => d.reply.kind))).toEqual(['grant']);
    expect(releases()).toEqual([{ op: 'release', unit: 'p', epoch: 5 }]);
    expect(loop.driver.ownedEpochs().has('p')).toBe(false);
  });

  it('answers a configured pool’s request on the catch-all not-owner when the store names no owner, and leaves it when it names one', () => {
    const loop = new Loop();
    loop.own();
    loop.take(loop.driver.message(CATCH_ALL_UNIT, ...acquire('a1', 1), 'a1#1', 2 * S));
    expect(loop.waiting('owner-of')).toEqual([{ op: 'owner-of', unit: 'p' }]);
    const none = loop.answer('owner-of', null, 2 * S);
    expect(of(none, 'send').map((s) => s.deliveries[0]?.reply)).toMatchObject([{ kind: 'error', code: 'not-owner', retryAfterMs: 1000 }]);
    loop.take(loop.driver.message(CATCH_ALL_UNIT, ...acquire('a1', 2), 'a1#2', 2 * S));
    expect(of(loop.answer('owner-of', 'm2', 2 * S), 'send')).toEqual([]);
    // Trusted for OWNER_SEEN_US: the store is not asked again.
    loop.take(loop.driver.message(CATCH_ALL_UNIT, ...acquire('a1', 3), 'a1#3', 2 * S + 100 * MS));
    expect(loop.waiting('owner-of')).toEqual([]);
  });

  it('claims a template pool on its first request; requests meanwhile wait for that one claim', () => {
    const loop = new Loop();
    loop.own();
    loop.take(loop.driver.message(CATCH_ALL_UNIT, ...acquire('a1', 1, 'tenant:x'), 'a1#1', 2 * S));
    loop.take(loop.driver.message(CATCH_ALL_UNIT, ...acquire('a2', 1, 'tenant:x'), 'a2#1', 2 * S));
    expect(loop.waiting('claim')).toEqual([{ op: 'claim', unit: 'tenant:x', ttlMs: 3000 }]);
    loop.answer('claim', { taken: false, heldForMs: 100 }, 2 * S);
    const refused = of(loop.seen, 'send').flatMap((s) => s.deliveries.map((d) => [d.to, d.reply.kind === 'error' && d.reply.code]));
    expect(refused).toEqual([
      ['a1#1', 'not-owner'],
      ['a2#1', 'not-owner'],
    ]);
  });

  it('counts a template pool claimed for a request as its identity’s: beyond maxPoolsPerIdentity it is refused before any claim', () => {
    const fewPools = parseCoordinatorConfig('ownership-driver.test.yaml', {
      quietPeriodMs: 1000,
      pools: { p: STANDARD_POOL_FIELDS },
      templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000, maxLeaseTokens: 5, maxPools: 4 } },
    });
    const loop = new Loop(fewPools);
    loop.own();
    const ask = (pool: string, identity: string): Command[] => {
      const req = acquireOf({ agentId: `${identity}.a`, seq: 1, pool });
      return loop.take(
        loop.driver.message(CATCH_ALL_UNIT, subjectFor('tokenlease', 'acquire', pool, identity), encodeMessage(req), pool, 2 * S),
      );
    };
    for (const pool of ['tenant:m1', 'tenant:m2']) {
      ask(pool, 'mallory');
      loop.answer('claim', { taken: true, epoch: 11, state: null, clearedOwner: false }, 2 * S);
      loop.busDone(2 * S);
    }
    const refused = of(ask('tenant:m3', 'mallory'), 'send').flatMap((c) => c.deliveries.map((d) => d.reply));
    expect(refused).toMatchObject([{ kind: 'error', code: 'unavailable', fault: 'peer', retryAfterMs: 1000 }]);
    expect(loop.waiting('claim')).toEqual([]);
    // Another identity's request is claimed as before.
    ask('tenant:h1', 'honest');
    expect(loop.waiting('claim')).toEqual([{ op: 'claim', unit: 'tenant:h1', ttlMs: 3000 }]);
  });

  it('stops: drains protocol v1, hands every unit over, drops the member, then says stopped', () => {
    const loop = new Loop();
    loop.own();
    loop.take(loop.driver.stop(2 * S));
    expect(loop.waiting('release')).toEqual([]);
    loop.busDone(2 * S); // protocol v1's subscription drained: then the hand-overs start
    loop.busDone(2 * S);
    expect(loop.waiting('release').map((c) => 'unit' in c && c.unit)).toEqual(['p', CATCH_ALL_UNIT]);
    loop.answer('release', true, 2 * S);
    loop.answer('release', true, 2 * S);
    expect(loop.waiting('heartbeat')).toEqual([{ op: 'heartbeat', ttlMs: 0 }]);
    expect(of(loop.answer('heartbeat', { members: [], droppedImpossible: 0 }, 2 * S), 'stopped')).toHaveLength(1);
    expect(loop.driver.serving()).toBe(false);
  });

  it('keeps an ownership the store does not answer for while its record must live, and steps it down once it may have lapsed', () => {
    const loop = new Loop();
    loop.own(); // claimed by calls sent at 0; ownership TTL 3 s, a heartbeat every second
    /** beat — the heartbeat at `atUs`, the store answering it and each renewal (`renews`: true) or not; what the renewals made. */
    const beat = (atUs: number, renews: boolean): Command[] => {
      loop.take(loop.driver.tick(atUs));
      if (renews) loop.answer('heartbeat', { members: ['m1'], droppedImpossible: 0 }, atUs);
      else loop.fail('heartbeat', atUs);
      const made: Command[] = [];
      while (loop.waiting('renew').length > 0) made.push(...(renews ? loop.answer('renew', true, atUs) : loop.fail('renew', atUs)));
      return made;
    };
    expect(of(beat(1 * S, true), 'unsubscribe')).toEqual([]); // renewed by calls sent at 1 s: its record lives to 4 s at most
    expect(of(beat(2 * S, false), 'unsubscribe')).toEqual([]);
    expect(of(beat(3 * S, false), 'unsubscribe')).toEqual([]);
    expect(loop.driver.ownedEpochs().has('p')).toBe(true);
    const lapsed = beat(4 * S, false);
    expect(of(lapsed, 'unsubscribe').map((u) => u.key)).toEqual(['p', CATCH_ALL_UNIT]);
    const down = of(lapsed, 'log').filter((l) => l.line.fields['event'] === 'stepped-down');
    expect(down.map((l) => l.line.fields['pool'])).toEqual(['p', CATCH_ALL_UNIT]);
    expect(down[0]?.line.fields['reason']).toMatch(/has not renewed the ownership for one ownership TTL/);
    expect(loop.driver.ownedEpochs().size).toBe(0);
  });

  it('steps out when its bus answers no probe for an ownership TTL: every unit handed over without draining, the member dropped, nothing claimed until the bus answers', () => {
    const loop = new Loop();
    loop.own();
    loop.silentBus = true; // from here no probe is answered; the store answers everything
    const beat = (atUs: number): Command[] => {
      const made = loop.take(loop.driver.tick(atUs));
      if (loop.waiting('heartbeat').length > 0) made.push(...loop.answer('heartbeat', { members: ['m1'], droppedImpossible: 0 }, atUs));
      while (loop.waiting('renew').length > 0) made.push(...loop.answer('renew', true, atUs));
      return made;
    };
    expect(of([...beat(1 * S), ...beat(2 * S)], 'unsubscribe')).toEqual([]);
    const out = beat(3 * S);
    expect(of(out, 'log').filter((l) => l.line.fields['event'] === 'bus-lost')).toMatchObject([
      { line: { fields: { silentMs: 3000, units: 2 } } },
    ]);
    expect(of(out, 'unsubscribe').map((u) => [u.key, u.drain])).toEqual([
      ['p', false],
      [CATCH_ALL_UNIT, false],
    ]);
    loop.busDone(3 * S);
    expect(loop.waiting('release').map((c) => 'unit' in c && c.unit)).toEqual(['p', CATCH_ALL_UNIT]);
    loop.answer('release', true, 3 * S);
    loop.answer('release', true, 3 * S);
    expect(loop.waiting('heartbeat')).toEqual([{ op: 'heartbeat', ttlMs: 0 }]);
    loop.answer('heartbeat', { members: [], droppedImpossible: 0 }, 3 * S);
    expect(loop.driver.ownedEpochs().size).toBe(0);
    expect(loop.driver.serving()).toBe(false);
    // Silent still: no heartbeat, no renewal, no claim; one probe waits all along.
    beat(4 * S);
    beat(5 * S);
    expect(loop.waiting('heartbeat')).toEqual([]);
    expect(loop.waiting('claim')).toEqual([]);
    expect(loop.probes).toHaveLength(1);
    // The probe is answered: it takes part again at once.
    loop.silentBus = false;
    const back = loop.take(loop.driver.done(loop.probes[0] as number, 5 * S + 500 * MS, true));
    expect(of(back, 'log').map((l) => l.line.fields['event'])).toContain('bus-back');
    loop.answer('heartbeat', { members: ['m1'], droppedImpossible: 0 }, 5 * S + 500 * MS);
    expect(loop.waiting('claim').map((c) => 'unit' in c && c.unit)).toEqual(['p', CATCH_ALL_UNIT]);
    expect(loop.driver.serving()).toBe(true);
  });

  it('does not take its own stall for the bus’s silence: after 5 s without a heartbeat, the first one renews as usual', () => {
    const loop = new Loop();
    loop.own();
    loop.silentBus = true; // this beat's probe is not answered yet; the one before the stall was
    const out = loop.take(loop.driver.tick(5 * S));
    expect(of(out, 'log').map((l) => l.line.fields['event'])).not.toContain('bus-lost');
    expect(loop.waiting('heartbeat')).toEqual([{ op: 'heartbeat', ttlMs: 3000 }]);
  });
});
