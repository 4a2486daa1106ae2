/**
 * Agent: the library a service embeds. It owns one NATS connection (or uses
 * a given nats.js connection or Bus: agent-bus.ts), one lease keeper per
 * pool, and runs their timers and requests.
 * All decisions are the keepers'; this file moves bytes and schedules ticks.
 *
 * Many limiters (one per tenant or key) cost little while idle: a keeper
 * with no lease, nothing in flight and nothing waiting holds no timer (the
 * next admission or denial wakes it), and one idle for `limiterIdleMs` is
 * dropped from the agent (one sweep timer per agent finds them). A dropped
 * limiter is made again on use: through its old handle, or the same handle
 * from `agent.limiter(pool)` while anything still holds it.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  decodeReply,
  encodeMessage,
  subjectFor,
  assertSubjectPrefix,
  assertPoolName,
  assertIdentity,
  ANONYMOUS_IDENTITY,
  DEFAULT_SUBJECT_PREFIX,
  TokenleaseError,
} from '@tokenlease/shared';
import { type Bus, type BusEvent } from '@tokenlease/shared/nats';
import { LeaseKeeper, type SendAction } from '../core/lease-keeper.js';
import { PrefixRoute } from '../core/prefix-route.js';
import { keeperOptions, type KeeperOptions } from '../core/keeper-options.js';
import { takeAllAt, type SlotCharge } from '../core/take-all.js';
import { TAKE_TIMEOUT_MS_DEFAULT } from '../core/take-queue.js';
import { US_PER_MS } from '../core/units.js';
import { AgentError } from '../errors.js';
import { Limiter, type LimiterHost } from './limiter.js';
import { openAgentBus, type AgentConnectionOptions } from './agent-bus.js';

/** Longest gap between two ticks of a keeper that holds a lease or waits for one, ms: demand is sampled at least this often. */
const KEEPER_TICK_MS_MAX = 100;
/** Default for `limiterIdleMs`, and the bounds of the sweep's period, ms. */
const LIMITER_IDLE_MS_DEFAULT = 60_000;
const SWEEP_MS_MIN = 10;
const SWEEP_MS_MAX = 30_000;
/** How long `close` waits for its returns to be acknowledged when not told, ms. */
const CLOSE_TIMEOUT_MS_DEFAULT = 2000;
/** A default agent id keeps this much of the host name, and this many random bytes (in hex) after the pid. */
const HOSTNAME_LENGTH_MAX = 64;
const AGENT_ID_RANDOM_BYTES = 4;
/** Random bytes of the lease secret: 128 bits. */
const LEASE_SECRET_BYTES = 16;

export type AgentEvent =
  | { readonly type: 'request-failed'; readonly pool: string; readonly code: string; readonly message: string }
  | { readonly type: 'error-reply'; readonly pool: string; readonly code: string; readonly message: string }
  /** A grant no honest coordinator would send was refused (see grant-check.ts): a rogue responder, or a bug. */
  | { readonly type: 'implausible-grant'; readonly pool: string; readonly message: string }
  /** The coordinator knows no pool of this name (a misspelt name, a missing template): once, until a grant arrives. */
  | { readonly type: 'unknown-pool'; readonly pool: string; readonly message: string }
  /** Nobody answered on the pool's prefix: its requests go to the next of `failoverPrefixes` now (see prefix-route.ts). */
  | { readonly type: 'coordinator-moved'; readonly pool: string; readonly prefix: string }
  | BusEvent;

/** AgentOptions — how to reach NATS (AgentConnectionOptions), who the agent is, and how its leases are kept. */
export interface AgentOptions extends AgentConnectionOptions {
  /**
   * Unique per agent instance; default `<host>-<pid>-<random>`, prefixed
   * with `<identity>.` when an identity is given (so a coordinator that
   * binds identities accepts it).
   */
  readonly agentId?: string;
  /**
   * The identity token this agent sends under (`<prefix>.v2.<op>.<pool>.<identity>`):
   * the NATS user's, where permissions pin each user to its own token.
   * Default ANONYMOUS_IDENTITY.
   */
  readonly identity?: string;
  readonly subjectPrefix?: string;
  /**
   * Prefixes of other coordinators serving the same pools (relays, the
   * root), tried in order after `subjectPrefix` when nobody answers there
   * (core/prefix-route.ts); default none.
   */
  readonly failoverPrefixes?: readonly string[];
  readonly keeper?: Partial<KeeperOptions>;
  readonly onEvent?: (event: AgentEvent) => void;
  /**
   * Monotonic clock in µs for expiry and the fast path; default
   * `performance.now()·1000`. Any monotonic clock works: only durations
   * are exchanged with the coordinator.
   */
  readonly clock?: () => number;
  /**
   * A limiter idle this long (no admission, denial or waiting take; its
   * lease already returned after `keeper.idleReturnMs`) is dropped from
   * the agent, ms; default 60000. It is made again on use.
   */
  readonly limiterIdleMs?: number;
}

