/**
 * AgentDriver: the agent's run loop as a pure state machine. It keeps one
 * lease keeper per pool and decides everything the loop does around them:
 * which subject a request goes to and how long to wait for its answer,
 * when each keeper ticks next, which pool moves to another coordinator,
 * what is news for the service, when an idle limiter is dropped, and when
 * a shutdown is done. Events and `nowUs` (the agent's monotonic clock, µs)
 * go in; commands come out (AgentCommand). The Agent adapter carries them
 * out on the Bus and on timers; the simulator carries out the same
 * commands on its virtual clock and network.
 *
 * Rules:
 * - After every event about a pool its keeper has acted: its sends go out
 *   (to the subjects of its route's prefix now), an unknown-pool refusal is
 *   news once, the calls waiting on its limiter are served, and its next
 *   tick is set.
 * - A keeper that holds a lease or waits for one ticks at least every
 *   `KEEPER_TICK_MS_MAX`, so demand is sampled that often; else at its own
 *   next deadline, rounded up to whole ms and at least 1 ms away. An idle
 *   keeper (quiet, no deadline) holds no timer: the next admission, denial
 *   or waiting call wakes it (`wake`), and its low signal is re-armed so a
 *   denial is news again. A closing keeper that has settled holds none
 *   either.
 * - A request that got no reply and found nobody on its prefix counts
 *   toward moving the pool to the next prefix (prefix-route.ts); a reply of
 *   any kind means a coordinator is there.
 * - A limiter is dropped once it is quiet, nothing waits on it, no denial
 *   is waiting for its tick, and it has been idle `limiterIdleMs` (the sweep, every half of that within
 *   [`SWEEP_MS_MIN`, `SWEEP_MS_MAX`], running only while any limiter is
 *   kept), or at once when its service closed it (`release`) and it has
 *   gone quiet. A dropped limiter comes back on use (`revive`), unless the
 *   agent is closing.
 * - `close` ends every waiting call, returns every lease, and says
 *   `settled` once every keeper has nothing left to send or wait for.
 *   After `stop` nothing acts any more: whatever is unanswered is left to
 *   expire.
 */
import { decodeReply, subjectFor, type LeaseReport, type LeaseRequest, type LeaseReturn, type Reply } from '@tokenlease/shared';
import { keeperOptions, type KeeperOptions } from './keeper-options.js';
import { LeaseKeeper, type GrantVerifier, type SendAction } from './lease-keeper.js';
import { PrefixRoute } from './prefix-route.js';
import { US_PER_MS } from './units.js';

/** KEEPER_TICK_MS_MAX — longest gap between two ticks of a keeper that holds a lease or waits for one, ms. */
export const KEEPER_TICK_MS_MAX = 100;
/** Bounds of the idle sweep's period, ms. */
const SWEEP_MS_MIN = 10;
const SWEEP_MS_MAX = 30_000;

/** DriverEvent — news for the service (the Agent's `onEvent`), decided by the driver. */
export type DriverEvent =
  | { readonly type: 'request-failed'; readonly pool: string; readonly code: string; readonly message: string }
  | { readonly type: 'error-reply'; readonly pool: string; readonly code: string; readonly message: string }
  /** A grant no honest coordinator would send was refused (see grant-check.ts): a rogue responder, or a bug. */
  | { readonly type: 'implausible-grant'; readonly pool: string; readonly message: string }
  /** The coordinator knows no pool of this name (a misspelt name, a missing template): once, until a grant arrives. */
  | { readonly type: 'unknown-pool'; readonly pool: string; readonly message: string }
  /** Nobody answered on the pool's prefix: its requests go to the next of `failoverPrefixes` now (see prefix-route.ts). */
  | { readonly type: 'coordinator-moved'; readonly pool: string; readonly prefix: string };

/**
 * PoolWaiters — the calls waiting on one pool's limiter (`take`, `fits`,
 * `ready`), as the driver sees them: served after every action of the
 * keeper, ended when the agent closes.
 */
export interface PoolWaiters {
  /** serveWaiters — settles every waiting call that can be settled now. */
  serveWaiters(): void;
  /** cancelWaiters — ends every waiting call unadmitted; later ones are refused. */
  cancelWaiters(): void;
  /** waiting — whether any call waits. */
  readonly waiting: boolean;
}

/** AgentPool — one pool the driver runs: its keeper, its route, and the carrier's waiters (`W`). */
export class AgentPool<W extends PoolWaiters = PoolWaiters> {
  readonly route: PrefixRoute;
  /** Limiter.close asked: drop it once its return is settled. */
  dropWhenQuiet = false;
  readonly waiters: W;

  constructor(
    readonly keeper: LeaseKeeper,
    prefixes: readonly string[],
    makeWaiters: (pool: AgentPool<W>) => W,
  ) {
    this.route = new PrefixRoute(prefixes);
    this.waiters = makeWaiters(this);
  }

