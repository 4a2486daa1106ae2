/**
 * The middleware's engine with express-rate-limit's `skipFailedRequests`,
 * `skipSuccessfulRequests` and `requestWasSuccessful`, on a real Agent
 * whose bus is a coordinator stand-in for a small pool: requests that do
 * not count give their tokens back as they end (HttpLimit.ended), to every
 * pool they were charged, unless the lease moved on since.
 */
import { describe, expect, it } from 'vitest';
import type { Bus } from '@tokenlease/shared/nats';
import { Agent } from './agent.js';
import { grantOf, standInBus } from './bus.fixtures.js';
import { HttpLimit, type HttpLimitOptions, type RequestView, type ResponseView } from './http-limit.js';

/** A pool per name holding `tokens` in all, granted under one lease per pool as asked, never refilled. */
function smallPoolsBus(tokens: number): Bus {
  const left = new Map<string, number>();
  return standInBus((_subject, req) => {
    if (req.op === 'return') {
      left.set(req.pool, (left.get(req.pool) ?? tokens) + req.tokensLeft);
      return { v: 2, kind: 'receipt', seq: req.seq, tokensReturned: req.tokensLeft };
    }
    if (req.op !== 'acquire') throw new Error('only acquires and returns here');
    const leaseId = `L-${req.pool}`;
    const granted = Math.min(left.get(req.pool) ?? tokens, req.tokensWanted);
    left.set(req.pool, (left.get(req.pool) ?? tokens) - granted);
    const held = granted + (req.leaseId === leaseId ? req.tokensLeft : 0);
    return grantOf(req.seq, leaseId, granted, held, { retryAfterMs: granted < req.tokensWanted ? 60_000 : 0 });
  });
}

interface Res {
  readonly statusCode: number;
  readonly failedBy?: string;
}

const REQUEST: RequestView<null> = { header: () => undefined, ip: '127.0.0.1', route: '/', native: null };
const response = (statusCode: number, failedBy?: string): ResponseView<Res> => ({
  statusCode,
  native: failedBy === undefined ? { statusCode } : { statusCode, failedBy },
});

/**
 * A limit on a fresh agent whose pools hold 3 tokens each (one lease takes
 * them all). `warm`: the pools' leases are in hand first and nothing waits
 * (graceMs 0), else the first request waits for them (the take queue's and
 * takeAll's receipts).
 */
async function withLimit(
  options: Omit<HttpLimitOptions<null, Res>, 'agent'>,
  body: (limit: HttpLimit<null, Res>, agent: Agent) => Promise<void>,
  warm = false,
) {
  const agent = await Agent.connect({ bus: smallPoolsBus(3), keeper: { initialTokens: 3 } });
  try {
    if (warm) for (const rule of options.pools) expect(await agent.limiter(rule.name).fits(3)).toBe(true);
    await body(new HttpLimit<null, Res>({ agent, graceMs: warm ? 0 : 1000, ...options }), agent);
  } finally {
    await agent.close();
  }
}

/** serve — one request: checked, then ended with `status` (null: closed before it finished); whether it was admitted. */
async function serve(limit: HttpLimit<null, Res>, status: number | null): Promise<boolean> {
  const verdict = await limit.check(REQUEST);
  if (!verdict.admitted) return false;
  if (verdict.charged !== undefined) await limit.ended(verdict.charged, null, response(status ?? 200), status !== null);
  return true;
}

