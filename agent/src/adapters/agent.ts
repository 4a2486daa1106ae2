/**
 * Agent: the library a service embeds. It owns one NATS connection (or uses
 * a given nats.js connection or Bus: agent-bus.ts) and one limiter per
 * pool, and carries out what its driver (core/agent-driver.ts) decides:
 * requests on the Bus with their replies and failures fed back, one timer
 * per pool for its next tick, an immediate for a pool woken by its slot or
 * a waiting call, the idle sweep's timer, and the service's events.
 * Nothing here decides when to send, tick, move, drop or finish closing.
 *
 * Many limiters (one per tenant or key) cost little while idle: a keeper
 * with no lease, nothing in flight and nothing waiting holds no timer, and
 * one idle for `limiterIdleMs` is dropped from the agent. A dropped
 * limiter is made again on use: through its old handle, or the same handle
 * from `agent.limiter(pool)` while anything still holds it (a weak
 * reference here, so an unused one is collected).
 */
import { randomBytes, type KeyObject } from 'node:crypto';
import { hostname } from 'node:os';
import { encodeMessage, assertPoolName, ANONYMOUS_IDENTITY, DEFAULT_SUBJECT_PREFIX, TokenleaseError } from '@tokenlease/shared';
import { type Bus, type BusEvent } from '@tokenlease/shared/nats';
import { AgentDriver, AgentPool, type AgentCommand, type DriverEvent, type PoolWaiters } from '../core/agent-driver.js';
import type { GrantVerifier, LeaseKeeper } from '../core/lease-keeper.js';
import { keeperOptions, type KeeperOptions } from '../core/keeper-options.js';
import { giveBackAllAt, noteArrivalsAt, takeAllAt, type SlotCharge } from '../core/take-all.js';
import type { LeaseSlot } from '../core/lease-slot.js';
import { TAKE_TIMEOUT_MS_DEFAULT } from '../core/take-queue.js';
import { US_PER_MS } from '../core/units.js';
import { AgentError } from '../errors.js';
import { agentOptionsProblem, LIMITER_IDLE_MS_DEFAULT } from '../core/agent-options.js';
import { grantVerifierOf } from './grant-verifier.js';
import { Limiter, type LimiterHost } from './limiter.js';
import { openAgentBus, type AgentConnectionOptions } from './agent-bus.js';
import { TraceRecording, type RecordingEvent, type RecordingStats, type RecordOptions } from './trace-recording.js';

/** How long `close` waits for its returns to be acknowledged when not told, ms. */
const CLOSE_TIMEOUT_MS_DEFAULT = 2000;
/** A default agent id keeps this much of the host name, and this many random bytes (in hex) after the pid. */
const HOSTNAME_LENGTH_MAX = 64;
const AGENT_ID_RANDOM_BYTES = 4;
/** Random bytes of the lease secret: 128 bits. */
const LEASE_SECRET_BYTES = 16;
/** Random bytes of a moved agent id's suffix: 96 bits, 16 base64url characters. */
const ID_SUFFIX_BYTES = 12;

/** AgentEvent — what the agent tells `onEvent`: its driver's news (DriverEvent), the connection's (BusEvent), a trace recording's (RecordingEvent). */
export type AgentEvent = DriverEvent | BusEvent | RecordingEvent;

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
  /**
   * The Ed25519 public keys (PEM strings or KeyObjects) of the coordinators
   * whose grants this agent accepts: given any, a grant not signed for its
   * request by one of them is refused as implausible (event
   * `implausible-grant`), nothing of it spendable. More than one while a
   * signing key is rotated. Default none: grants need no signature.
   */
  readonly grantPublicKeys?: readonly (string | KeyObject)[];
  /** Told every AgentEvent: a failed request, a refusal, a lost or regained connection, a recording's end; default none. */
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
  /**
   * Record the arrivals of chosen pools to a trace file for
   * `tokenlease-sweep --trace` (adapters/trace-recording.ts;
   * docs/trace-format.md), from the start; `agent.record()` starts one later.
   */
  readonly record?: RecordOptions;
}

