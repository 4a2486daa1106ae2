/**
 * SimMember: one durable coordinator process in the simulator: the real
 * OwnershipDriver (coordinator/src/core/ownership-driver.ts), which holds
 * the real CoordinatorCore and write lanes, with its commands carried out
 * on the virtual clock against the simulated store and network, as
 * durable-service.ts carries them out against Redis and NATS.
 *
 * - A store call lands `callUs()` after it is made: the store acts on it
 *   then and the answer comes back at once. While the member is cut from
 *   the store (`cut`), its calls land unanswered (a failure) and change
 *   nothing.
 * - A crash loses the driver; its calls in flight still land (or not, as
 *   the crash says), unanswered.
 * - A held write (a reclaim-coordinator fault): the owner's record lapses
 *   with a write of the pool out; that write's outcome is decided now (or
 *   left to the store) and lands `lateUs` later.
 *
 * Checks, beside the simulation's own:
 * - every grant sent is backed by a write the store accepted (SimStore.backs)
 *   and comes from an ownership the member still holds;
 * - no ownership is stepped down while the store still names it the owner;
 * - a configured pool is claimed only by the member its last heartbeat
 *   named preferred for it (ownership.ts), never by the catch-all's owner
 *   for its own.
 */
import {
  preferredOwner,
  type Claim,
  type CoordinatorConfig,
  type OwnershipCommand,
  type OwnershipDriver,
  type PersistedPool,
  type Pool,
  type StoreCall,
  type StoreResult,
} from '@tokenlease/coordinator/internal';
import { ownershipDriver } from './broken-ownership.js';
import type { Broken, Fault } from './sim-config.js';
import type { CoordinatorHost } from './sim-coordinator.js';
import { COORDINATOR_TICK_US_MAX, POOL, RECLAIM_ARMED_US, type ReplyTo } from './sim-events.js';
import type { SimStore } from './sim-store.js';

type Command = OwnershipCommand<ReplyTo>;
type ReclaimFault = Extract<Fault, { kind: 'reclaim-coordinator' }>;

/** MemberHost — what a member needs from the simulation. */
export interface MemberHost extends CoordinatorHost {
  /** adopted — `pool` was taken over at `takeoverUs` with `state` from the store. */
  adopted(pool: Pool<ReplyTo>, takeoverUs: number, state: PersistedPool | null): void;
  /** claimed — `member` claimed the run's pool under `epoch`. */
  claimed(member: string, epoch: number): void;
}

/** MemberSpec — the store, how long a call takes, the ownership TTL, and what is broken on purpose. */
export interface MemberSpec {
  readonly store: SimStore;
  callUs(): number;
  readonly ownershipTtlMs: number;
  readonly broken?: Broken;
}

/** UNANSWERED — the step-down reason of an ownership whose renewals the store has not answered for one ownership TTL (ownership-driver.ts). */
const UNANSWERED = /has not renewed the ownership for one ownership TTL/;

/** answeredOwnership — whether a claim's or renewal's answer set the record's expiry: a claim taken, a renewal that renewed. */
function answeredOwnership(result: StoreResult & { readonly ok: true }): boolean {
  const value: unknown = result.value;
  return value === true || (typeof value === 'object' && value !== null && (value as { taken?: unknown }).taken === true);
}

/** Call — a store call in flight: when it lands (`gen`), and what becomes of it. */
interface Call {
  readonly call: StoreCall;
  /** When the driver made the call. */
  readonly sentUs: number;
  gen: number;
  /** 'store': the store decides as it lands; else decided already (a held write). */
  fate: 'store' | 'written' | 'fenced' | 'unavailable';
  /** Whether it reaches the store (a crashed member's may not). */
  lands: boolean;
}

