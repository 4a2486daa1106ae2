/**
 * The coordinator's Prometheus metrics (prom-client, a registry of its own).
 *
 * It counts from two sources and decides nothing:
 * - the replies the adapters send (`replied`): grants and granted tokens,
 *   returns and returned tokens, refusals by code. A reply repeated to a
 *   retry is not counted again, so a grant is counted once. They are
 *   counted as plain numbers on the request path and added to the
 *   counters with the tallies below, so a scrape sees every reply sent
 *   before it; the time to handle each request goes to a histogram built
 *   for the request path (request-histogram.ts);
 * - what only the core knows, drained from its tallies (pool-tally.ts)
 *   every second and at every scrape: leases opened and expired, tokens
 *   lost at expiry, hold times, class claims not granted to their identity.
 * Gauges (capacity, allowance, level, leased, leases, waiting, refill) are
 * read at each scrape from the pools' last step, all in one pass, so one
 * scrape is one consistent picture: level + leased ≤ capacity + allowance
 * for every label as for every pool.
 *
 * Names follow Prometheus conventions: `tokenlease_` prefix, base units
 * (seconds, tokens), `_total` counters. The `pool` label is the pool's
 * name for configured (and removed) pools and the template's key
 * (`tenant:*`) for template pools, whatever their number; beyond
 * POOL_LABELS_MAX distinct labels further ones count under `(other)`.
 * Requests for no pool count under `(none)`, unknown names under `(unknown)`.
 */
import { parseSubject, type Reply } from '@tokenlease/shared';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CoordinatorCore } from '../core/coordinator-core.js';
import type { PoolTallyCounts } from '../core/pool-tally.js';
import { RequestHistogram } from './request-histogram.js';

/** POOL_LABELS_MAX — distinct `pool` label values; more are counted as `(other)`. */
export const POOL_LABELS_MAX = 1000;
/** How often the core's tallies are drained between scrapes, ms. */
const DRAIN_MS = 1000;

/** StoreWriteOutcome — how a durable write ended. */
export type StoreWriteOutcome = 'written' | 'fenced' | 'unavailable';

/** OwnershipView — what a durable coordinator owns now (unit → epoch) and whether its store answers. */
export interface OwnershipView {
  /** owned — the units owned now, with their epochs. */
  owned(): ReadonlyMap<string, number>;
  /** storeUp — whether the store answered the last heartbeat. */
  storeUp(): boolean;
  /** members — the live members the last answered heartbeat listed. */
  members(): readonly string[];
}

/** ServiceObserver — what the services tell the metrics as they work. */
export interface ServiceObserver {
  /** replied — `reply` was sent for `pool` (null: the request named none); `repeat`: the original reply, again. */
  replied(pool: string | null, reply: Reply, repeat: boolean): void;
  /** handled — a request of `op` took `seconds` to handle (until its replies were sent, or it was held). */
  handled(op: string, seconds: number): void;
  /** wrote — a durable write of `pool` took `seconds` and ended as `outcome`. */
  wrote(seconds: number, outcome: StoreWriteOutcome): void;
  /** dropped — a request was not handled at all, for `reason` (`reply-elsewhere`: its reply would go to another identity's inbox). */
  dropped(reason: string): void;
}

const SECONDS_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const HOLD_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 1, 2.5];

/** ReplyCounts — what the replies of one pool label said since the last drain. */
interface ReplyCounts {
  grants: number;
  grantedTokens: number;
  returns: number;
  returnedTokens: number;
  /** Refusals by error code. */
  readonly refusals: Map<string, number>;
}

export class CoordinatorMetrics implements ServiceObserver {
  readonly registry = new Registry();
  private readonly labels = new Set<string>();
  private natsUp = true;
  private readonly drainTimer: NodeJS.Timeout;
  /** Per-second counts of the last minutes, for the status page. */
  readonly history: HistoryRing;