/** LimiterOptions — per-pool settings of `agent.limiter(pool, options)`. */
export interface LimiterOptions extends Pick<Partial<KeeperOptions>, 'fallbackPerSecond' | 'fallbackBurstTokens'> {
  /** True: this pool is in shadow mode in this service whatever the coordinator says (see Limiter.forceShadow). */
  readonly shadow?: boolean;
}

/** pickDefined — `{ [key]: value }` when `options` has `key` set, else `{}`. */
function pickDefined<K extends 'fallbackPerSecond' | 'fallbackBurstTokens'>(
  options: LimiterOptions | undefined,
  key: K,
): Partial<Pick<KeeperOptions, K>> {
  const value = options?.[key];
  return value === undefined ? {} : ({ [key]: value } as Partial<Pick<KeeperOptions, K>>);
}

interface PoolSubjects {
  readonly acquire: string;
  readonly return: string;
  readonly report: string;
}

interface Entry {
  readonly keeper: LeaseKeeper;
  readonly limiter: Limiter;
  readonly route: PrefixRoute;
  /** Where its requests go: the subjects of its route's prefix now. */
  subjects: PoolSubjects;
  timer: NodeJS.Timeout | null;
  wakePending: boolean;
  /** Limiter.close asked: drop it from the agent once its return is settled. */
  dropWhenQuiet: boolean;
  readonly wake: () => void;
}

/** The default agent id: `<host>-<pid>-<random hex>`. */
function defaultAgentId(): string {
  const host = hostname()
    .replace(/[^\x21-\x7e]/g, '_')
    .slice(0, HOSTNAME_LENGTH_MAX);
  return `${host}-${process.pid}-${randomBytes(AGENT_ID_RANDOM_BYTES).toString('hex')}`;
}

/** The default agent clock: this process's monotonic clock, µs. */
function performanceNowUs(): number {
  return performance.now() * US_PER_MS;
}

export class Agent implements LimiterHost {
  private readonly entries = new Map<string, Entry>();
  private seq = 0;
  private isClosed = false;
  /** Index of the part the last `tryTakeAll` denied; -1 after an admission. */
  lastDeniedIndex = -1;
  /** Set once close has finished: late replies and timers do nothing. */
  private stopped = false;
  private onSettled: () => void = () => {};
  private readonly keeperOpts: KeeperOptions;
  private readonly prefix: string;
  /** `prefix`, then the failover prefixes: where each pool's route goes (prefix-route.ts). */
  private readonly prefixes: readonly string[];
  private readonly identity: string;
  /** 128 random bits that bind this agent's leases; sent only to coordinators, never logged. */
  private readonly secret = randomBytes(LEASE_SECRET_BYTES).toString('base64url');
  readonly clock: () => number;
  private readonly limiterIdleMs: number;
  /** Limiters dropped for idleness that something may still hold: revived on use. */
  private readonly dropped = new Map<string, WeakRef<Entry>>();
  private readonly forgotten = new FinalizationRegistry<string>((pool) => {
    if (this.dropped.get(pool)?.deref() === undefined) this.dropped.delete(pool);
  });
  private sweeper: NodeJS.Timeout | null = null;
  /** While closing: the limiters whose returns are not settled yet. */
  private unsettled = new Set<Entry>();

  private constructor(
    private readonly bus: Bus,
    private readonly ownsBus: boolean,
    readonly agentId: string,
    options: AgentOptions,
  ) {
    this.keeperOpts = keeperOptions(options.keeper);
    this.clock = options.clock ?? performanceNowUs;
    this.prefix = options.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX;
    this.identity = options.identity ?? ANONYMOUS_IDENTITY;
    assertSubjectPrefix(this.prefix);
    const failover: unknown = options.failoverPrefixes ?? [];
    if (!Array.isArray(failover) || !failover.every((prefix): prefix is string => typeof prefix === 'string')) {
      throw new AgentError('invalid-argument', 'option failoverPrefixes must be a list of subject prefixes');
    }
    for (const prefix of failover) assertSubjectPrefix(prefix);
    this.prefixes = [this.prefix, ...failover.filter((prefix) => prefix !== this.prefix)];
    const idleMs = options.limiterIdleMs ?? LIMITER_IDLE_MS_DEFAULT;
    if (!Number.isSafeInteger(idleMs) || idleMs < 1) {
      throw new AgentError('invalid-argument', `option limiterIdleMs must be a positive integer, got ${JSON.stringify(idleMs)}`);
    }
    this.limiterIdleMs = idleMs;
    const onEvent = options.onEvent;
    this.emit = onEvent ?? (() => {});
    bus.onEvent((event) => this.emit(event));
  }