/** LimiterOptions — per-pool settings of `agent.limiter(pool, options)`. */
export interface LimiterOptions extends Pick<Partial<KeeperOptions>, PerPoolOption> {
  /** True: this pool is in shadow mode in this service whatever the coordinator says (see Limiter.forceShadow). */
  readonly shadow?: boolean;
}

/** The keeper options a limiter may set for its own pool over the agent's. */
type PerPoolOption = 'fallbackPerSecond' | 'fallbackBurstTokens' | 'expectedLimits';

/** pickDefined — `{ [key]: value }` when `options` has `key` set, else `{}`. */
function pickDefined<K extends PerPoolOption>(options: LimiterOptions | undefined, key: K): Partial<Pick<KeeperOptions, K>> {
  const value = options?.[key];
  return value === undefined ? {} : ({ [key]: value } as Partial<Pick<KeeperOptions, K>>);
}

/** Entry — one pool as the adapter carries it: its limiter, its tick timer, and whether a wake is pending. */
class Entry implements PoolWaiters {
  readonly limiter: Limiter;
  timer: NodeJS.Timeout | null = null;
  wakePending = false;

  constructor(
    readonly pool: AgentPool<Entry>,
    host: LimiterHost,
    private readonly tick: (pool: AgentPool<Entry>) => void,
  ) {
    this.limiter = new Limiter(pool.keeper, host);
  }

  /** wake — the pool's timer rang, or a wake-soon came due: its tick now. */
  readonly wake = (): void => {
    this.wakePending = false;
    this.tick(this.pool);
  };

  serveWaiters(): void {
    this.limiter.serveWaiters();
  }

  cancelWaiters(): void {
    this.limiter.cancelWaiters();
  }

  get waiting(): boolean {
    return this.limiter.waiting;
  }
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

/**
 * Agent — the library a service embeds: one NATS connection (its own, or
 * a given nats.js connection or Bus) and one Limiter per pool
 * (`agent.limiter(pool)`), each admitting locally from the tokens its
 * lease holds. Made with `Agent.connect`; `close` returns the leases.
 */
export class Agent implements LimiterHost {
  private readonly driver: AgentDriver<Entry>;
  /** Index of the part the last `tryTakeAll` denied; -1 after an admission. */
  lastDeniedIndex = -1;
  readonly clock: () => number;
  private readonly emit: (event: AgentEvent) => void;
  /** Limiters dropped for idleness that something may still hold: revived on use. */
  private readonly dropped = new Map<string, WeakRef<Entry>>();
  private readonly forgotten = new FinalizationRegistry<string>((pool) => {
    if (this.dropped.get(pool)?.deref() === undefined) this.dropped.delete(pool);
  });
  private sweeper: NodeJS.Timeout | null = null;
  private onSettled: () => void = () => {};
  private recording: TraceRecording | null = null;

  private constructor(
    private readonly bus: Bus,
    private readonly ownsBus: boolean,
    readonly agentId: string,
    options: AgentOptions,
    verifyGrant: GrantVerifier | null,
  ) {
    this.clock = options.clock ?? performanceNowUs;
    // Each option alone was checked by Agent.connect (core/agent-options.ts).
    const prefix = options.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX;
    const failover = options.failoverPrefixes ?? [];
    const limiterIdleMs = options.limiterIdleMs ?? LIMITER_IDLE_MS_DEFAULT;
    this.driver = new AgentDriver<Entry>({
      agentId,
      identity: options.identity ?? ANONYMOUS_IDENTITY,
      prefixes: [prefix, ...failover.filter((other) => other !== prefix)],
      keeper: keeperOptions(options.keeper),
      limiterIdleMs,
      // 128 random bits that bind this agent's leases; sent only to coordinators, never logged.
      secret: randomBytes(LEASE_SECRET_BYTES).toString('base64url'),
      random: Math.random,
      // 96 fresh random bits for each move after `forbidden`: where this agent goes next is nobody's guess.
      idSuffix: () => randomBytes(ID_SUFFIX_BYTES).toString('base64url'),
      verifyGrant,
    });
    this.emit = options.onEvent ?? (() => {});
    bus.onEvent((event) => this.emit(event));
    if (options.record !== undefined) this.record(options.record);
  }

