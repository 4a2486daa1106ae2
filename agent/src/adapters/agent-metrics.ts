/**
 * AgentMetrics: a Prometheus collector (prom-client) that a service using
 * the agent registers in its own registry. It reads what limiters already
 * count (`limiter.stats()` and the counters of `limiter.slot`) at each
 * scrape; it adds no work to the admission path.
 *
 *   const registry = new Registry();
 *   const metrics = new AgentMetrics(registry);
 *   metrics.track(agent.limiter('api'));
 *   // serve registry.metrics() on /metrics
 *
 * Per pool: admitted tokens and admissions, denied tokens by reason
 * (no-lease, exhausted, never-fits, expired), fallback admissions and
 * whether the fallback serves now, round-trips to the coordinator and
 * their latency (from the first send to the reply), request failures,
 * balance in hand, leases started and lease expiries, tokens granted and
 * returned, tokens given back for requests that do not count, and the
 * demand estimate. Several limiters of one pool (several
 * agents in one process) add up.
 *
 * Label cardinality: the `pool` label is `poolLabel(pool)` (default the
 * name). Pass e.g. `(p) => (p.startsWith('tenant:') ? 'tenant:*' : p)` to
 * aggregate template pools by template; beyond POOL_LABELS_MAX distinct
 * labels further pools count under `(other)`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DenialReason } from '../core/lease-slot.js';
import type { Limiter } from './limiter.js';

/** AGENT_POOL_LABELS_MAX — distinct `pool` label values; more count as `(other)`. */
export const AGENT_POOL_LABELS_MAX = 200;

const REASONS: readonly DenialReason[] = ['no-lease', 'exhausted', 'never-fits', 'expired', 'unknown-pool'];
const ROUND_TRIP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** AgentMetricsOptions — how AgentMetrics labels pools. */
export interface AgentMetricsOptions {
  /** The `pool` label of a pool name (default: the name). */
  readonly poolLabel?: (pool: string) => string;
}

/** The monotone counts read from a limiter, and the counter each feeds. */
type CountField =
  | 'admittedTokens'
  | 'admittedCount'
  | 'deniedCount'
  | 'shadowDeniedCount'
  | 'fallbackTokens'
  | 'fallbackCount'
  | 'roundTrips'
  | 'failures'
  | 'leasesStarted'
  | 'leaseExpiries'
  | 'tokensGranted'
  | 'tokensReturned'
  | 'refundedTokens'
  | 'refundedCount';

const COUNTERS: Readonly<Record<CountField, readonly [name: string, help: string]>> = {
  admittedTokens: ['tokenlease_agent_admitted_tokens_total', 'Tokens admitted from leases.'],
  admittedCount: ['tokenlease_agent_admissions_total', 'Admissions from leases.'],
  deniedCount: ['tokenlease_agent_denials_total', 'Denied calls (see tokenlease_agent_denied_tokens_total for tokens by reason).'],
  shadowDeniedCount: [
    'tokenlease_agent_shadow_denials_total',
    'Calls admitted in shadow mode that enforcing would have denied (see tokenlease_agent_shadow_denied_tokens_total).',
  ],
  fallbackTokens: ['tokenlease_agent_fallback_tokens_total', 'Tokens admitted from the local fallback bucket (outside the global bound).'],
  fallbackCount: ['tokenlease_agent_fallback_admissions_total', 'Admissions from the local fallback bucket.'],
  roundTrips: ['tokenlease_agent_round_trips_total', 'Requests the coordinator answered (acquires and returns).'],
  failures: ['tokenlease_agent_request_failures_total', 'Request attempts that got no reply (timeout, no coordinator, NATS down).'],
  leasesStarted: ['tokenlease_agent_leases_started_total', 'Leases started (each new lease id once).'],
  leaseExpiries: ['tokenlease_agent_lease_expiries_total', 'Leases that expired in hand before a renewal or return.'],
  tokensGranted: ['tokenlease_agent_granted_tokens_total', 'Tokens granted to this process by coordinators.'],
  tokensReturned: ['tokenlease_agent_returned_tokens_total', 'Tokens this process returned to coordinators.'],
  refundedTokens: [
    'tokenlease_agent_refunded_tokens_total',
    'Tokens given back to their lease for requests that do not count (skipFailedRequests, giveBack); admitted less refunded counted.',
  ],
  refundedCount: ['tokenlease_agent_refunds_total', 'Give-backs that returned tokens to their lease.'],
};

