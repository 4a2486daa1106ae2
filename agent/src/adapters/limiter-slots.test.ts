/**
 * A limiter on a concurrency pool, on an Agent whose bus is a coordinator
 * stand-in granting slots: `acquireWithin` waits its turn behind the calls
 * already waiting, is served by a release, times out with 0, refuses a bad
 * timeout, and ends with 0 when the limiter closes.
 */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { Agent } from './agent.js';
import { grantOf, standInBus } from './bus.fixtures.js';
import { SLOT_WAIT_MS_MAX } from './limiter.js';

/** An agent whose pool "db" has 2 slots held at most 60 s: every acquire gets what it asks, up to 2 in the lease. */
async function slotAgent(): Promise<Agent> {
  const bus = standInBus((_subject, req) => {
    if (req.op === 'return') return { v: 2, kind: 'receipt', seq: req.seq, tokensReturned: req.tokensLeft };
    if (req.op !== 'acquire') throw new Error('only acquires and returns here');
    const held = req.leaseId === 'L1' ? req.tokensLeft : 0;
    const granted = Math.max(0, Math.min(req.tokensWanted, 2 - held));
    return grantOf(req.seq, 'L1', granted, held + granted, { maxLeaseTokens: 2, capacityTokens: 2, holdMs: 60_000 });
  });
  return Agent.connect({ bus });
}

describe('Limiter.acquireWithin', () => {
  it('waits behind the calls already waiting, served in order as slots are released', async () => {
    const agent = await slotAgent();
    try {
      const db = agent.limiter('db');
      const first = await db.acquireWithin(2000);
      const second = await db.acquireWithin(2000);
      expect(first).toBeGreaterThan(0);
      expect(second).toBeGreaterThan(0);
      const order: string[] = [];
      const third = db.acquireWithin(2000).then((h) => (order.push('third'), h));
      const fourth = db.acquireWithin(2000).then((h) => (order.push('fourth'), h));
      expect(db.waiting).toBe(true);
      expect(db.release(first)).toBe(true);
      expect(await third).toBeGreaterThan(0);
      expect(db.release(second)).toBe(true);
      expect(await fourth).toBeGreaterThan(0);
      expect(order).toEqual(['third', 'fourth']);
      expect(db.inFlight).toBe(2);
    } finally {
      await agent.close();
    }
  });

  it('resolves 0 at its timeout, and 0 for every waiter when the limiter closes', async () => {
    const agent = await slotAgent();
    try {
      const db = agent.limiter('db');
      await db.acquireWithin(2000);
      await db.acquireWithin(2000);
      const started = Date.now();
      expect(await db.acquireWithin(50)).toBe(0);
      expect(Date.now() - started).toBeGreaterThanOrEqual(45);
      const waiting = db.acquireWithin(10_000);
      db.close();
      expect(await waiting).toBe(0);
      expect(db.waiting).toBe(false);
    } finally {
      await agent.close();
    }
  });

  it('refuses a timeout that is not an integer in [0, SLOT_WAIT_MS_MAX], and acquire on a pool of tokens', async () => {
    const agent = await Agent.connect({
      bus: standInBus((_subject, req) => {
        if (req.op === 'return') return { v: 2, kind: 'receipt', seq: req.seq, tokensReturned: req.tokensLeft };
        if (req.op !== 'acquire') throw new Error('only acquires and returns here');
        const granted = Math.min(5, req.tokensWanted);
        return grantOf(req.seq, 'L1', granted, granted);
      }),
    });
    try {
      const tokens = agent.limiter('tokens');
      for (const bad of [-1, 1.5, SLOT_WAIT_MS_MAX + 1, Number.NaN]) expect(() => tokens.acquireWithin(bad)).toThrow(AgentError);
      expect(await tokens.ready(2000)).toBe(true);
      await tokens.take(1, { timeoutMs: 2000 });
      expect(() => tokens.acquire()).toThrow(/acquire is for concurrency pools/);
    } finally {
      await agent.close();
    }
  });
});