  private readonly grants = this.counter(
    'tokenlease_grants_total',
    'Grants sent (renewals included; a reply repeated to a retry is not counted).',
    ['pool'],
  );
  private readonly grantedTokens = this.counter('tokenlease_granted_tokens_total', 'Tokens moved from a pool into leases by grants.', [
    'pool',
  ]);
  private readonly returns = this.counter('tokenlease_returns_total', 'Leases ended by a return.', ['pool']);
  private readonly returnedTokens = this.counter('tokenlease_returned_tokens_total', 'Unspent tokens returned to pools.', ['pool']);
  private readonly opened = this.counter('tokenlease_leases_opened_total', 'Leases opened (each lease id once).', ['pool']);
  private readonly expiries = this.counter('tokenlease_lease_expiries_total', 'Leases ended by their expiry.', ['pool']);
  private readonly classClaimsRefused = this.counter(
    'tokenlease_class_claims_refused_total',
    'Requests that claimed an agent class (or fleet weight) the configuration grants to other identities only: they weighed 1.',
    ['pool'],
  );
  private readonly clockDrifts = this.counter(
    'tokenlease_clock_drifts_total',
    "Leases whose agent's clock was found running outside the pool's clockDriftLimit: the agent is refused `clock-drift` from then on.",
    ['pool'],
  );
  private readonly expiredTokens = this.counter(
    'tokenlease_expired_tokens_total',
    'Tokens still bound in leases when they expired: lost to the pool (under-admission).',
    ['pool'],
  );
  private readonly refusals = this.counter('tokenlease_refusals_total', 'Requests refused, by error code.', ['pool', 'code']);
  private readonly agentCalls = this.counter(
    'tokenlease_agent_calls_total',
    'Calls (tryTake, HTTP requests) agents decided locally and reported, by decision (admitted, denied, shadow-denied: shadow mode admitted what enforcing would deny).',
    ['pool', 'decision'],
  );
  private readonly reloads = this.counter('tokenlease_reloads_total', 'Configuration reloads, by outcome (applied, unchanged, refused).', [
    'outcome',
  ]);
  private readonly drops = this.counter(
    'tokenlease_requests_dropped_total',
    "Requests not handled nor answered, by reason (reply-elsewhere: with bindIdentity, a reply subject outside the requester's own inbox).",
    ['reason'],
  );
  private readonly handling = new RequestHistogram({
    name: 'tokenlease_request_handling_seconds',
    help: 'Time to handle one request, until its replies were handed to NATS or it was held.',
    labelName: 'op',
    buckets: SECONDS_BUCKETS,
    registry: this.registry,
  });
  /** The replies' counts since the last drain, by pool label: counted on the request path as plain numbers, added to the counters at each drain. */
  private readonly replyCounts = new Map<string, ReplyCounts>();
  private readonly holds = new Histogram({
    name: 'tokenlease_hold_seconds',
    help: 'How long held requests waited for a worthwhile grant.',
    labelNames: ['pool'],
    buckets: HOLD_BUCKETS,
    registers: [this.registry],
  });
  /** Durable mode only: writes to Redis and the ones fenced. */
  private readonly writes: Histogram<'outcome'> | null;
  private readonly fenced: Counter | null;

  /**
   * CoordinatorMetrics — metrics of the pools `core` holds (read at each
   * scrape) and, in durable mode, of what `ownership` says it owns.
   */
  constructor(
    private readonly core: CoordinatorCore<unknown>,
    private readonly ownership: OwnershipView | null = null,
  ) {
    this.history = new HistoryRing();
    collectDefaultMetrics({ register: this.registry });
    const durable = ownership !== null;
    this.writes = !durable
      ? null
      : new Histogram({
          name: 'tokenlease_store_write_seconds',
          help: 'Durable mode: time of one fenced write of a pool to Redis, by outcome (written, fenced, unavailable).',
          labelNames: ['outcome'],
          buckets: SECONDS_BUCKETS,
          registers: [this.registry],
        });
    const fencedHelp =
      'Durable mode: writes refused by the store because the ownership that made them has ended (lapsed, or claimed anew by this or another coordinator).';
    this.fenced = !durable ? null : this.counter('tokenlease_store_fenced_writes_total', fencedHelp, []);
    this.gauges();
    this.drainTimer = setInterval(() => this.drain(), DRAIN_MS);
    this.drainTimer.unref();
  }

  /** natsConnected — what the NATS connection last said of itself. */
  natsConnected(up: boolean): void {
    this.natsUp = up;
  }

