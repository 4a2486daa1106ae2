/**
 * A relay's own Prometheus metrics, beside the coordinator metrics of the
 * pools it serves (metrics.ts), in the same registry: what it holds from
 * the root, for how long, the fleet weight it states, and how the root
 * answered it. Read at each scrape from the relay core; counts only what
 * the service tells it. The `pool` label is a configured pool's name: a
 * relay has no templates, so the labels are bounded by its configuration.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { RelayCore } from '../core/relay-core.js';
import { RelayCredit } from '../core/relay-credit.js';

/** UpstreamOutcome — how one upstream request ended. */
export type UpstreamOutcome = 'granted' | 'refused' | 'error' | 'unanswered';

export class RelayMetrics {
  private readonly replies: Counter<'pool' | 'outcome'>;

  constructor(registry: Registry, relay: RelayCore<unknown>, nowUs: () => number) {
    this.replies = new Counter({
      name: 'tokenlease_relay_upstream_requests_total',
      help: 'Requests to the root, by how they ended: granted, refused (an implausible grant), error (the root refused), unanswered.',
      labelNames: ['pool', 'outcome'],
      registers: [registry],
    });
    const tokens = new Gauge({
      name: 'tokenlease_relay_upstream_tokens',
      help: 'Tokens the root counts for this relay’s lease of the pool (0: none).',
      labelNames: ['pool'],
      registers: [registry],
      collect: () => {
        tokens.reset();
        seconds.reset();
        weight.reset();
        const t = nowUs();
        for (const config of relay.core.config.pools) {
          const pool = relay.core.pool(config.name);
          const credit = pool?.parts.credit;
          if (pool === undefined || !(credit instanceof RelayCredit)) continue;
          tokens.set({ pool: config.name }, credit.countedTokens);
          seconds.set({ pool: config.name }, Math.max(0, credit.leaseEndUs - t) / 1e6);
          weight.set({ pool: config.name }, Math.max(1, pool.parts.leases.demandingWeightsSum));
        }
      },
    });
    const seconds = new Gauge({
      name: 'tokenlease_relay_upstream_lease_seconds',
      help: 'Time until this relay stops using its lease of the pool from the root (0: none).',
      labelNames: ['pool'],
      registers: [registry],
    });
    const weight = new Gauge({
      name: 'tokenlease_relay_fleet_weight',
      help: 'Σ weight of the live leases of the pool here whose agents report demand (at least 1): the fleet weight this relay states to the root.',
      labelNames: ['pool'],
      registers: [registry],
    });
  }

  /** upstream — a request to the root for `pool` ended as `outcome`. */
  upstream(pool: string, outcome: UpstreamOutcome): void {
    this.replies.inc({ pool, outcome });
  }
}