describe('HttpLimit, requests that do not count', () => {
  it('skipFailedRequests: failed requests give their tokens back, so the pool still serves its limit of successful ones', async () => {
    await withLimit(
      { pools: [{ name: 'api' }], skipFailedRequests: true },
      async (limit, agent) => {
        const failed: boolean[] = [];
        for (let i = 0; i < 10; i += 1) failed.push(await serve(limit, i % 2 === 0 ? 500 : null)); // a 500, or closed before it finished
        expect(failed).toEqual(Array.from({ length: 10 }, () => true));
        const ok: boolean[] = [];
        for (let i = 0; i < 4; i += 1) ok.push(await serve(limit, 200));
        expect(ok).toEqual([true, true, true, false]);
        expect(agent.limiter('api').stats()).toMatchObject({ admittedTokens: 13, refundedTokens: 10, refundedCount: 10 });
      },
      true,
    );
  });

  it('skipSuccessfulRequests: successful requests give theirs back, failed ones and ones closed early count', async () => {
    await withLimit(
      { pools: [{ name: 'api' }], skipSuccessfulRequests: true },
      async (limit, agent) => {
        for (let i = 0; i < 10; i += 1) expect(await serve(limit, i % 2 === 0 ? 200 : 302)).toBe(true);
        expect([await serve(limit, 404), await serve(limit, null), await serve(limit, 500), await serve(limit, 200)]).toEqual([
          true,
          true,
          true,
          false,
        ]);
        expect(agent.limiter('api').stats()).toMatchObject({ admittedTokens: 13, refundedTokens: 10 });
      },
      true,
    );
  });

  it('requestWasSuccessful decides, sync or async, with the framework’s request and response; one that throws leaves the request counted', async () => {
    const requestWasSuccessful = async (_request: null, res: Res): Promise<boolean> => {
      if (res.failedBy === 'judge') throw new Error('cannot tell');
      return Promise.resolve(res.failedBy === undefined);
    };
    await withLimit({ pools: [{ name: 'api' }], skipFailedRequests: true, requestWasSuccessful }, async (limit, agent) => {
      const verdicts = [await limit.check(REQUEST), await limit.check(REQUEST), await limit.check(REQUEST)];
      const endings: readonly ResponseView<Res>[] = [response(200, 'upstream'), response(500), response(200, 'judge')];
      const given: number[] = [];
      for (const [i, verdict] of verdicts.entries()) {
        if (!verdict.admitted || verdict.charged === undefined) throw new Error('expected an admission with receipts');
        given.push(await limit.ended(verdict.charged, null, endings[i] as ResponseView<Res>, true));
      }
      // A 200 the judge calls a failure goes back (the first request, which waited for the lease); a 500 it calls a
      // success counts; a judge that throws: counted.
      expect(given).toEqual([1, 0, 0]);
      expect(agent.limiter('api').stats()).toMatchObject({ refundedTokens: 1 });
    });
  });

  it('gives back to every pool a request was charged; a pool whose lease moved on keeps its part counted', async () => {
    await withLimit({ pools: [{ name: 'global' }, { name: 'tenant', cost: 2 }], skipFailedRequests: true }, async (limit, agent) => {
      const first = await limit.check(REQUEST);
      if (!first.admitted || first.charged === undefined) throw new Error('expected an admission with receipts');
      expect(await limit.ended(first.charged, null, response(503), true)).toBe(3);
      const second = await limit.check(REQUEST);
      if (!second.admitted || second.charged === undefined) throw new Error('expected an admission with receipts');
      agent.limiter('tenant').close(); // returns the tenant's lease: what it spent was told
      expect(await limit.ended(second.charged, null, response(503), true)).toBe(1);
      expect([agent.limiter('global').stats().refundedTokens, agent.limiter('tenant').stats().refundedTokens]).toEqual([2, 2]);
    });
  });

  it('keeps no receipts when neither option is on', async () => {
    await withLimit({ pools: [{ name: 'api' }] }, async (limit) => {
      const verdict = await limit.check(REQUEST);
      expect(verdict).toMatchObject({ admitted: true });
      expect(verdict.admitted && verdict.charged).toBeUndefined();
    });
  });

  it('refuses skip options that are not true or false, and a requestWasSuccessful that is not a function, at construction', async () => {
    const agent = await Agent.connect({ bus: smallPoolsBus(3) });
    try {
      const pools = [{ name: 'api' }];
      expect(() => new HttpLimit({ agent, pools, skipFailedRequests: 'yes' as unknown as boolean })).toThrow(
        /option skipFailedRequests must be true or false, got "yes"/,
      );
      expect(() => new HttpLimit({ agent, pools, skipSuccessfulRequests: 1 as unknown as boolean })).toThrow(
        /option skipSuccessfulRequests must be true or false, got 1/,
      );
      expect(() => new HttpLimit({ agent, pools, requestWasSuccessful: true as unknown as () => boolean })).toThrow(
        /option requestWasSuccessful must be a function/,
      );
    } finally {
      await agent.close();
    }
  });
});