  /** reloaded — a reload ended as `outcome`. */
  reloaded(outcome: 'applied' | 'unchanged' | 'refused'): void {
    this.reloads.inc({ outcome });
  }

  replied(pool: string | null, reply: Reply, repeat: boolean): void {
    if (repeat) return;
    if (reply.kind === 'grant') {
      const counts = this.replyCountsOf(pool);
      counts.grants += 1;
      counts.grantedTokens += reply.tokensGranted;
      this.history.add('grants', 1);
      this.history.add('grantedTokens', reply.tokensGranted);
    } else if (reply.kind === 'receipt') {
      if (reply.tokensReturned > 0) {
        const counts = this.replyCountsOf(pool);
        counts.returns += 1;
        counts.returnedTokens += reply.tokensReturned;
      }
    } else if (reply.kind === 'error') {
      const refusals = this.replyCountsOf(pool).refusals;
      refusals.set(reply.code, (refusals.get(reply.code) ?? 0) + 1);
      this.history.add('refusals', 1);
    }
  }

  handled(op: string, seconds: number): void {
    this.handling.observe(op, seconds);
  }

  dropped(reason: string): void {
    this.drops.inc({ reason });
  }

  wrote(seconds: number, outcome: StoreWriteOutcome): void {
    this.writes?.observe({ outcome }, seconds);
    if (outcome === 'fenced') this.fenced?.inc();
  }