  get name(): string {
    return this.keeper.pool;
  }
}

/**
 * AgentCommand — what the driver asks its carrier to do:
 * - `send`: request `message` on `subject` and feed the reply (`replied`,
 *   `answered`) or the failure (`failed`) back, tagged with `seq`;
 * - `publish`: send `message` on `subject`, no reply awaited;
 * - `wake-at`: tick the pool at `atUs` (agent clock), `delayMs` from the
 *   instant of the event, replacing the pool's previous timer; `atUs`
 *   Infinity: no timer;
 * - `wake-soon`: tick the pool once the work at hand is done (once however
 *   often asked before then), leaving its timer as it is;
 * - `event`: tell the service;
 * - `drop`: the pool left the driver (idle); keep its timer off;
 * - `sweep-every`: run `sweep` every `periodMs`; null: stop;
 * - `settled`: every return of a close is settled.
 */
export type AgentCommand<W extends PoolWaiters = PoolWaiters> =
  | {
      readonly type: 'send';
      readonly pool: AgentPool<W>;
      readonly subject: string;
      readonly seq: number;
      readonly message: LeaseRequest | LeaseReturn;
      readonly timeoutMs: number;
    }
  | { readonly type: 'publish'; readonly pool: AgentPool<W>; readonly subject: string; readonly message: LeaseReport }
  | { readonly type: 'wake-at'; readonly pool: AgentPool<W>; readonly atUs: number; readonly delayMs: number }
  | { readonly type: 'wake-soon'; readonly pool: AgentPool<W> }
  | { readonly type: 'event'; readonly event: DriverEvent }
  | { readonly type: 'drop'; readonly pool: AgentPool<W> }
  | { readonly type: 'sweep-every'; readonly periodMs: number | null }
  | { readonly type: 'settled' };

/** AgentDriverOptions — who the agent is and how its leases are kept; validated by the caller. */
export interface AgentDriverOptions {
  readonly agentId: string;
  /** The identity token requests go under. */
  readonly identity: string;
  /** Where each pool's requests go, in the order to try (prefix-route.ts); at least one. */
  readonly prefixes: readonly string[];
  readonly keeper: KeeperOptions;
  /** A limiter idle this long is dropped, ms (a positive integer). */
  readonly limiterIdleMs: number;
  /** The lease secret (grant-check.ts SECRET_PATTERN). */
  readonly secret: string;
  /** Uniform in [0, 1): the keepers' back-off draws. */
  readonly random: () => number;
  /** Fresh randomness for a moved agent id: 16 to 32 base64url characters a call (moved-id.ts); the agent's are cryptographic. */
  readonly idSuffix: () => string;
  /** Checks grants' signatures (the agent's public keys); absent or null: grants need none. */
  readonly verifyGrant?: GrantVerifier | null;
}

export class AgentDriver<W extends PoolWaiters = PoolWaiters> {
  private readonly pools = new Map<string, AgentPool<W>>();
  private seq = 0;
  private closing = false;
  private stopped = false;
  private sweeping = false;
  /** While closing: the pools whose returns are not settled yet (counted, not rescanned: an agent may run tens of thousands). */
  private unsettled = new Set<AgentPool<W>>();
  private settledSaid = false;

  constructor(private readonly options: AgentDriverOptions) {}

  /** size — how many pools the driver runs now (dropped ones not counted). */
  get size(): number {
    return this.pools.size;
  }

  /** get — the pool named `name` the driver runs now, or undefined. */
  get(name: string): AgentPool<W> | undefined {
    return this.pools.get(name);
  }

  /** running — every pool the driver runs now. */
  running(): IterableIterator<AgentPool<W>> {
    return this.pools.values();
  }

  /** closed — whether `close` was called. */
  get closed(): boolean {
    return this.closing;
  }

  /**
   * open — a new pool `name` (a valid pool name, not running now) whose
   * keeper takes `overrides` over the agent's settings; `makeWaiters` makes
   * its waiters (given the pool, its keeper and route already set). It runs
   * once `start`ed. Throws AgentError('invalid-argument') for
   * bad overrides (keeperOptions).
   */
  open(name: string, overrides: Partial<KeeperOptions>, makeWaiters: (pool: AgentPool<W>) => W): AgentPool<W> {
    const base = this.options.keeper;
    const options = Object.keys(overrides).length === 0 ? base : keeperOptions({ ...base, ...overrides });
    const nextSeq = (floor = 0): number => (this.seq = Math.max(this.seq, floor) + 1);
    const keeper = new LeaseKeeper(this.options.agentId, name, nextSeq, options, this.options.random, this.options.secret, {
      idSuffix: this.options.idSuffix,
      verifyGrant: this.options.verifyGrant ?? null,
    });
    return new AgentPool(keeper, this.options.prefixes, makeWaiters);
  }