interface Tracked {
  readonly limiter: Limiter;
  /** The counts as of the last scrape, to add only what grew since. */
  readonly last: Map<string, number>;
}

/**
 * AgentMetrics — a Prometheus collector (prom-client) for the limiters a
 * service `track`s, registered in the service's own registry: per pool,
 * what the limiters count (admissions, denials by reason, fallback,
 * round-trips, leases, tokens granted, returned and given back, demand),
 * read at each scrape, with nothing added to the admission path.
 */
export class AgentMetrics {
  private readonly tracked = new Set<Tracked>();
  private readonly labels = new Set<string>();
  private readonly poolLabelOf: (pool: string) => string;
  private readonly counters = new Map<CountField, Counter<'pool'>>();
  private readonly deniedTokens: Counter<'pool' | 'reason'>;
  private readonly shadowDeniedTokens: Counter<'pool' | 'reason'>;
  private readonly roundTripSeconds: Histogram<'pool'>;

  /** AgentMetrics — registers the agent's metrics in `registry`; `track` the limiters to report. */
  constructor(registry: Registry, options: AgentMetricsOptions = {}) {
    this.poolLabelOf = options.poolLabel ?? ((pool) => pool);
    const registers = [registry];
    // Registered first: prom-client collects in registration order, so the counters below are brought up to date first.
    const pools: Gauge = new Gauge({
      name: 'tokenlease_agent_limiters',
      help: 'Limiters this process reports.',
      registers,
      collect: () => {
        this.collect();
        pools.set(this.tracked.size);
      },
    });
    for (const [field, [name, help]] of Object.entries(COUNTERS) as [CountField, readonly [string, string]][]) {
      this.counters.set(field, new Counter({ name, help, labelNames: ['pool'], registers }));
    }
    this.deniedTokens = new Counter({
      name: 'tokenlease_agent_denied_tokens_total',
      help: 'Tokens denied, by reason: no-lease, exhausted, never-fits, expired, unknown-pool.',
      labelNames: ['pool', 'reason'],
      registers,
    });
    this.shadowDeniedTokens = new Counter({
      name: 'tokenlease_agent_shadow_denied_tokens_total',
      help: 'Tokens admitted in shadow mode that enforcing would have denied, by reason (outside the global bound).',
      labelNames: ['pool', 'reason'],
      registers,
    });
    this.roundTripSeconds = new Histogram({
      name: 'tokenlease_agent_round_trip_seconds',
      help: 'Time from a request’s first send to the coordinator’s reply.',
      labelNames: ['pool'],
      buckets: ROUND_TRIP_BUCKETS,
      registers,
    });
    this.gauges = limiterGauges(registers);
  }

  private readonly gauges: LimiterGauges;

  /** track — reports `limiter` from the next scrape on (its counts so far included). */
  track(limiter: Limiter): void {
    for (const t of this.tracked) if (t.limiter === limiter) return;
    this.tracked.add({ limiter, last: new Map() });
  }

  /** untrack — stops reporting `limiter` (what it counted stays in the counters). */
  untrack(limiter: Limiter): void {
    for (const t of this.tracked) if (t.limiter === limiter) this.tracked.delete(t);
  }

  private label(pool: string): string {
    const label = this.poolLabelOf(pool);
    if (this.labels.has(label)) return label;
    if (this.labels.size >= AGENT_POOL_LABELS_MAX) return '(other)';
    this.labels.add(label);
    return label;
  }