  /** render — the exposition text of every metric, after draining the tallies. */
  async render(): Promise<string> {
    this.drain();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  stop(): void {
    clearInterval(this.drainTimer);
  }

  /** poolLabel — the `pool` label of a pool name (see the module comment). */
  poolLabel(pool: string | null): string {
    if (pool === null) return '(none)';
    const core = this.core;
    let label = pool;
    const kind = core.kindOf(pool);
    if (kind === 'template') label = core.templateKeyOf(pool) ?? pool;
    else if (kind === null && core.pool(pool) === undefined) label = '(unknown)';
    if (this.labels.has(label)) return label;
    if (this.labels.size >= POOL_LABELS_MAX) return '(other)';
    this.labels.add(label);
    return label;
  }

  /** subjectPool — the pool a request subject names, or null. */
  subjectPool(prefix: string, subject: string): string | null {
    return parseSubject(prefix, subject)?.pool ?? null;
  }

  private drain(): void {
    this.core.takeTallies((pool, counts) => this.count(pool, counts));
    for (const [pool, c] of this.replyCounts) {
      if (c.grants > 0) this.grants.inc({ pool }, c.grants);
      if (c.grantedTokens > 0) this.grantedTokens.inc({ pool }, c.grantedTokens);
      if (c.returns > 0) this.returns.inc({ pool }, c.returns);
      if (c.returnedTokens > 0) this.returnedTokens.inc({ pool }, c.returnedTokens);
      for (const [code, n] of c.refusals) this.refusals.inc({ pool, code }, n);
    }
    this.replyCounts.clear();
  }

  /** replyCountsOf — the counts since the last drain of `pool`'s label. */
  private replyCountsOf(pool: string | null): ReplyCounts {
    const label = this.poolLabel(pool);
    const known = this.replyCounts.get(label);
    if (known !== undefined) return known;
    const counts: ReplyCounts = { grants: 0, grantedTokens: 0, returns: 0, returnedTokens: 0, refusals: new Map() };
    this.replyCounts.set(label, counts);
    return counts;
  }

  private count(pool: string, c: PoolTallyCounts): void {
    const label = { pool: this.poolLabel(pool) };
    if (c.leasesOpened > 0) this.opened.inc(label, c.leasesOpened);
    if (c.leasesExpired > 0) this.expiries.inc(label, c.leasesExpired);
    if (c.classClaimsRefused > 0) this.classClaimsRefused.inc(label, c.classClaimsRefused);
    if (c.clockDrifts > 0) this.clockDrifts.inc(label, c.clockDrifts);
    if (c.tokensExpired > 0) this.expiredTokens.inc(label, c.tokensExpired);
    for (const us of c.holdsUs) this.holds.observe(label, us / 1e6);
    const { admitted, denied, shadowDenied } = c.calls;
    if (admitted > 0) this.agentCalls.inc({ ...label, decision: 'admitted' }, admitted);
    if (denied > 0) this.agentCalls.inc({ ...label, decision: 'denied' }, denied);
    if (shadowDenied > 0) this.agentCalls.inc({ ...label, decision: 'shadow-denied' }, shadowDenied);
    if (denied > 0) this.history.add('deniedCalls', denied);
  }

  private counter<T extends string>(name: string, help: string, labelNames: readonly T[]): Counter<T> {
    return new Counter<T>({ name, help, labelNames, registers: [this.registry] });
  }

  /**
   * gauges — the gauges read at each scrape. prom-client collects metrics
   * in the order they were registered, so the reader, registered first,
   * reads every pool once and sets all the others from that one reading.
   */
  private gauges(): void {
    let read = (): void => undefined;
    const reader = new Gauge({
      name: 'tokenlease_scrape_pools',
      help: 'Pools read by the last scrape.',
      registers: [this.registry],
      collect: () => read(),
    });
    const gauge = (name: string, help: string, labelNames: string[] = []): Gauge =>
      new Gauge({ name, help, labelNames, registers: [this.registry] });
    const fields = poolGauges(gauge);
    const pools = gauge('tokenlease_pools', 'Pools held, by kind (configured, template, removed and lapsing).', ['kind']);
    const ownership = this.ownership === null ? null : ownershipGauges(gauge);
    const nats = gauge('tokenlease_nats_connected', '1 while the NATS connection is up.');
    read = (): void => {
      nats.set(this.natsUp ? 1 : 0);
      for (const g of Object.values(fields)) g.reset();
      pools.reset();
      const { sums, kinds, count } = this.readPools();
      for (const [pool, sum] of sums) for (const field of POOL_FIELDS) fields[field].set({ pool }, sum[field]);
      for (const [kind, n] of Object.entries(kinds)) pools.set({ kind }, n);
      if (ownership !== null) this.setOwnership(ownership);
      reader.set(count);
    };
  }

  /** readPools — one reading of every pool held: the pool gauges' values summed by label, the pools by kind, and how many. */
  private readPools(): {
    sums: Map<string, Record<PoolField, number>>;
    kinds: Record<'configured' | 'template' | 'removed', number>;
    count: number;
  } {
    const sums = new Map<string, Record<PoolField, number>>();
    const kinds = { configured: 0, template: 0, removed: 0 };
    let count = 0;
    for (const held of this.core.held()) {
      count += 1;
      kinds[held.kind] += 1;
      const s = held.pool.snapshot();
      const label = this.poolLabel(held.name);
      const sum = sums.get(label) ?? (Object.fromEntries(POOL_FIELDS.map((field) => [field, 0])) as Record<PoolField, number>);
      sum.capacity += s.config.capacity;
      sum.allowance += s.config.allowance;
      sum.level += s.levelTokens;
      sum.leased += s.leasedTokens;
      sum.leases += s.leases;
      sum.waiting += s.waiting;
      sum.refill += (s.config.refill.tokens * 1000) / s.config.refill.periodMs;
      sum.shadow += s.config.shadow ? 1 : 0;
      sum.cooling += s.coolingTokens;
      sum.slots += s.config.concurrency?.limit ?? 0;
      sums.set(label, sum);
    }
    return { sums, kinds, count };
  }

  private setOwnership({ owned, epoch, storeUp, members }: { owned: Gauge; epoch: Gauge; storeUp: Gauge; members: Gauge }): void {
    owned.reset();
    epoch.reset();
    const view = this.ownership;
    if (view === null) return;
    for (const [unit, e] of view.owned()) {
      const pool = unit === '*' ? '(catch-all)' : this.poolLabel(unit);
      owned.set({ pool }, 1);
      epoch.set({ pool }, e);
    }
    storeUp.set(view.storeUp() ? 1 : 0);
    members.set(view.members().length);
  }
}

/** POOL_FIELDS — what the pool gauges say of each pool label, in the order they are registered. */
const POOL_FIELDS = ['capacity', 'allowance', 'level', 'leased', 'leases', 'waiting', 'refill', 'shadow', 'cooling', 'slots'] as const;
type PoolField = (typeof POOL_FIELDS)[number];
type GaugeOf = (name: string, help: string, labelNames?: string[]) => Gauge;

/** poolGauges — the gauges of each pool label (a template's pools are summed under theirs), registered in POOL_FIELDS order. */
function poolGauges(gauge: GaugeOf): Record<PoolField, Gauge> {
  return {
    capacity: gauge('tokenlease_pool_capacity_tokens', 'Capacity B of the pool (summed over a template’s pools).', ['pool']),
    allowance: gauge('tokenlease_pool_allowance_tokens', 'Allowance A: how far leased tokens may exceed the bucket.', ['pool']),
    level: gauge('tokenlease_pool_level_tokens', 'Tokens in the pool’s level as of its last step.', ['pool']),
    leased: gauge('tokenlease_pool_leased_tokens', 'Σ bounds of live leases (and of retired parts still counted).', ['pool']),
    leases: gauge('tokenlease_pool_leases', 'Live leases.', ['pool']),
    waiting: gauge('tokenlease_pool_waiting_requests', 'Requests held while a worthwhile grant accrues.', ['pool']),
    refill: gauge('tokenlease_pool_refill_tokens_per_second', 'Refill rate r of the pool (summed over a template’s pools).', ['pool']),
    shadow: gauge('tokenlease_pool_shadow', 'Pools in shadow mode: 1 per pool (summed over a template’s pools).', ['pool']),
    cooling: gauge(
      'tokenlease_pool_cooling_tokens',
      'Window pools: tokens reported spent or lapsed, going back to the level one window after. Concurrency pools: slots of ended leases held back until no request started under them can still run.',
      ['pool'],
    ),
    slots: gauge(
      'tokenlease_pool_concurrency_limit',
      'Concurrency pools: N, the most requests in flight (summed over a template’s pools); their level, leased and cooling gauges count slots: free, leased to agents, held back.',
      ['pool'],
    ),
  };
}

/** ownershipGauges — durable mode's gauges of what this coordinator owns and of the store. */
function ownershipGauges(gauge: GaugeOf): { owned: Gauge; epoch: Gauge; storeUp: Gauge; members: Gauge } {
  return {
    owned: gauge('tokenlease_pool_owned', 'Durable mode: 1 for each unit this coordinator owns.', ['pool']),
    epoch: gauge('tokenlease_pool_owner_epoch', 'Durable mode: the epoch of this coordinator’s ownership of each unit.', ['pool']),
    storeUp: gauge('tokenlease_store_up', 'Durable mode: 1 while the last heartbeat to Redis succeeded.'),
    members: gauge('tokenlease_members', 'Durable mode: live coordinators seen in Redis.'),
  };
}

/** HISTORY_SECONDS — how far back the status page's chart goes. */
export const HISTORY_SECONDS = 300;

/** HistorySecond — one second's grants, granted tokens and refusals by the coordinator, and calls agents reported denying. */
export interface HistorySecond {
  t: number;
  grants: number;
  grantedTokens: number;
  refusals: number;
  deniedCalls: number;
}

type HistoryField = Exclude<keyof HistorySecond, 't'>;

/** HistoryRing — per-second counts of the last HISTORY_SECONDS (wall-clock seconds: it is shown, not computed with). */
export class HistoryRing {
  private readonly seconds: HistorySecond[] = [];

  add(field: HistoryField, n: number): void {
    const t = Math.floor(Date.now() / 1000);
    let last = this.seconds[this.seconds.length - 1];
    if (last === undefined || last.t !== t) {
      last = { t, grants: 0, grantedTokens: 0, refusals: 0, deniedCalls: 0 };
      this.seconds.push(last);
      while (this.seconds.length > HISTORY_SECONDS) this.seconds.shift();
    }
    last[field] += n;
  }

  /** series — one entry per second of the last HISTORY_SECONDS up to now, zeros where nothing happened. */
  series(): HistorySecond[] {
    const now = Math.floor(Date.now() / 1000);
    const byT = new Map(this.seconds.map((s) => [s.t, s]));
    const out = [];
    for (let t = now - HISTORY_SECONDS + 1; t <= now; t += 1)
      out.push(byT.get(t) ?? { t, grants: 0, grantedTokens: 0, refusals: 0, deniedCalls: 0 });
    return out;
  }
}
