/**
 * The middleware's engine in shadow mode, on a real Agent whose bus is a
 * coordinator stand-in answering every acquire with a small grant that
 * carries the shadow flag the test sets.
 */
import { describe, expect, it } from 'vitest';
import type { Bus } from '@tokenlease/shared/nats';
import { Agent } from './agent.js';
import { grantOf, standInBus } from './bus.fixtures.js';
import { HttpLimit, type RequestView } from './http-limit.js';

/** A bus that grants up to `tokens` per acquire under one lease, with `shadow` as the stand-in says at the time. */
function grantingBus(state: { shadow: boolean; tokens: number }): Bus {
  return standInBus((_subject, req) => {
    if (req.op === 'return') return { v: 2, kind: 'receipt', seq: req.seq, tokensReturned: req.tokensLeft };
    if (req.op !== 'acquire') throw new Error('only acquires and returns here');
    const tokens = Math.min(state.tokens, req.tokensWanted);
    const held = tokens + (req.leaseId === 'L1' ? req.tokensLeft : 0);
    return grantOf(req.seq, 'L1', tokens, held, state.shadow ? { shadow: true } : {});
  });
}

const REQUEST: RequestView<null> = { header: () => undefined, ip: '127.0.0.1', route: '/', native: null };

describe('HttpLimit in shadow mode', () => {
  it('admits what it would refuse, with the shadow header naming the pool and why; enforced again when the grant says so', async () => {
    const state = { shadow: true, tokens: 2 };
    const agent = await Agent.connect({ bus: grantingBus(state), keeper: { initialTokens: 1 } });
    try {
      const limit = new HttpLimit({ agent, pools: [{ name: 'api' }], shadowHeader: true, graceMs: 0 });
      expect(await agent.limiter('api').ready()).toBe(true);
      const verdicts = [];
      for (let i = 0; i < 6; i += 1) verdicts.push(await limit.check(REQUEST));
      expect(verdicts.every((v) => v.admitted)).toBe(true);
      const flagged = verdicts.filter((v) => v.headers.some(([name]) => name === 'TokenLease-Shadow-Limited'));
      expect(flagged.length).toBeGreaterThan(0);
      expect(flagged[0]?.headers).toContainEqual(['TokenLease-Shadow-Limited', '"api";reason=exhausted']);
      const stats = agent.limiter('api').stats();
      expect(stats.shadow).toBe(true);
      expect(stats.shadowDeniedCount).toBe(flagged.length);
      expect(stats.deniedCount).toBe(0);
      // The next grant turns shadow mode off: refusals are real again.
      state.shadow = false;
      state.tokens = 0;
      for (let i = 0; i < 100 && agent.limiter('api').shadow; i += 1) {
        await limit.check(REQUEST); // would-be denials wake the keeper, whose next acquire brings the new flag
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      let refused = 0;
      for (let i = 0; i < 4; i += 1) if (!(await limit.check(REQUEST)).admitted) refused += 1;
      expect(agent.limiter('api').shadow).toBe(false);
      expect(refused).toBeGreaterThan(0);
    } finally {
      await agent.close();
    }
  });

  it('forces shadow mode for one pool with `shadow: true` whatever the grant says; no header unless asked', async () => {
    const agent = await Agent.connect({ bus: grantingBus({ shadow: false, tokens: 1 }) });
    try {
      const limit = new HttpLimit({ agent, pools: [{ name: 'api', shadow: true }], graceMs: 0 });
      for (let i = 0; i < 5; i += 1) {
        const verdict = await limit.check(REQUEST);
        expect(verdict.admitted).toBe(true);
        expect(verdict.headers.some(([name]) => name === 'TokenLease-Shadow-Limited')).toBe(false);
      }
      expect(agent.limiter('api').forceShadow).toBe(true);
      expect(agent.limiter('api').stats().shadowDeniedCount).toBeGreaterThan(0);
    } finally {
      await agent.close();
    }
  });

  it('refuses bad shadow options with a typed error', async () => {
    const agent = await Agent.connect({ bus: grantingBus({ shadow: false, tokens: 1 }) });
    try {
      expect(() => new HttpLimit({ agent, pools: [{ name: 'api' }], shadowHeader: 'bad header' })).toThrow(/shadowHeader/);
      const sneaky = { shadow: 'yes' } as unknown as { shadow: boolean };
      expect(() => new HttpLimit({ agent, pools: [{ name: 'api', ...sneaky }] })).toThrow(/shadow must be true or false/);
      expect(() => agent.limiter('api', sneaky)).toThrow(/shadow must be true or false/);
      const custom = new HttpLimit({ agent, pools: [{ name: 'api', shadow: true }], shadowHeader: 'X-Would-Limit', graceMs: 0 });
      const headers = (await custom.check(REQUEST)).headers.map(([name]) => name);
      expect(headers).toContain('X-Would-Limit');
    } finally {
      await agent.close();
    }
  });
});
