/**
 * AgentDriver property: random interleavings, over two pools and two
 * prefixes, of time passing, ticks, admissions (whose low signals wake),
 * honest grants, error replies, failures (timeouts, no responders), stale
 * replies, releases, sweeps, close and stop. Checked after every event:
 *
 * - every request goes to `<prefix>.v2.<op>.<pool>.<identity>` with the
 *   prefix its pool's route names now, one of the agent's;
 * - a timer is at most `KEEPER_TICK_MS_MAX` away, at least 1 ms, on whole
 *   ms from the event; none is set for a keeper with nothing to do;
 * - a pool dropped is out of the driver, and sends nothing until revived;
 * - once closing, no new acquire leaves (a retry of one already out may:
 *   the keeper abandons it only when it fails again); `settled` is said at
 *   most once, and only once every keeper has settled;
 * - after `stop` no event yields any command.
 *
 * `SEED=<n> npx vitest run src/core/agent-driver-property.test.ts` replays a run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Reply } from '@tokenlease/shared';
import { propertySeed } from '@tokenlease/shared/testing';
import { AgentDriver, KEEPER_TICK_MS_MAX, type AgentCommand, type AgentPool, type PoolWaiters } from './agent-driver.js';
import { keeperOptions } from './keeper-options.js';
import { BASE, grantFor, TEST_SECRET, testIdSuffix } from './lease-keeper.fixtures.js';

class Waiters implements PoolWaiters {
  waiting = false;
  serveWaiters(): void {}
  cancelWaiters(): void {}
}

type Command = AgentCommand<Waiters>;
type Send = Extract<Command, { type: 'send' }>;

type Kind = 'tick' | 'take' | 'grant' | 'stale' | 'wake' | 'error' | 'failure' | 'release' | 'sweep' | 'close' | 'stop';

/** One event, `dtUs` after the last; `pool`, `cost` and the codes count where its kind needs them. */
interface Step {
  readonly kind: Kind;
  readonly dtUs: number;
  readonly pool: number;
  readonly cost: number;
  readonly errorCode: 'unavailable' | 'unknown-pool';
  readonly failureCode: 'bus-timeout' | 'bus-no-responders';
}

const PREFIXES = ['relay', 'root'];
const NAMES = ['pool-a', 'pool-b'];
const IDLE_MS = 2000;
const T0 = 1_000_000_000;

const dtUs = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 5_000 }) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 200_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 4_000_000 }) },
);
const KIND_WEIGHTS: readonly (readonly [Kind, number])[] = [
  ['tick', 6],
  ['take', 6],
  ['grant', 6],
  ['stale', 1],
  ['wake', 1],
  ['error', 2],
  ['failure', 3],
  ['release', 1],
  ['sweep', 1],
  ['close', 1],
  ['stop', 1],
];
const step: fc.Arbitrary<Step> = fc.record({
  kind: fc.oneof(...KIND_WEIGHTS.map(([kind, weight]) => ({ weight, arbitrary: fc.constant(kind) }))),
  dtUs,
  pool: fc.integer({ min: 0, max: NAMES.length - 1 }),
  cost: fc.integer({ min: 1, max: 8 }),
  errorCode: fc.constantFrom('unavailable' as const, 'unknown-pool' as const),
  failureCode: fc.constantFrom('bus-timeout' as const, 'bus-no-responders' as const),
});

/** The driver under test, what is in flight per pool, and what its commands may be checked against. */
class Run {
  readonly driver = new AgentDriver<Waiters>({
    agentId: 'agent-p',
    identity: 'svc',
    prefixes: PREFIXES,
    keeper: keeperOptions(BASE),
    limiterIdleMs: IDLE_MS,
    secret: TEST_SECRET,
    random: () => 0.5,
    idSuffix: testIdSuffix(),
  });
  readonly pools: AgentPool<Waiters>[];
  /** The last request sent per pool, its answer still owed. */
  readonly inFlight = new Map<AgentPool<Waiters>, Send>();
  /** The sequence numbers of every acquire sent before the close. */
  private readonly acquiredSeqs = new Set<number>();
  nowUs = T0;
  closing = false;
  stopped = false;
  settledSaid = 0;

  constructor() {
    this.pools = NAMES.map((name) => this.driver.open(name, {}, () => new Waiters()));
    for (const p of this.pools) {
      p.keeper.slot.onLow = () => this.check(this.driver.wake(p));
      this.check(this.driver.start(p, this.nowUs));
    }
  }