export class SimMember {
  readonly member: string;
  readonly driver: OwnershipDriver<ReplyTo>;
  crashed = false;
  /** Outcomes of writes that landed after their ownership ended, a newer one holding the pool. */
  lateOutcomes = 0;
  /** Subscriptions: key → subject and queue group. */
  readonly subscriptions = new Map<string, { readonly subject: string; readonly queueGroup: string }>();
  private readonly calls = new Map<number, Call>();
  /** Per unit, when the latest claim or renewal the store answered (taken, renewed) was sent: its record lives one ownership TTL past it. */
  private readonly answeredSentUs = new Map<string, number>();
  private cutUntilUs = -Infinity;
  private tickGen = 0;
  private tickAtUs = Infinity;
  private armed: { readonly fault: ReclaimFault; readonly untilUs: number } | null = null;
  /** Per unit, the epoch it last claimed it under. */
  private readonly claimedEpochs = new Map<string, number>();

  constructor(
    readonly id: number,
    config: CoordinatorConfig,
    private readonly host: MemberHost,
    private readonly spec: MemberSpec,
    nowUs: number,
  ) {
    this.member = `c${id}`;
    const options = { config, member: this.member, ownershipTtlMs: spec.ownershipTtlMs, startUs: nowUs };
    this.driver = ownershipDriver(options, spec.broken);
    this.perform(this.driver.start(nowUs), nowUs);
  }

  /** ownedEpoch — the epoch under which it owns the run's pool now, or null. */
  ownedEpoch(): number | null {
    return this.crashed ? null : (this.driver.ownedEpochs().get(POOL) ?? null);
  }

  message(key: string, to: ReplyTo, subject: string, bytes: Uint8Array, nowUs: number): void {
    if (!this.crashed)
      this.perform(
        this.guard(() => this.driver.message(key, subject, bytes, to, nowUs)),
        nowUs,
      );
  }

  reload(config: CoordinatorConfig, nowUs: number): void {
    if (!this.crashed)
      this.perform(
        this.guard(() => this.driver.reconfigure(config, nowUs).commands),
        nowUs,
      );
  }

  tick(gen: number, nowUs: number): void {
    if (this.crashed || gen !== this.tickGen) return;
    this.tickAtUs = Infinity;
    this.perform(
      this.guard(() => this.driver.tick(nowUs)),
      nowUs,
    );
    this.wake(nowUs + COORDINATOR_TICK_US_MAX, nowUs);
  }

  busDone(ticket: number, nowUs: number): void {
    if (!this.crashed)
      this.perform(
        this.guard(() => this.driver.done(ticket, nowUs)),
        nowUs,
      );
  }

  /** landed — store call `ticket` lands now (if `gen` is its landing): the store acts, and the driver hears its answer. */
  landed(ticket: number, gen: number, nowUs: number): void {
    const c = this.calls.get(ticket);
    if (c === undefined || c.gen !== gen) return;
    this.calls.delete(ticket);
    if (this.crashed) {
      if (c.lands && c.fate === 'store') this.spec.store.perform(this.member, c.call, nowUs);
      return;
    }
    const result = this.answer(c, nowUs);
    if (c.call.op === 'write' && c.call.unit === POOL) this.noteOutcome(c.call.epoch);
    if (result.ok && (c.call.op === 'claim' || c.call.op === 'renew') && answeredOwnership(result)) {
      const unit = c.call.unit;
      this.answeredSentUs.set(unit, Math.max(this.answeredSentUs.get(unit) ?? -Infinity, c.sentUs));
    }
    const before = c.call.op === 'claim' ? (this.driver.ownedEpochs().get(c.call.unit) ?? null) : null;
    const commands = this.guard(() => this.driver.stored(ticket, result, nowUs));
    if (c.call.op === 'claim' && result.ok) this.noteClaim(c.call.unit, result as StoreResult<'claim'>, before, nowUs);
    this.perform(commands, nowUs);
  }

  /** crash — the member dies; its calls in flight still reach the store if `callsLand`. */
  crash(callsLand: boolean): void {
    this.crashed = true;
    this.subscriptions.clear();
    for (const c of this.calls.values()) c.lands = callsLand;
  }

  /** cut — the member's store calls fail for `forUs` from `nowUs`. */
  cut(nowUs: number, forUs: number): void {
    this.cutUntilUs = Math.max(this.cutUntilUs, nowUs + forUs);
  }