  /**
   * connect — an agent on a new NATS connection (or `options.connection`,
   * or `options.bus`). Rejects with AgentError `invalid-argument` (bad
   * settings), `auth-failed`, `tls-failed` or `unreachable`, within the
   * connect timeout, with a message that names the servers and no secret.
   */
  static async connect(options: AgentOptions = {}): Promise<Agent> {
    const problem = agentOptionsProblem(options);
    // A prefix breaking the protocol's rule is its TokenleaseError, as ever; any other problem is invalid-argument.
    if (problem?.cause?.code === 'invalid-subject') throw problem.cause;
    if (problem !== null)
      throw new AgentError('invalid-argument', problem.cause?.message ?? problem.message, { cause: problem.cause ?? undefined });
    const identity = options.identity ?? ANONYMOUS_IDENTITY;
    const agentId = options.agentId ?? (identity === ANONYMOUS_IDENTITY ? defaultAgentId() : `${identity}.${defaultAgentId()}`);
    const verifyGrant = grantVerifierOf(options.grantPublicKeys);
    const { bus, owned } = await openAgentBus(options, identity, agentId);
    try {
      return new Agent(bus, owned, agentId, options, verifyGrant);
    } catch (error) {
      // A setting refused after the connection opened: close what this call opened.
      if (owned) await bus.drain();
      throw error;
    }
  }

  get closed(): boolean {
    return this.driver.closed;
  }

  /**
   * limiter — the handle for `pool`, created (and its first lease
   * requested) on first use. `options.fallbackPerSecond` and
   * `fallbackBurstTokens` set this pool's local fallback (see
   * KeeperOptions.fallbackPerSecond) over the agent's, and
   * `options.expectedLimits` what this pool is expected to allow (see
   * KeeperOptions.expectedLimits); they count only when the limiter is
   * created. `options.shadow` (a boolean), given on any
   * call, sets `limiter.forceShadow`: true puts this pool in shadow mode in
   * this service whatever the coordinator says. Throws
   * AgentError('invalid-argument').
   */
  limiter(pool: string, options?: LimiterOptions): Limiter {
    const shadow = options?.shadow;
    if (shadow !== undefined && typeof shadow !== 'boolean') {
      throw new AgentError('invalid-argument', `option shadow must be true or false, got ${JSON.stringify(shadow)}`, { pool });
    }
    const existing = this.driver.get(pool) ?? this.revive(pool);
    if (existing !== undefined) {
      if (shadow !== undefined) existing.waiters.limiter.forceShadow = shadow;
      return existing.waiters.limiter;
    }
    if (this.driver.closed) throw new AgentError('closed', 'the agent is closed', { pool });
    try {
      assertPoolName(pool);
    } catch (error) {
      if (error instanceof TokenleaseError) throw new AgentError('invalid-argument', error.message, { pool, cause: error });
      throw error;
    }
    const overrides = {
      ...pickDefined(options, 'fallbackPerSecond'),
      ...pickDefined(options, 'fallbackBurstTokens'),
      ...pickDefined(options, 'expectedLimits'),
    };
    const opened = this.driver.open(pool, overrides, (p) => new Entry(p, this, this.tick));
    const keeper = opened.keeper;
    keeper.slot.onLow = () => this.wake(keeper);
    keeper.slot.arrivals = this.recording?.sinkFor(pool) ?? null;
    if (shadow !== undefined) keeper.slot.shadowForced = shadow;
    this.forgotten.register(opened.waiters, pool);
    this.run(this.driver.start(opened, this.clock()));
    return opened.waiters.limiter;
  }