  private readonly emit: (event: AgentEvent) => void;

  /**
   * connect — an agent on a new NATS connection (or `options.connection`,
   * or `options.bus`). Rejects with AgentError `invalid-argument` (bad
   * settings), `auth-failed`, `tls-failed` or `unreachable`, within the
   * connect timeout, with a message that names the servers and no secret.
   */
  static async connect(options: AgentOptions = {}): Promise<Agent> {
    const identity = options.identity ?? ANONYMOUS_IDENTITY;
    try {
      assertIdentity(identity);
    } catch (error) {
      throw new AgentError('invalid-argument', error instanceof Error ? error.message : String(error), { cause: error });
    }
    const agentId = options.agentId ?? (identity === ANONYMOUS_IDENTITY ? defaultAgentId() : `${identity}.${defaultAgentId()}`);
    const { bus, owned } = await openAgentBus(options, identity, agentId);
    return new Agent(bus, owned, agentId, options);
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * limiter — the handle for `pool`, created (and its first lease
   * requested) on first use. `options.fallbackPerSecond` and
   * `fallbackBurstTokens` set this pool's local fallback (see
   * KeeperOptions.fallbackPerSecond) over the agent's; they count only
   * when the limiter is created. `options.shadow` (a boolean), given on any
   * call, sets `limiter.forceShadow`: true puts this pool in shadow mode in
   * this service whatever the coordinator says. Throws
   * AgentError('invalid-argument').
   */
  limiter(pool: string, options?: LimiterOptions): Limiter {
    const shadow = options?.shadow;
    if (shadow !== undefined && typeof shadow !== 'boolean') {
      throw new AgentError('invalid-argument', `option shadow must be true or false, got ${JSON.stringify(shadow)}`, { pool });
    }
    const existing = this.entries.get(pool) ?? this.revive(pool);
    if (existing !== undefined) {
      if (shadow !== undefined) existing.limiter.forceShadow = shadow;
      return existing.limiter;
    }
    if (this.isClosed) throw new AgentError('closed', 'the agent is closed', { pool });
    try {
      assertPoolName(pool);
    } catch (error) {
      if (error instanceof TokenleaseError) throw new AgentError('invalid-argument', error.message, { pool, cause: error });
      throw error;
    }
    const fallback = { ...pickDefined(options, 'fallbackPerSecond'), ...pickDefined(options, 'fallbackBurstTokens') };
    const opts = Object.keys(fallback).length === 0 ? this.keeperOpts : keeperOptions({ ...this.keeperOpts, ...fallback });
    const nextSeq = (floor = 0): number => (this.seq = Math.max(this.seq, floor) + 1);
    const keeper = new LeaseKeeper(this.agentId, pool, nextSeq, opts, Math.random, this.secret);
    const entry: Entry = {
      keeper,
      limiter: new Limiter(keeper, this),
      route: new PrefixRoute(this.prefixes),
      subjects: this.subjectsOf(this.prefix, pool),
      timer: null,
      wakePending: false,
      dropWhenQuiet: false,
      wake: () => {
        entry.wakePending = false;
        this.run(entry, entry.keeper.tick(this.clock()));
      },
    };
    keeper.slot.onLow = () => this.wake(keeper);
    if (shadow !== undefined) keeper.slot.shadowForced = shadow;
    this.entries.set(pool, entry);
    this.forgotten.register(entry, pool);
    this.startSweeper();
    this.run(entry, keeper.tick(this.clock()));
    return entry.limiter;
  }