  /** armReclaim — a reclaim-coordinator fault at `nowUs`: it strikes now if a write of the pool is in flight, else at the start of the next one. */
  armReclaim(fault: ReclaimFault, nowUs: number): void {
    const inFlight = [...this.calls].find(([, c]) => c.call.op === 'write' && c.call.unit === POOL && c.fate === 'store');
    if (inFlight !== undefined) this.strike(fault, inFlight[0], inFlight[1], nowUs);
    else this.armed = { fault, untilUs: nowUs + RECLAIM_ARMED_US };
  }

  private answer(c: Call, nowUs: number): StoreResult {
    if (c.fate === 'written' || c.fate === 'fenced') return { ok: true, value: c.fate === 'written' };
    if (c.fate === 'unavailable' || nowUs < this.cutUntilUs) return { ok: false, error: new Error('the store does not answer') };
    const value = this.spec.store.perform(this.member, c.call, nowUs);
    if (c.call.op === 'claim' && c.call.unit === POOL && this.spec.broken === 'forget-kept-leases') return forgetLeases(value);
    return { ok: true, value };
  }

  /**
   * strike — the reclaim fault strikes at `nowUs` with write `ticket` in
   * flight: the pool's record lapses, and the write's outcome is decided now
   * (written: it reached the store before the lapse; unavailable: it never
   * does) or left to the store (fenced: it reaches it only after), landing
   * `lateUs` from now.
   */
  private strike(fault: ReclaimFault, ticket: number, c: Call, nowUs: number): void {
    const store = this.spec.store;
    this.armed = null;
    if (fault.outcome === 'written') c.fate = store.perform(this.member, c.call, nowUs) === true ? 'written' : 'fenced';
    if (fault.outcome === 'unavailable') c.fate = 'unavailable';
    store.lapse(POOL, nowUs);
    c.gen += 1;
    this.host.push(nowUs + fault.lateUs, { k: 'store-answer', id: this.id, ticket, gen: c.gen });
  }

  private perform(commands: readonly Command[], nowUs: number): void {
    for (const c of commands) this.carry(c, nowUs);
  }

  private carry(c: Command, nowUs: number): void {
    switch (c.kind) {
      case 'store':
        return this.call(c.ticket, c.call, nowUs);
      case 'subscribe':
        return void this.subscriptions.set(c.key, { subject: c.subject, queueGroup: c.queueGroup });
      case 'unsubscribe':
        this.subscriptions.delete(c.key);
        return this.host.push(nowUs, { k: 'bus-done', id: this.id, ticket: c.ticket });
      case 'flush-bus':
      case 'probe-bus':
        // The modelled bus always answers (its partitions are agents').
        return this.host.push(nowUs, { k: 'bus-done', id: this.id, ticket: c.ticket });
      case 'send':
        return this.send(c.deliveries, c.producedUs, c.epoch, 'pool' in c.label ? c.label.pool : POOL);
      case 'internal-error':
        return this.host.failed(`coordinator ${this.member} failed on ${c.subject}: ${String(c.error)}`);
      case 'faults':
        return this.host.failed(`pool ${c.faults[0]?.pool} failed: ${String(c.faults[0]?.error)}`);
      case 'log':
        return this.checkLog(c.line.fields, nowUs);
      case 'wake':
        return this.wake(c.atUs, nowUs);
      default: // handled, wrote, stopped: for metrics and stop, which the simulation does not need
        return;
    }
  }

  private call(ticket: number, call: StoreCall, nowUs: number): void {
    const c: Call = { call, sentUs: nowUs, gen: 0, fate: 'store', lands: true };
    this.calls.set(ticket, c);
    this.host.push(nowUs + this.spec.callUs(), { k: 'store-answer', id: this.id, ticket, gen: 0 });
    const armed = this.armed;
    if (armed === null || call.op !== 'write' || call.unit !== POOL) return;
    if (nowUs <= armed.untilUs) this.strike(armed.fault, ticket, c, nowUs);
    else this.armed = null;
  }