  /**
   * takeAll — `tryTakeAll` that may wait up to `timeoutMs` (default 1000):
   * while a part is denied it waits, in that pool's line, until its cost
   * fits (Limiter.fits), then tries every part again at once, so nothing
   * is spent unless all of it is. Resolves true when admitted, false on
   * timeout; rejects (never throws) as `take` does, and for a charge list
   * `tryTakeAll` refuses. With `options.receipts`, an admission writes each
   * part's receipt there, as `tryTakeAll` does.
   */
  async takeAll(
    charges: ReadonlyArray<{ readonly limiter: Limiter; readonly cost: number }>,
    options: { readonly timeoutMs?: number; readonly receipts?: number[] } = {},
  ): Promise<boolean> {
    const timeoutMs = options.timeoutMs ?? TAKE_TIMEOUT_MS_DEFAULT;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
      throw new AgentError('invalid-argument', `timeoutMs must be a non-negative integer, got ${timeoutMs}`);
    }
    const nowUs = this.clock();
    const denied = takeAllAt(charges, nowUs, options.receipts);
    noteArrivalsAt(charges, nowUs);
    return denied === -1 || this.waitAll(charges, denied, nowUs + timeoutMs * US_PER_MS, options.receipts);
  }

  /**
   * retakeAll — `takeAll` for a call whose arrival a recording already
   * noted (the HTTP middleware waiting after its first try): the same
   * tries and wait, not recorded again.
   */
  async retakeAll(
    charges: ReadonlyArray<{ readonly limiter: Limiter; readonly cost: number }>,
    options: { readonly timeoutMs: number; readonly receipts?: number[] },
  ): Promise<boolean> {
    const nowUs = this.clock();
    const denied = takeAllAt(charges, nowUs, options.receipts);
    return denied === -1 || this.waitAll(charges, denied, nowUs + options.timeoutMs * US_PER_MS, options.receipts);
  }

  /** waitAll — after part `denied` was denied: waits in its pool's line until it fits, tries every part again, until `deadlineUs`. */
  private async waitAll(
    charges: ReadonlyArray<{ readonly limiter: Limiter; readonly cost: number }>,
    denied: number,
    deadlineUs: number,
    receipts: number[] | undefined,
  ): Promise<boolean> {
    for (let part = denied; ;) {
      const charge = charges[part] as { readonly limiter: Limiter; readonly cost: number };
      const leftMs = Math.floor((deadlineUs - this.clock()) / US_PER_MS);
      if (leftMs <= 0 || !(await charge.limiter.fits(charge.cost, { timeoutMs: leftMs }))) return false;
      part = takeAllAt(charges, this.clock(), receipts);
      if (part === -1) return true;
    }
  }

  /** revive — the dropped limiter of `pool`, back in the agent, if anything still holds it and the driver takes it; else undefined. */
  private revive(pool: string): AgentPool<Entry> | undefined {
    const entry = this.dropped.get(pool)?.deref();
    this.dropped.delete(pool);
    if (entry === undefined) return undefined;
    const commands = this.driver.revive(entry.pool);
    if (commands === null) return undefined;
    this.run(commands);
    return entry.pool;
  }

  /** release — Limiter.close: return the lease now, drop the limiter once nothing is in flight. */
  release(keeper: LeaseKeeper): void {
    const pool = this.driver.get(keeper.pool);
    if (pool?.keeper === keeper) this.run(this.driver.release(pool, this.clock()));
  }

  /** timerCount — how many keeper timers are armed now (an idle limiter holds none; the sweep's one timer aside). */
  get timerCount(): number {
    let count = 0;
    for (const pool of this.driver.running()) if (pool.waiters.timer !== null) count += 1;
    return count;
  }

