/**
 * CoordinatorMetrics against a real core (no NATS): grants counted once,
 * refusals by code, template pools under their template's label, and the
 * gauges of one scrape consistent with the pools.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor, type Reply } from '@tokenlease/shared';
import { acquireRequest } from '@tokenlease/shared/testing';
import { parseCoordinatorConfig } from '../core/config.js';
import { CoordinatorCore } from '../core/coordinator-core.js';
import { CoordinatorMetrics } from './metrics.js';

const S = 1_000_000;
const SECRET = 'metrics-test-secret-of-128-bits';

function coreOf(): CoordinatorCore<string> {
  const config = parseCoordinatorConfig('test.yaml', {
    quietPeriodMs: 1000,
    pools: {
      api: { capacity: 100, refill: '100/s', leaseTtlMs: 1000, maxLeaseTokens: 20 },
      search: { window: '50/s', leaseTtlMs: 1000, maxLeaseTokens: 10 },
    },
    templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000 } },
  });
  return new CoordinatorCore<string>(config, 1, 0);
}

function acquire(core: CoordinatorCore<string>, pool: string, agentId: string, seq: number, nowUs: number): Reply {
  const req = acquireRequest({ agentId, pool, leaseSecret: SECRET, seq, demandPerSecond: 0 });
  const out = core.receive(subjectFor('tokenlease', 'acquire', pool), encodeMessage(req), agentId, nowUs);
  const reply = out[0]?.reply;
  if (reply === undefined) throw new Error('no reply');
  return reply;
}

async function text(metrics: CoordinatorMetrics): Promise<string> {
  return metrics.render();
}

describe('CoordinatorMetrics', () => {
  it('counts a grant once however often it is repeated, and refusals by code', async () => {
    const core = coreOf();
    const metrics = new CoordinatorMetrics(core);
    try {
      const grant = acquire(core, 'api', 'a', 1, 2 * S);
      metrics.replied('api', grant, false);
      metrics.replied('api', grant, true);
      metrics.replied('nope', { v: 2, kind: 'error', seq: 1, code: 'unknown-pool', fault: 'peer', message: 'x', retryAfterMs: 0 }, false);
      metrics.replied('tenant:x', acquire(core, 'tenant:x', 'b', 1, 2 * S), false);
      const t = await text(metrics);
      expect(t).toContain('tokenlease_grants_total{pool="api"} 1\n');
      expect(t).toContain('tokenlease_granted_tokens_total{pool="api"} 5\n');
      expect(t).toContain('tokenlease_refusals_total{pool="(unknown)",code="unknown-pool"} 1\n');
      expect(t).toContain('tokenlease_grants_total{pool="tenant:*"} 1\n');
      expect(t).toContain('tokenlease_pool_level_tokens{pool="api"} 95\n');
      expect(t).toContain('tokenlease_pool_leased_tokens{pool="api"} 5\n');
      expect(t).toContain('tokenlease_pool_capacity_tokens{pool="tenant:*"} 10\n');
      expect(t).toContain('tokenlease_leases_opened_total{pool="api"} 1\n');
      expect(t).not.toContain('tokenlease_store_up');
    } finally {
      metrics.stop();
    }
  });

  it('counts expiries and the tokens they held, drained from the core', async () => {
    const core = coreOf();
    const metrics = new CoordinatorMetrics(core);
    try {
      acquire(core, 'api', 'a', 1, 2 * S);
      core.tick(3 * S + 1);
      const t = await text(metrics);
      expect(t).toContain('tokenlease_lease_expiries_total{pool="api"} 1\n');
      expect(t).toContain('tokenlease_expired_tokens_total{pool="api"} 5\n');
    } finally {
      metrics.stop();
    }
  });

  it('shows what a window pool has cooling, beside its level', async () => {
    const core = coreOf();
    const metrics = new CoordinatorMetrics(core);
    try {
      // Quiet 1 s, then the 50 cool one window: the level fills at 2 s.
      acquire(core, 'search', 'a', 1, 2 * S);
      core.tick(3 * S + 1);
      const t = await text(metrics);
      expect(t).toContain('tokenlease_pool_level_tokens{pool="search"} 45\n');
      expect(t).toContain('tokenlease_pool_cooling_tokens{pool="search"} 5\n');
      expect(t).toContain('tokenlease_pool_cooling_tokens{pool="api"} 0\n');
    } finally {
      metrics.stop();
    }
  });
});