  /** send — replies of `unit` leave; each grant must be backed by the store, and come from the lane of the ownership of `unit` held now (the latest claimed). */
  private send(deliveries: readonly Delivery[], producedUs: number, epoch: number | null, unit: string): void {
    for (const { reply } of deliveries) {
      if (reply.kind !== 'grant') continue;
      const grant = `grant of lease ${reply.leaseId} of ${unit} (seq ${reply.seq}, epoch ${reply.epoch}, ${reply.tokensGranted} tokens)`;
      if (!this.spec.store.backs(unit, reply))
        this.host.violation(`${grant} sent by ${this.member} with no write of it the store accepted`);
      if (epoch === null || epoch !== this.claimedEpochs.get(unit))
        this.host.violation(`${grant} sent by ${this.member} from the lane of epoch ${epoch ?? 'none'} after that ownership ended`);
    }
    this.host.send(deliveries, producedUs, epoch ?? 0);
  }

  /**
   * checkLog — the driver never fails; a step-down comes once the store no
   * longer names that ownership, or, when the store has stopped answering,
   * only after a whole ownership TTL without an answered claim or renewal
   * of it (the driver cannot know then; it must not guess sooner).
   */
  private checkLog(fields: Readonly<Record<string, unknown>>, nowUs: number): void {
    if (fields['event'] === 'driver-failed')
      this.host.failed(`coordinator ${this.member}: ${String(fields['event'])}: ${String(fields['err'])}`);
    if (fields['event'] !== 'stepped-down') return;
    const epoch = fields['epoch'] as number;
    const unit = fields['pool'] as string;
    if (!this.spec.store.owns(unit, epoch, nowUs)) return;
    const reason = String(fields['reason']);
    const answeredUs = this.answeredSentUs.get(unit) ?? -Infinity;
    if (UNANSWERED.test(reason) && nowUs - answeredUs >= this.spec.ownershipTtlMs * 1000) return;
    this.host.violation(`${this.member} stepped down epoch ${epoch}, which the store still names the owner (${reason})`);
  }

  private noteOutcome(epoch: number): void {
    const now = this.ownedEpoch();
    if (now !== null && now !== epoch) this.lateOutcomes += 1;
  }

  /** noteClaim — the claim of `unit` answered: if it took it, the checks hear of it, and of the run's pool's adoption. */
  private noteClaim(unit: string, result: StoreResult<'claim'>, before: number | null, nowUs: number): void {
    if (!result.ok || !result.value.taken) return;
    const epoch = result.value.epoch;
    if (this.driver.ownedEpochs().get(unit) !== epoch || before === epoch) return;
    this.claimedEpochs.set(unit, epoch);
    const preferred = preferredOwner(unit, this.driver.members());
    if (this.driver.core.kindOf(unit) === 'fixed' && preferred !== this.member)
      this.host.violation(
        `${this.member} claimed configured pool ${unit} though its last heartbeat named ${preferred ?? 'nobody'} preferred`,
      );
    if (unit !== POOL) return;
    const state = result.value.state;
    this.host.adopted(this.driver.core.pool(POOL) as Pool<ReplyTo>, nowUs, state !== null && 'leases' in state ? state : null);
    this.host.claimed(this.member, epoch);
  }

  private wake(atUs: number, nowUs: number): void {
    const at = Math.min(nowUs + COORDINATOR_TICK_US_MAX, Math.max(nowUs + 1, atUs));
    if (at >= this.tickAtUs) return;
    this.tickAtUs = at;
    this.tickGen += 1;
    this.host.push(at, { k: 'coordinator-tick', id: this.id, gen: this.tickGen });
  }

  private guard(f: () => Command[]): Command[] {
    try {
      return f();
    } catch (error) {
      this.host.failed(`coordinator ${this.member} failed: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
  }
}

type Delivery = Parameters<CoordinatorHost['send']>[0][number];

/** forgetLeases — a claim's answer with the kept leases dropped (broken on purpose: `forget-kept-leases`). */
function forgetLeases(value: ReturnType<SimStore['perform']>): StoreResult {
  const claim = value as Claim;
  if (!claim.taken || claim.state === null || !('leases' in claim.state)) return { ok: true, value: claim };
  return { ok: true, value: { ...claim, state: { levelTokens: claim.state.levelTokens, leases: [] } } };
}