  /** collect — adds what each limiter counted since the last scrape and sets the gauges. */
  private collect(): void {
    const { balance, demand, fallback, shadow, inFlight } = this.gauges;
    balance.reset();
    inFlight.reset();
    demand.reset();
    fallback.reset();
    shadow.reset();
    for (const t of this.tracked) {
      const stats = t.limiter.stats();
      const slot = t.limiter.slot;
      const pool = this.label(stats.pool);
      const counts: Record<CountField, number> = {
        admittedTokens: stats.admittedTokens,
        admittedCount: stats.admittedCount,
        deniedCount: stats.deniedCount,
        shadowDeniedCount: stats.shadowDeniedCount,
        fallbackTokens: stats.fallbackTokens,
        fallbackCount: stats.fallbackCount,
        roundTrips: slot.roundTrips,
        failures: stats.failures,
        leasesStarted: stats.leasesStarted,
        leaseExpiries: slot.leaseExpiries,
        tokensGranted: stats.tokensGranted,
        tokensReturned: stats.tokensReturned,
        refundedTokens: stats.refundedTokens,
        refundedCount: stats.refundedCount,
      };
      for (const [field, value] of Object.entries(counts) as [CountField, number][]) {
        const grew = value - (t.last.get(field) ?? 0);
        if (grew > 0) this.counters.get(field)?.inc({ pool }, grew);
        t.last.set(field, value);
      }
      for (const reason of REASONS) {
        const value = slot.deniedTokensFor(reason);
        const grew = value - (t.last.get(reason) ?? 0);
        if (grew > 0) this.deniedTokens.inc({ pool, reason }, grew);
        t.last.set(reason, value);
        const wouldBe = slot.shadowDeniedTokensFor(reason);
        const wouldBeGrew = wouldBe - (t.last.get(`shadow:${reason}`) ?? 0);
        if (wouldBeGrew > 0) this.shadowDeniedTokens.inc({ pool, reason }, wouldBeGrew);
        t.last.set(`shadow:${reason}`, wouldBe);
      }
      for (const us of slot.takeRoundTripSamples()) this.roundTripSeconds.observe({ pool }, us / 1e6);
      balance.inc({ pool }, stats.balanceTokens);
      demand.inc({ pool }, stats.demandPerSecond);
      fallback.inc({ pool }, stats.fallbackActive ? 1 : 0);
      shadow.inc({ pool }, stats.shadow ? 1 : 0);
      inFlight.inc({ pool }, t.limiter.inFlight);
    }
  }
}

interface LimiterGauges {
  readonly balance: Gauge<'pool'>;
  readonly demand: Gauge<'pool'>;
  readonly fallback: Gauge<'pool'>;
  readonly shadow: Gauge<'pool'>;
  readonly inFlight: Gauge<'pool'>;
}

/** limiterGauges — the gauges set from the limiters at each scrape, summed by pool label. */
function limiterGauges(registers: Registry[]): LimiterGauges {
  return {
    balance: new Gauge({
      name: 'tokenlease_agent_balance_tokens',
      help: 'Tokens in hand: what the live leases may still spend.',
      labelNames: ['pool'],
      registers,
    }),
    demand: new Gauge({
      name: 'tokenlease_agent_demand_tokens_per_second',
      help: 'The keepers’ demand estimate.',
      labelNames: ['pool'],
      registers,
    }),
    fallback: new Gauge({
      name: 'tokenlease_agent_fallback_active',
      help: 'Limiters whose fallback bucket serves now.',
      labelNames: ['pool'],
      registers,
    }),
    shadow: new Gauge({
      name: 'tokenlease_agent_shadow_active',
      help: 'Limiters in shadow mode now (admitting what they would deny).',
      labelNames: ['pool'],
      registers,
    }),
    inFlight: new Gauge({
      name: 'tokenlease_agent_slots_in_flight',
      help: 'Concurrency pools: this agent’s requests holding a slot now, within the hold bound (its balance gauge counts the free slots).',
      labelNames: ['pool'],
      registers,
    }),
  };
}