  /** start — `pool`, just opened (or revived), runs from `nowUs`: its first tick. Nothing once the agent is closing. */
  start(pool: AgentPool<W>, nowUs: number): readonly AgentCommand<W>[] {
    if (this.closing) return [];
    this.pools.set(pool.name, pool);
    const out: AgentCommand<W>[] = this.keepSweeping();
    return this.acted(pool, pool.keeper.tick(nowUs), nowUs, out);
  }

  /** revive — `pool`, dropped for idleness, runs again (on use); null while closing, or when another pool runs under its name. */
  revive(pool: AgentPool<W>): readonly AgentCommand<W>[] | null {
    const running = this.pools.get(pool.name);
    if (this.closing || (running !== undefined && running !== pool)) return null;
    this.pools.set(pool.name, pool);
    return this.keepSweeping();
  }

  /**
   * tick — `pool`'s timer rang (or a wake-soon came due) at `nowUs`. A
   * wake asked before the pool was dropped is a use: it runs again (as
   * `revive` says), and ticks.
   */
  tick(pool: AgentPool<W>, nowUs: number): readonly AgentCommand<W>[] {
    const out: AgentCommand<W>[] = [];
    if (this.pools.get(pool.name) !== pool) {
      const revived = this.revive(pool);
      if (revived === null) return [];
      out.push(...revived);
    }
    return this.acted(pool, pool.keeper.tick(nowUs), nowUs, out);
  }

  /** wake — `pool`'s slot ran low or denied, or a call began to wait on it: tick it soon. */
  wake(pool: AgentPool<W>): readonly AgentCommand<W>[] {
    return this.stopped ? [] : [{ type: 'wake-soon', pool }];
  }

  /** replied — the bytes of the reply to `pool`'s request `seq` arrived at `nowUs`; bytes that are no reply count as a failure. */
  replied(pool: AgentPool<W>, seq: number, bytes: Uint8Array, nowUs: number): readonly AgentCommand<W>[] {
    const decoded = decodeReply(bytes);
    if (decoded.ok) return this.answered(pool, seq, decoded.value, nowUs);
    const out: AgentCommand<W>[] = [this.news({ type: 'request-failed', pool: pool.name, code: decoded.code, message: decoded.message })];
    return this.acted(pool, pool.keeper.onFailure(seq, decoded.code, decoded.message, nowUs), nowUs, out);
  }

  /** answered — `reply` to `pool`'s request `seq` arrived at `nowUs`. */
  answered(pool: AgentPool<W>, seq: number, reply: Reply, nowUs: number): readonly AgentCommand<W>[] {
    const name = pool.name;
    const out: AgentCommand<W>[] = [];
    pool.route.answered();
    if (reply.kind === 'error') out.push(this.news({ type: 'error-reply', pool: name, code: reply.code, message: reply.message }));
    const actions = pool.keeper.onReply(seq, reply, nowUs);
    const rejection = pool.keeper.takeRejection();
    if (rejection !== null) out.push(this.news({ type: 'implausible-grant', pool: name, message: `a grant was refused: it ${rejection}` }));
    return this.acted(pool, actions, nowUs, out);
  }

  /** failed — `pool`'s request `seq` got no reply (`code`: bus-timeout, bus-no-responders, bus-failure, …) at `nowUs`. */
  failed(pool: AgentPool<W>, seq: number, code: string, message: string, nowUs: number): readonly AgentCommand<W>[] {
    const out: AgentCommand<W>[] = [this.news({ type: 'request-failed', pool: pool.name, code, message })];
    if (pool.route.failed(code)) out.push(this.news({ type: 'coordinator-moved', pool: pool.name, prefix: pool.route.prefix }));
    return this.acted(pool, pool.keeper.onFailure(seq, code, message, nowUs), nowUs, out);
  }

  /** release — the service closed `pool`'s limiter at `nowUs`: return its lease now, drop it once quiet. */
  release(pool: AgentPool<W>, nowUs: number): readonly AgentCommand<W>[] {
    if (this.pools.get(pool.name) !== pool || this.closing) return [];
    pool.dropWhenQuiet = true;
    return this.acted(pool, pool.keeper.release(nowUs), nowUs, []);
  }

  /** sweep — at `nowUs`, drops every pool quiet and idle for `limiterIdleMs`; stops the sweep once none is left. */
  sweep(nowUs: number): readonly AgentCommand<W>[] {
    // A sweep the adapter had due when the agent stopped: the sweep is off already.
    if (this.stopped) return [];
    const out: AgentCommand<W>[] = [];
    const idleUs = this.options.limiterIdleMs * US_PER_MS;
    for (const pool of this.pools.values()) {
      if (nowUs - pool.keeper.lastActiveUs >= idleUs && this.droppable(pool)) this.drop(pool, out);
    }
    if (this.pools.size === 0 && this.sweeping) {
      this.sweeping = false;
      out.push({ type: 'sweep-every', periodMs: null });
    }
    return out;
  }