  /** limiterCount — how many limiters the agent runs now (dropped ones not counted). */
  get limiterCount(): number {
    return this.driver.size;
  }

  /**
   * tryTakeAll — admits every `{ limiter, cost }` part or none (e.g. a global
   * pool and a tenant pool together). Synchronous; allocates nothing and
   * looks nothing up, so keep the charge list and reuse it. On false,
   * `lastDeniedIndex` names the part that was denied and its limiter's
   * `lastDenial` and `retryAfterMs` say why. Throws AgentError
   * ('invalid-argument') for a bad cost or a pool charged twice, before
   * anything is spent. With `receipts` (an array kept and reused like the
   * charge list), an admission writes each part's receipt at its index
   * (Limiter.tryTakeReceipt), for `giveBackAll`.
   */
  tryTakeAll(charges: readonly SlotCharge[], receipts?: number[]): boolean {
    const nowUs = this.clock();
    this.lastDeniedIndex = takeAllAt(charges, nowUs, receipts);
    noteArrivalsAt(charges, nowUs);
    return this.lastDeniedIndex === -1;
  }

  /** retryTakeAll — `tryTakeAll` for a call whose arrival a recording already noted: the same decision, not recorded again. */
  retryTakeAll(charges: readonly SlotCharge[], receipts?: number[]): boolean {
    this.lastDeniedIndex = takeAllAt(charges, this.clock(), receipts);
    return this.lastDeniedIndex === -1;
  }

  /**
   * record — starts recording the arrivals of the pools `options` chooses
   * to a trace file (adapters/trace-recording.ts): every limiter's take
   * calls, `tryTakeAll` and `takeAll`, each call once. Throws
   * AgentError('invalid-argument') for bad options, a file that cannot be
   * opened, or while a recording runs; `closed` after close.
   */
  record(options: RecordOptions): void {
    if (this.driver.closed) throw new AgentError('closed', 'the agent is closed');
    if (this.recording !== null && !this.recording.stopped)
      throw new AgentError('invalid-argument', `the agent records to ${this.recording.path} already; stopRecording() first`);
    const recording = TraceRecording.start(options, this.agentId, this.clock, (event) => {
      // It stopped (full, overflowed, a failed write, or stopRecording): the take paths need not call it any more.
      this.detachArrivals();
      this.emit(event);
    });
    this.recording = recording;
    for (const slot of this.slots()) slot.arrivals = recording.sinkFor(slot.pool);
  }

  /** recordingStats — the running or last recording's progress, or null when none was started. */
  recordingStats(): RecordingStats | null {
    return this.recording?.stats() ?? null;
  }

  /** stopRecording — stops the recording (if any), writes what it holds and closes its file. Never rejects. */
  async stopRecording(): Promise<void> {
    if (this.recording === null) return;
    this.detachArrivals();
    await this.recording.stop();
  }

  /** detachArrivals — no pool notes arrivals any more: the take paths are back to one null check. */
  private detachArrivals(): void {
    for (const slot of this.slots()) slot.arrivals = null;
  }

  /** slots — the slot of every limiter the agent runs or may revive. */
  private *slots(): Generator<LeaseSlot> {
    for (const pool of this.driver.running()) yield pool.keeper.slot;
    for (const entry of this.dropped.values()) {
      const slot = entry.deref()?.pool.keeper.slot;
      if (slot !== undefined) yield slot;
    }
  }

  /**
   * giveBackAll — gives back every part of an admission by `tryTakeAll` or
   * `takeAll` under the receipts it wrote: each pool gives back what its
   * refund rules allow (Limiter.giveBack), the others keep theirs counted.
   * Returns the tokens given back over all parts. Throws AgentError
   * ('invalid-argument') for a bad cost, before anything is given back.
   */
  giveBackAll(charges: readonly SlotCharge[], receipts: readonly number[]): number {
    return giveBackAllAt(charges, receipts, this.clock());
  }