  play(s: Step): void {
    this.nowUs += s.dtUs;
    if (s.kind === 'sweep') return this.check(this.driver.sweep(this.nowUs));
    if (s.kind === 'close') {
      this.closing = true;
      return this.check(this.driver.close(this.nowUs));
    }
    if (s.kind === 'stop') {
      this.closing = this.stopped = true;
      this.driver.stop();
      return;
    }
    const p = this.pools[s.pool] as AgentPool<Waiters>;
    const live = this.driver.get(p.name) === p;
    if (!live && (s.kind === 'take' || s.kind === 'wake')) {
      // Use revives a dropped limiter, as the Agent does.
      const revived = this.driver.revive(p);
      if (revived !== null) this.check(revived);
    }
    this.event(p, s);
  }

  private event(p: AgentPool<Waiters>, s: Step): void {
    const now = this.nowUs;
    const sent = this.inFlight.get(p);
    if (s.kind === 'tick') return this.check(this.driver.tick(p, now));
    if (s.kind === 'take') {
      p.keeper.slot.takeAt(s.cost, now);
      return;
    }
    if (s.kind === 'wake') return this.check(this.driver.wake(p));
    if (s.kind === 'release') return this.check(this.driver.release(p, now));
    if (s.kind === 'stale') return this.check(this.driver.answered(p, 1, { v: 2, kind: 'receipt', seq: 1, tokensReturned: 0 }, now));
    if (sent === undefined) return;
    this.inFlight.delete(p);
    if (s.kind === 'failure') return this.check(this.driver.failed(p, sent.seq, s.failureCode, s.failureCode, now));
    this.check(this.driver.answered(p, sent.seq, this.answer(sent, s), now));
  }

  private answer(sent: Send, s: Step): Reply {
    const seq = sent.seq;
    const code = s.errorCode;
    if (s.kind === 'error') return { v: 2, kind: 'error', seq, code, fault: 'coordinator', message: code, retryAfterMs: 0 };
    if (sent.message.op === 'return') return { v: 2, kind: 'receipt', seq, tokensReturned: sent.message.tokensLeft };
    return grantFor(sent.message, { ttlMs: 2000 });
  }

  /** check — the commands of one event, against the rules. */
  check(out: readonly Command[]): void {
    if (this.stopped) expect(out, 'a command after stop').toEqual([]);
    for (const c of out) {
      if (c.type === 'send' || c.type === 'publish') {
        expect(this.driver.get(c.pool.name), 'a send of a dropped pool').toBe(c.pool);
        const prefix = c.pool.route.prefix;
        expect(PREFIXES).toContain(prefix);
        expect(c.subject).toBe(`${prefix}.v2.${c.message.op}.${c.pool.name}.svc`);
        const acquire = c.message.op === 'acquire';
        if (acquire && this.closing) expect(this.acquiredSeqs.has(c.message.seq), 'a new acquire while closing').toBe(true);
        if (acquire && !this.closing) this.acquiredSeqs.add(c.message.seq);
      }
      if (c.type === 'send') this.inFlight.set(c.pool, c);
      if (c.type === 'wake-at') this.checkWake(c);
      if (c.type === 'drop') expect(this.driver.get(c.pool.name)).toBeUndefined();
      if (c.type === 'settled') {
        this.settledSaid += 1;
        expect(this.closing).toBe(true);
        for (const p of this.driver.running()) expect(p.keeper.settled, `${p.name} not settled`).toBe(true);
      }
    }
    expect(this.settledSaid).toBeLessThanOrEqual(1);
  }

  private checkWake(c: Extract<Command, { type: 'wake-at' }>): void {
    const keeper = c.pool.keeper;
    if (c.atUs === Infinity) {
      const idle = keeper.nextDeadlineUs() === Infinity || (this.closing && keeper.settled);
      expect(idle, 'no timer for a keeper with a deadline').toBe(true);
      return;
    }
    expect(Number.isInteger(c.delayMs)).toBe(true);
    expect(c.delayMs).toBeGreaterThanOrEqual(1);
    expect(c.delayMs).toBeLessThanOrEqual(KEEPER_TICK_MS_MAX);
    expect(c.atUs).toBe(this.nowUs + c.delayMs * 1000);
  }
}

describe('AgentDriver property', () => {
  // A few seconds of CPU: the runner's timeout is not a speed target.
  it('sends where the route says, ticks within bounds, drops, closes and stops as its rules say', { timeout: 60_000 }, () => {
    const seed = propertySeed('src/core/agent-driver-property.test.ts');
    let settledRuns = 0;
    fc.assert(
      fc.property(fc.array(step, { maxLength: 150, size: 'max' }), (steps) => {
        const run = new Run();
        for (const s of steps) run.play(s);
        if (run.settledSaid > 0) settledRuns += 1;
      }),
      { seed, numRuns: 200 },
    );
    expect(settledRuns, 'no run closed and settled').toBeGreaterThan(0);
  });
});
