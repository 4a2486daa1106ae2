/**
 * A relay's own Prometheus metrics, beside the coordinator metrics of the
 * pools it serves (metrics.ts), in the same registry: what it holds from
 * the root, for how long, the fleet weight it states, and how the root
 * answered it. Read at each scrape from the relay core; counts only what
 * the service tells it. The `pool` label is the coordinator metrics' own
 * (a configured pool's name, a template's key for the pools made from it),
 * so labels stay as few as the configuration: a template's pools add up
 * their tokens and fleet weights, and show the least time left.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { RelayCore } from '../core/relay-core.js';
import type { UpstreamOutcome } from '../core/relay-driver.js';

export type { UpstreamOutcome } from '../core/relay-driver.js';

export class RelayMetrics {
  private readonly replies: Counter<'pool' | 'outcome'>;

  constructor(
    registry: Registry,
    relay: RelayCore<unknown>,
    nowUs: () => number,
    private readonly label: (pool: string) => string,
  ) {
    this.replies = new Counter({
      name: 'tokenlease_relay_upstream_requests_total',
      help: 'Requests to the root, by how they ended: granted, refused (an implausible grant), error (the root refused), unanswered.',
      labelNames: ['pool', 'outcome'],
      registers: [registry],
    });
    const tokens = new Gauge({
      name: 'tokenlease_relay_upstream_tokens',
      help: 'Tokens the root counts for this relay’s lease of the pool (0: none; summed over a template’s pools).',
      labelNames: ['pool'],
      registers: [registry],
      collect: () => {
        tokens.reset();
        seconds.reset();
        weight.reset();
        const t = nowUs();
        const sums = new Map<string, { tokens: number; seconds: number; weight: number }>();
        for (const lease of relay.upstreamLeases()) {
          const key = this.label(lease.pool);
          const sum = sums.get(key) ?? { tokens: 0, seconds: Infinity, weight: 0 };
          sum.tokens += lease.countedTokens;
          sum.seconds = Math.min(sum.seconds, Math.max(0, lease.endUs - t) / 1e6);
          sum.weight += lease.fleetWeight;
          sums.set(key, sum);
        }
        for (const [pool, sum] of sums) {
          tokens.set({ pool }, sum.tokens);
          seconds.set({ pool }, sum.seconds);
          weight.set({ pool }, sum.weight);
        }
      },
    });
    const seconds = new Gauge({
      name: 'tokenlease_relay_upstream_lease_seconds',
      help: 'Time until this relay stops using its lease of the pool from the root (0: none; the least over a template’s pools).',
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
    this.replies.inc({ pool: this.label(pool), outcome });
  }
}