  /** close — at `nowUs`: ends every waiting call and returns every lease; `settled` follows once all are answered (maybe at once). */
  close(nowUs: number): readonly AgentCommand<W>[] {
    if (this.closing) return [];
    this.closing = true;
    const out: AgentCommand<W>[] = [];
    this.unsettled = new Set(this.pools.values());
    for (const pool of this.pools.values()) {
      pool.waiters.cancelWaiters();
      this.acted(pool, pool.keeper.close(nowUs), nowUs, out);
    }
    if (this.unsettled.size === 0) this.settle(out);
    return out;
  }

  /** stop — the close is over (settled or out of time): nothing acts any more; every timer and the sweep go off. */
  stop(): readonly AgentCommand<W>[] {
    this.closing = true;
    this.stopped = true;
    this.sweeping = false;
    const out: AgentCommand<W>[] = [{ type: 'sweep-every', periodMs: null }];
    for (const pool of this.pools.values()) out.push({ type: 'wake-at', pool, atUs: Infinity, delayMs: Infinity });
    return out;
  }

  /** acted — what follows the keeper of `pool` acting (`actions`) at `nowUs`, appended to `out` (see the rules). */
  private acted(pool: AgentPool<W>, actions: readonly SendAction[], nowUs: number, out: AgentCommand<W>[]): AgentCommand<W>[] {
    if (this.stopped) return [];
    const keeper = pool.keeper;
    for (const action of actions) out.push(this.carry(pool, action));
    if (keeper.takeUnknownPoolNews()) {
      out.push(
        this.news({ type: 'unknown-pool', pool: pool.name, message: `the coordinator knows no pool named ${pool.name}: check the name` }),
      );
    }
    pool.waiters.serveWaiters();
    out.push(this.nextTick(pool, nowUs));
    if (keeper.quiet) {
      // Nothing will tick it now: the next denial must wake it.
      keeper.slot.lowSignalled = false;
      if (pool.dropWhenQuiet && this.droppable(pool)) this.drop(pool, out);
    }
    if (this.closing && keeper.settled && this.unsettled.delete(pool) && this.unsettled.size === 0) this.settle(out);
    return out;
  }

  /** carry — the command that sends `action` of `pool`'s keeper on the subject of its route's prefix now. */
  private carry(pool: AgentPool<W>, action: SendAction): AgentCommand<W> {
    const message = action.message;
    const subject = subjectFor(pool.route.prefix, message.op, pool.name, this.options.identity);
    if (message.op === 'report') return { type: 'publish', pool, subject, message };
    return { type: 'send', pool, subject, seq: action.seq, message, timeoutMs: action.timeoutMs };
  }

  /** nextTick — when `pool` ticks next, seen at `nowUs` (see the rules). */
  private nextTick(pool: AgentPool<W>, nowUs: number): AgentCommand<W> {
    const keeper = pool.keeper;
    const deadlineUs = keeper.nextDeadlineUs();
    const idle = (this.closing && keeper.settled) || (keeper.quiet && deadlineUs === Infinity);
    if (idle) return { type: 'wake-at', pool, atUs: Infinity, delayMs: Infinity };
    const delayMs = Math.min(KEEPER_TICK_MS_MAX, Math.max(1, Math.ceil((deadlineUs - nowUs) / US_PER_MS)));
    return { type: 'wake-at', pool, atUs: nowUs + delayMs * US_PER_MS, delayMs };
  }

  /** droppable — quiet, nothing waiting, no low signal since it last acted (a denial whose wake is still to come), not closing. */
  private droppable(pool: AgentPool<W>): boolean {
    const keeper = pool.keeper;
    return keeper.quiet && !keeper.slot.lowSignalled && !pool.waiters.waiting && !this.closing;
  }

  private drop(pool: AgentPool<W>, out: AgentCommand<W>[]): void {
    if (this.pools.get(pool.name) !== pool) return;
    this.pools.delete(pool.name);
    pool.dropWhenQuiet = false;
    out.push({ type: 'drop', pool });
  }

  private keepSweeping(): AgentCommand<W>[] {
    if (this.sweeping) return [];
    this.sweeping = true;
    const periodMs = Math.max(SWEEP_MS_MIN, Math.min(SWEEP_MS_MAX, Math.floor(this.options.limiterIdleMs / 2)));
    return [{ type: 'sweep-every', periodMs }];
  }

  private settle(out: AgentCommand<W>[]): void {
    if (this.settledSaid) return;
    this.settledSaid = true;
    out.push({ type: 'settled' });
  }

  private news(event: DriverEvent): AgentCommand<W> {
    return { type: 'event', event };
  }
}