  /**
   * takeAll — `tryTakeAll` that may wait up to `timeoutMs` (default 1000):
   * while a part is denied it waits, in that pool's line, until its cost
   * fits (Limiter.fits), then tries every part again at once, so nothing
   * is spent unless all of it is. Resolves true when admitted, false on
   * timeout; rejects (never throws) as `take` does, and for a charge list
   * `tryTakeAll` refuses.
   */
  async takeAll(
    charges: ReadonlyArray<{ readonly limiter: Limiter; readonly cost: number }>,
    options: { readonly timeoutMs?: number } = {},
  ): Promise<boolean> {
    const timeoutMs = options.timeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
      throw new AgentError('invalid-argument', `timeoutMs must be a non-negative integer, got ${timeoutMs}`);
    }
    const deadlineUs = this.clock() + timeoutMs * US_PER_MS;
    for (;;) {
      const denied = takeAllAt(charges, this.clock());
      if (denied === -1) return true;
      const part = charges[denied] as { readonly limiter: Limiter; readonly cost: number };
      const leftMs = Math.floor((deadlineUs - this.clock()) / US_PER_MS);
      if (leftMs <= 0 || !(await part.limiter.fits(part.cost, { timeoutMs: leftMs }))) return false;
    }
  }

  /** revive — the dropped limiter of `pool`, back in the agent, if anything still holds it; else undefined. */
  private revive(pool: string): Entry | undefined {
    const entry = this.dropped.get(pool)?.deref();
    this.dropped.delete(pool);
    if (entry === undefined || this.isClosed) return undefined;
    this.entries.set(pool, entry);
    this.startSweeper();
    return entry;
  }

  /** startSweeper — one timer per agent that drops limiters idle for `limiterIdleMs`. */
  private startSweeper(): void {
    if (this.sweeper !== null) return;
    const periodMs = Math.max(SWEEP_MS_MIN, Math.min(SWEEP_MS_MAX, Math.floor(this.limiterIdleMs / 2)));
    this.sweeper = setInterval(() => this.sweep(), periodMs);
    this.sweeper.unref();
  }

  /** sweep — drops every limiter that is quiet and has been idle for `limiterIdleMs`. */
  private sweep(): void {
    const nowUs = this.clock();
    const idleUs = this.limiterIdleMs * US_PER_MS;
    for (const entry of this.entries.values()) {
      if (nowUs - entry.keeper.lastActiveUs >= idleUs && this.droppable(entry)) this.drop(entry);
    }
    if (this.entries.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  private droppable(entry: Entry): boolean {
    return entry.keeper.quiet && !entry.limiter.waiting && !this.isClosed;
  }

  private drop(entry: Entry): void {
    const pool = entry.keeper.pool;
    if (this.entries.get(pool) !== entry) return;
    this.entries.delete(pool);
    if (entry.timer !== null) clearTimeout(entry.timer);
    entry.timer = null;
    entry.dropWhenQuiet = false;
    this.dropped.set(pool, new WeakRef(entry));
  }

  /** release — Limiter.close: return the lease now, drop the limiter once nothing is in flight. */
  release(keeper: LeaseKeeper): void {
    const entry = this.entries.get(keeper.pool);
    if (entry?.keeper !== keeper || this.isClosed) return;
    entry.dropWhenQuiet = true;
    this.run(entry, keeper.release(this.clock()));
  }

  /** timerCount — how many keeper timers are armed now (an idle limiter holds none; the sweep's one timer aside). */
  get timerCount(): number {
    let count = 0;
    for (const entry of this.entries.values()) if (entry.timer !== null) count += 1;
    return count;
  }

  /** limiterCount — how many limiters the agent runs now (dropped ones not counted). */
  get limiterCount(): number {
    return this.entries.size;
  }

  /**
   * tryTakeAll — admits every `{ limiter, cost }` part or none (e.g. a global
   * pool and a tenant pool together). Synchronous; allocates nothing and
   * looks nothing up, so keep the charge list and reuse it. On false,
   * `lastDeniedIndex` names the part that was denied and its limiter's
   * `lastDenial` and `retryAfterMs` say why. Throws AgentError
   * ('invalid-argument') for a bad cost or a pool charged twice, before
   * anything is spent.
   */
  tryTakeAll(charges: readonly SlotCharge[]): boolean {
    this.lastDeniedIndex = takeAllAt(charges, this.clock());
    return this.lastDeniedIndex === -1;
  }

  /** wake — runs the keeper's tick soon (once, however often it is called before then); a dropped limiter is revived. */
  wake(keeper: LeaseKeeper): void {
    let entry = this.entries.get(keeper.pool);
    if (entry === undefined && this.dropped.get(keeper.pool)?.deref()?.keeper === keeper) entry = this.revive(keeper.pool);
    if (entry?.keeper !== keeper || entry.wakePending) return;
    entry.wakePending = true;
    setImmediate(entry.wake);
  }

  /**
   * close — returns every lease, waits up to `timeoutMs` (default 2000) for
   * the returns to be acknowledged, then closes the connection it opened.
   */
  async close(options: { readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    const settled = new Promise<void>((resolve) => {
      this.onSettled = resolve;
    });
    // Counted, not rescanned on every reply: an agent may run tens of thousands of limiters.
    this.unsettled = new Set(this.entries.values());
    for (const entry of this.entries.values()) {
      entry.limiter.cancelWaiters();
      this.run(entry, entry.keeper.close(this.clock()));
    }
    if (this.unsettled.size === 0) this.onSettled();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, options.timeoutMs ?? CLOSE_TIMEOUT_MS_DEFAULT);
    });
    await Promise.race([settled, timedOut]);
    clearTimeout(timer);
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
    // Whatever is still unanswered now is left to expire: stop acting on it.
    this.stopped = true;
    for (const entry of this.entries.values()) if (entry.timer !== null) clearTimeout(entry.timer);
    if (this.ownsBus) await this.bus.drain();
  }

  private run(entry: Entry, actions: readonly SendAction[]): void {
    if (this.stopped) return;
    for (const action of actions) this.send(entry, action);
    const keeper = entry.keeper;
    if (keeper.takeUnknownPoolNews()) {
      this.emit({ type: 'unknown-pool', pool: keeper.pool, message: `the coordinator knows no pool named ${keeper.pool}: check the name` });
    }
    entry.limiter.serveWaiters();
    this.schedule(entry);
    if (keeper.quiet) {
      // Nothing will tick it now: the next denial must wake it.
      keeper.slot.lowSignalled = false;
      if (entry.dropWhenQuiet && this.droppable(entry)) this.drop(entry);
    }
    if (this.isClosed && keeper.settled && this.unsettled.delete(entry) && this.unsettled.size === 0) this.onSettled();
  }

  private send(entry: Entry, action: SendAction): void {
    const pool = entry.keeper.pool;
    if (action.type === 'publish') {
      // A usage report: nothing awaits it, and a lost one only leaves a bound higher than it could be.
      this.bus.publish(entry.subjects.report, encodeMessage(action.message));
      return;
    }
    const subject = action.message.op === 'acquire' ? entry.subjects.acquire : entry.subjects.return;
    this.bus.request(subject, encodeMessage(action.message), action.timeoutMs).then(
      (bytes) => {
        const decoded = decodeReply(bytes);
        if (!decoded.ok) {
          this.emit({ type: 'request-failed', pool, code: decoded.code, message: decoded.message });
          this.run(entry, entry.keeper.onFailure(action.seq, decoded.code, decoded.message, this.clock()));
          return;
        }
        const reply = decoded.value;
        entry.route.answered();
        if (reply.kind === 'error') this.emit({ type: 'error-reply', pool, code: reply.code, message: reply.message });
        const actions = entry.keeper.onReply(action.seq, reply, this.clock());
        const rejection = entry.keeper.takeRejection();
        if (rejection !== null) this.emit({ type: 'implausible-grant', pool, message: `a grant was refused: it ${rejection}` });
        this.run(entry, actions);
      },
      (error: unknown) => {
        const code = error instanceof TokenleaseError ? error.code : 'bus-failure';
        const message = error instanceof Error ? error.message : String(error);
        this.emit({ type: 'request-failed', pool, code, message });
        if (entry.route.failed(code)) this.move(entry);
        this.run(entry, entry.keeper.onFailure(action.seq, code, message, this.clock()));
      },
    );
  }

  /** subjectsOf — the subjects of `pool`'s requests on `prefix`, under this agent's identity. */
  private subjectsOf(prefix: string, pool: string): PoolSubjects {
    const at = (op: 'acquire' | 'return' | 'report'): string => subjectFor(prefix, op, pool, this.identity);
    return { acquire: at('acquire'), return: at('return'), report: at('report') };
  }

  /** move — `entry`'s pool is served on its route's next prefix from now on. */
  private move(entry: Entry): void {
    const { pool } = entry.keeper;
    const prefix = entry.route.prefix;
    entry.subjects = this.subjectsOf(prefix, pool);
    this.emit({ type: 'coordinator-moved', pool, prefix });
  }

  private schedule(entry: Entry): void {
    if (entry.timer !== null) clearTimeout(entry.timer);
    entry.timer = null;
    if (this.isClosed && entry.keeper.settled) return;
    const now = this.clock();
    // An idle keeper holds no timer: the next admission or denial wakes it.
    if (entry.keeper.quiet && entry.keeper.nextDeadlineUs() === Infinity) return;
    const delayMs = Math.min(KEEPER_TICK_MS_MAX, Math.max(1, Math.ceil((entry.keeper.nextDeadlineUs() - now) / US_PER_MS)));
    entry.timer = setTimeout(entry.wake, delayMs);
    entry.timer.unref();
  }
}
