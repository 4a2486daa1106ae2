/**
 * AgentMetrics: what a scrape reports of the limiters it tracks, read from
 * their counters (no NATS: a keeper with a lease set by hand).
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { keeperOptions } from '../core/keeper-options.js';
import { LeaseKeeper } from '../core/lease-keeper.js';
import { TEST_SECRET, testHooks } from '../core/lease-keeper.fixtures.js';
import { AgentMetrics } from './agent-metrics.js';
import { Limiter } from './limiter.js';

const NOW_US = 1_000_000;

function limiterOf(pool: string, balanceTokens: number): Limiter {
  const keeper = new LeaseKeeper(
    'agent-1',
    pool,
    () => 1,
    keeperOptions(),
    () => 0.5,
    TEST_SECRET,
    testHooks(),
  );
  Object.assign(keeper.slot, { hasLease: true, balanceTokens, expiresAtUs: NOW_US + 60_000_000, costMaxTokens: 10 });
  return new Limiter(keeper, { clock: () => NOW_US, wake: () => undefined });
}

async function values(registry: Registry): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const v of metric.values) {
      const labels = Object.entries(v.labels)
        .map(([k, l]) => `${k}=${String(l)}`)
        .join(',');
      out.set(`${'metricName' in v && typeof v.metricName === 'string' ? v.metricName : metric.name}{${labels}}`, v.value);
    }
  }
  return out;
}

describe('AgentMetrics', () => {
  it('counts admissions, denials by reason, expiries and round-trips per pool, once each', async () => {
    const registry = new Registry();
    const metrics = new AgentMetrics(registry);
    const api = limiterOf('api', 5);
    metrics.track(api);
    expect(api.tryTakeAt(3, NOW_US)).toBe(true);
    expect(api.tryTakeAt(3, NOW_US)).toBe(false); // exhausted
    expect(api.tryTakeAt(11, NOW_US)).toBe(false); // never fits
    api.slot.noteRoundTrip(2_000);
    api.slot.noteExpiry();
    let v = await values(registry);
    expect(v.get('tokenlease_agent_admitted_tokens_total{pool=api}')).toBe(3);
    expect(v.get('tokenlease_agent_denied_tokens_total{pool=api,reason=exhausted}')).toBe(3);
    expect(v.get('tokenlease_agent_denied_tokens_total{pool=api,reason=never-fits}')).toBe(11);
    expect(v.get('tokenlease_agent_denials_total{pool=api}')).toBe(2);
    expect(v.get('tokenlease_agent_round_trips_total{pool=api}')).toBe(1);
    expect(
      v.get('tokenlease_agent_round_trip_seconds_count{le=,pool=api}') ?? v.get('tokenlease_agent_round_trip_seconds_count{pool=api}'),
    ).toBe(1);
    expect(v.get('tokenlease_agent_lease_expiries_total{pool=api}')).toBe(1);
    expect(v.get('tokenlease_agent_balance_tokens{pool=api}')).toBe(2);
    // A second scrape adds only what happened since.
    expect(api.tryTakeAt(1, NOW_US)).toBe(true);
    v = await values(registry);
    expect(v.get('tokenlease_agent_admitted_tokens_total{pool=api}')).toBe(4);
    expect(v.get('tokenlease_agent_round_trips_total{pool=api}')).toBe(1);
  });

  it("reports a concurrency pool's slots: free ones as its balance, held ones in flight", async () => {
    const registry = new Registry();
    const metrics = new AgentMetrics(registry);
    const db = limiterOf('db', 3);
    Object.assign(db.slot, { concurrency: true });
    db.slot.holds.holdUs = 60_000_000;
    metrics.track(db);
    const a = db.acquireAt(NOW_US);
    db.acquireAt(NOW_US);
    let v = await values(registry);
    expect(v.get('tokenlease_agent_slots_in_flight{pool=db}')).toBe(2);
    expect(v.get('tokenlease_agent_balance_tokens{pool=db}')).toBe(1);
    expect(db.release(a)).toBe(true);
    v = await values(registry);
    expect(v.get('tokenlease_agent_slots_in_flight{pool=db}')).toBe(1);
    expect(v.get('tokenlease_agent_balance_tokens{pool=db}')).toBe(2);
  });

  it('adds up limiters of one pool and folds pools by the label function', async () => {
    const registry = new Registry();
    const metrics = new AgentMetrics(registry, { poolLabel: (p) => (p.startsWith('tenant:') ? 'tenant:*' : p) });
    const a = limiterOf('tenant:a', 4);
    const b = limiterOf('tenant:b', 6);
    metrics.track(a);
    metrics.track(b);
    metrics.track(b);
    a.tryTakeAt(1, NOW_US);
    b.tryTakeAt(2, NOW_US);
    const v = await values(registry);
    expect(v.get('tokenlease_agent_admitted_tokens_total{pool=tenant:*}')).toBe(3);
    expect(v.get('tokenlease_agent_balance_tokens{pool=tenant:*}')).toBe(7);
    expect(v.get('tokenlease_agent_limiters{}')).toBe(2);
  });

  it('counts would-be denials of shadow mode apart, by reason, and shows which limiters shadow', async () => {
    const registry = new Registry();
    const metrics = new AgentMetrics(registry);
    const api = limiterOf('api', 2);
    metrics.track(api);
    api.forceShadow = true;
    expect(api.tryTakeAt(2, NOW_US)).toBe(true); // from the lease
    expect(api.tryTakeAt(3, NOW_US)).toBe(true); // would be exhausted
    expect(api.tryTakeAt(11, NOW_US)).toBe(true); // would never fit
    let v = await values(registry);
    expect(v.get('tokenlease_agent_admitted_tokens_total{pool=api}')).toBe(2);
    expect(v.get('tokenlease_agent_shadow_denied_tokens_total{pool=api,reason=exhausted}')).toBe(3);
    expect(v.get('tokenlease_agent_shadow_denied_tokens_total{pool=api,reason=never-fits}')).toBe(11);
    expect(v.get('tokenlease_agent_shadow_denials_total{pool=api}')).toBe(2);
    expect(v.get('tokenlease_agent_denials_total{pool=api}') ?? 0).toBe(0);
    expect(v.get('tokenlease_agent_denied_tokens_total{pool=api,reason=exhausted}') ?? 0).toBe(0);
    expect(v.get('tokenlease_agent_shadow_active{pool=api}')).toBe(1);
    api.forceShadow = false;
    expect(api.tryTakeAt(1, NOW_US)).toBe(false);
    v = await values(registry);
    expect(v.get('tokenlease_agent_shadow_denied_tokens_total{pool=api,reason=exhausted}')).toBe(3);
    expect(v.get('tokenlease_agent_denied_tokens_total{pool=api,reason=exhausted}')).toBe(1);
    expect(v.get('tokenlease_agent_shadow_active{pool=api}')).toBe(0);
  });

  it('counts the tokens given back for requests that do not count, and the give-backs', async () => {
    const registry = new Registry();
    const metrics = new AgentMetrics(registry);
    const api = limiterOf('api', 10);
    metrics.track(api);
    const receipt = api.tryTakeReceipt(4);
    api.tryTakeReceipt(2);
    expect(api.giveBack(4, receipt)).toBe(4);
    const v = await values(registry);
    expect(v.get('tokenlease_agent_admitted_tokens_total{pool=api}')).toBe(6);
    expect(v.get('tokenlease_agent_refunded_tokens_total{pool=api}')).toBe(4);
    expect(v.get('tokenlease_agent_refunds_total{pool=api}')).toBe(1);
  });
});