  /** wake — runs the keeper's tick soon (once, however often it is called before then); a dropped limiter is revived. */
  wake(keeper: LeaseKeeper): void {
    let pool = this.driver.get(keeper.pool);
    if (pool === undefined && this.dropped.get(keeper.pool)?.deref()?.pool.keeper === keeper) pool = this.revive(keeper.pool);
    if (pool?.keeper === keeper) this.run(this.driver.wake(pool));
  }

  /** tick — `pool`'s tick, now. */
  private readonly tick = (pool: AgentPool<Entry>): void => {
    this.run(this.driver.tick(pool, this.clock()));
  };

  /**
   * close — returns every lease, waits up to `timeoutMs` (default 2000) for
   * the returns to be acknowledged, then closes the connection it opened.
   */
  async close(options: { readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.driver.closed) return;
    const settled = new Promise<void>((resolve) => {
      this.onSettled = resolve;
    });
    this.run(this.driver.close(this.clock()));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, options.timeoutMs ?? CLOSE_TIMEOUT_MS_DEFAULT);
    });
    await Promise.race([settled, timedOut]);
    clearTimeout(timer);
    // Whatever is still unanswered now is left to expire: stop acting on it.
    this.run(this.driver.stop());
    await this.stopRecording();
    if (this.ownsBus) await this.bus.drain();
  }

  /** run — carries out the driver's commands, in order. */
  private run(commands: readonly AgentCommand<Entry>[]): void {
    for (const command of commands) {
      switch (command.type) {
        case 'send':
          this.send(command);
          break;
        case 'publish':
          // A usage report: nothing awaits it, and a lost one only leaves a bound higher than it could be.
          this.bus.publish(command.subject, encodeMessage(command.message));
          break;
        case 'wake-at':
          this.arm(command.pool.waiters, command.delayMs);
          break;
        case 'wake-soon':
          this.soon(command.pool.waiters);
          break;
        case 'event':
          this.emit(command.event);
          break;
        case 'drop':
          this.arm(command.pool.waiters, Infinity);
          this.dropped.set(command.pool.name, new WeakRef(command.pool.waiters));
          break;
        case 'sweep-every':
          this.sweepEvery(command.periodMs);
          break;
        case 'settled':
          this.onSettled();
          break;
      }
    }
  }

  /** send — the request of `command` on the Bus; its reply or failure goes back to the driver. */
  private send(command: Extract<AgentCommand<Entry>, { type: 'send' }>): void {
    const { pool, seq } = command;
    this.bus.request(command.subject, encodeMessage(command.message), command.timeoutMs).then(
      (bytes) => this.run(this.driver.replied(pool, seq, bytes, this.clock())),
      (error: unknown) => {
        const code = error instanceof TokenleaseError ? error.code : 'bus-failure';
        const message = error instanceof Error ? error.message : String(error);
        this.run(this.driver.failed(pool, seq, code, message, this.clock()));
      },
    );
  }

  /** arm — `entry`'s one tick timer, `delayMs` from now (Infinity: none). */
  private arm(entry: Entry, delayMs: number): void {
    if (entry.timer !== null) clearTimeout(entry.timer);
    entry.timer = null;
    if (delayMs === Infinity) return;
    entry.timer = setTimeout(entry.wake, delayMs);
    entry.timer.unref();
  }

  /** soon — `entry` ticks once the work at hand is done (once, however often asked before then). */
  private soon(entry: Entry): void {
    if (entry.wakePending) return;
    entry.wakePending = true;
    setImmediate(entry.wake);
  }

  /** sweepEvery — the idle sweep's timer, every `periodMs` (null: none). */
  private sweepEvery(periodMs: number | null): void {
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
    if (periodMs === null) return;
    this.sweeper = setInterval(() => this.run(this.driver.sweep(this.clock())), periodMs);
    this.sweeper.unref();
  }
}
