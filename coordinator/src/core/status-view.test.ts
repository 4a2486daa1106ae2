/**
 * StatusView: what the status page shows of the pools a core holds, here
 * the calls agents reported (shared calls.ts) and the per-key pools with
 * the most denied calls. Pools: a configured "p" and template "tenant:*";
 * start at 0, quiet period 1 s.
 */
import { describe, expect, it } from 'vitest';
import { encodeMessage, subjectFor, type LeaseRequest } from '@tokenlease/shared';
import { parseCoordinatorConfig } from './config.js';
import { CoordinatorCore } from './coordinator-core.js';
import { acquireOf, FULL_AT, STANDARD_POOL_FIELDS } from './pool.fixtures.js';
import { statusView, TOP_DENIED_MAX } from './status-view.js';

function makeCore(): CoordinatorCore<string> {
  const config = parseCoordinatorConfig('status-view.test.yaml', {
    quietPeriodMs: 1000,
    pools: { p: STANDARD_POOL_FIELDS },
    templates: { 'tenant:*': { capacity: 10, refill: '10/s', leaseTtlMs: 1000 } },
  });
  return new CoordinatorCore<string>(config, 1, 0);
}

function report(core: CoordinatorCore<string>, pool: string, admitted: number, denied: number): void {
  const req: LeaseRequest = {
    ...acquireOf({ agentId: 'a', seq: 1, tokensWanted: 1, demandPerSecond: 1 }),
    pool,
    calls: { admitted, denied, shadowDenied: 0 },
  };
  core.receive(subjectFor('tokenlease', 'acquire', pool), encodeMessage(req), 'inbox', FULL_AT);
}

describe('statusView', () => {
  it('shows each pool the calls its agents reported, and the per-key pools most denied, most first', () => {
    const core = makeCore();
    report(core, 'p', 50, 9_999);
    for (let i = 0; i < TOP_DENIED_MAX + 5; i += 1) report(core, `tenant:k${String(i).padStart(2, '0')}`, i, i * 10);
    const view = statusView(core.held(), FULL_AT);
    expect(view.pools.find((p) => p.name === 'p')?.calls).toEqual({ admitted: 50, denied: 9_999, shadowDenied: 0 });
    // Per-key pools only (the configured one is shown as a pool), those with no denial never, at most TOP_DENIED_MAX.
    const top = view.topDenied.map((d) => [d.name, d.calls.denied]);
    const want = Array.from({ length: TOP_DENIED_MAX }, (_, j) => TOP_DENIED_MAX + 4 - j).map((i) => [
      `tenant:k${String(i).padStart(2, '0')}`,
      i * 10,
    ]);
    expect(top).toEqual(want);
    expect(view.topDenied[0]).toMatchObject({ template: 'tenant:*', calls: { admitted: TOP_DENIED_MAX + 4 } });
  });

  it('lists no pool as denied when agents reported no denial', () => {
    const core = makeCore();
    report(core, 'tenant:quiet', 5, 0);
    expect(statusView(core.held(), FULL_AT).topDenied).toEqual([]);
  });
});
