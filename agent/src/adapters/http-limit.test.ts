/**
 * The middleware's engine on a real Agent whose bus is a coordinator
 * stand-in: keys come from the framework's own request (sync or async),
 * become pool names only as keyed hashes, of any length; a route key needs
 * the route's pattern; the fields come in the format asked for.
 */
import { describe, expect, it } from 'vitest';
import type { Bus } from '@tokenlease/shared/nats';
import { AgentError } from '../errors.js';
import { Agent } from './agent.js';
import { grantOf, standInBus } from './bus.fixtures.js';
import { HttpLimit, type HttpLimitOptions, type RequestView } from './http-limit.js';
import { keyPoolName } from './key-hash.js';

const SECRET = 'a test secret of 32 bytes, fixed';

/** A bus that grants up to 10 tokens per acquire, each under a new lease, and records the subjects asked on. */
function grantingBus(subjects: string[]): Bus {
  return standInBus((subject, req) => {
    subjects.push(subject);
    if (req.op === 'return') return { v: 2, kind: 'receipt', seq: req.seq, tokensReturned: req.tokensLeft };
    if (req.op !== 'acquire') throw new Error('only acquires and returns here');
    const tokens = Math.min(10, req.tokensWanted);
    return grantOf(req.seq, `L${subjects.length}`, tokens, tokens, { allowanceTokens: 5 });
  });
}

interface User {
  readonly user?: { readonly id: string };
}

const view = (native: User, route: string | undefined = '/things/:id'): RequestView<User> => ({
  header: () => undefined,
  ip: '10.0.0.1',
  route,
  native,
});

async function withLimit<T>(
  options: Omit<HttpLimitOptions<User>, 'agent'>,
  body: (limit: HttpLimit<User>, subjects: string[]) => Promise<T>,
) {
  const subjects: string[] = [];
  const agent = await Agent.connect({ bus: grantingBus(subjects) });
  try {
    return await body(new HttpLimit<User>({ agent, graceMs: 1000, ...options }), subjects);
  } finally {
    await agent.close();
  }
}

describe('HttpLimit keys', () => {
  it('gives a key function the request itself, awaits an async one, and names the pool by the keyed hash only', async () => {
    const key = `jwt.${'x'.repeat(2048)}`;
    await withLimit(
      { keySecret: SECRET, pools: [{ name: 'user', key: async (req: User) => Promise.resolve(req.user?.id) }] },
      async (limit, subjects) => {
        const verdict = await limit.check(view({ user: { id: key } }));
        expect(verdict.admitted).toBe(true);
        const pool = keyPoolName('user', key, SECRET);
        expect(pool).toMatch(/^user:[A-Za-z0-9_-]{22}$/);
        expect(subjects.some((s) => s.endsWith(`.${pool}.acquire`) || s.includes(pool))).toBe(true);
        expect(subjects.join(' ')).not.toContain('xxxx');
        const missing = await limit.check(view({}));
        expect(missing).toMatchObject({
          admitted: false,
          refusal: { status: 400, problem: { type: 'urn:tokenlease:problem:missing-key' } },
        });
      },
    );
  });

  it('names different pools for different keys, rules and secrets', () => {
    const names = new Set([
      keyPoolName('user', 'a', SECRET),
      keyPoolName('user', 'b', SECRET),
      keyPoolName('tenant', 'a', SECRET),
      keyPoolName('user', 'a', `${SECRET}!`),
    ]);
    expect(names.size).toBe(4);
    expect(keyPoolName('user', 'a', SECRET)).toBe(keyPoolName('user', 'a', new TextEncoder().encode(SECRET)));
  });

  it('refuses a keyed rule without a secret, a short secret and a header format it does not know, at construction', async () => {
    const agent = await Agent.connect({ bus: grantingBus([]) });
    try {
      expect(() => new HttpLimit({ agent, pools: [{ name: 'user', key: { ip: true } }] })).toThrow(/keySecret is needed/);
      expect(() => new HttpLimit({ agent, keySecret: 'short', pools: [{ name: 'user', key: { ip: true } }] })).toThrow(AgentError);
      expect(() => new HttpLimit({ agent, pools: [{ name: 'api' }], headers: 'draft-99' as 'off' })).toThrow(/option headers/);
      expect(() => new HttpLimit({ agent, keySecret: SECRET, pools: [{ name: 'u'.repeat(110), key: { ip: true } }] })).toThrow(
        /longer than 128/,
      );
    } finally {
      await agent.close();
    }
  });

  it('keys by the route pattern, and refuses loudly where the pattern is unknown rather than keying by the raw path', async () => {
    await withLimit({ keySecret: SECRET, pools: [{ name: 'route', key: { route: true } }] }, async (limit) => {
      expect((await limit.check(view({}, '/users/:id'))).admitted).toBe(true);
      const before = await limit.check({ ...view({}), route: undefined });
      expect(before).toMatchObject({
        admitted: false,
        refusal: { status: 500, problem: { type: 'urn:tokenlease:problem:unknown-route' } },
      });
    });
  });
});

describe('HttpLimit fields', () => {
  it('draft-11 by default: the policy counts the burst and the allowance, and pk is the keyed hash', async () => {
    await withLimit({ keySecret: SECRET, pools: [{ name: 'user', key: (req: User) => req.user?.id }] }, async (limit) => {
      const verdict = await limit.check(view({ user: { id: 'ann' } }));
      const fields = new Map(verdict.headers);
      // B 100 + A 5 + r 10/s over w = 1 s
      expect(fields.get('RateLimit-Policy')).toMatch(/^"user";q=115;w=1;pk=:[A-Za-z0-9+/]+=*:$/);
      expect(fields.get('RateLimit')).toMatch(/^"user";r=\d+;t=\d+;pk=:[A-Za-z0-9+/]+=*:$/);
    });
  });

  it.each([
    ['draft-7', ['RateLimit-Policy', 'RateLimit']],
    ['draft-6', ['RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']],
    ['x-ratelimit', ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']],
    ['off', []],
  ] as const)('%s: the fields of that format', async (headers, names) => {
    await withLimit({ pools: [{ name: 'api' }], headers }, async (limit) => {
      const verdict = await limit.check(view({}));
      expect(verdict.headers.map(([name]) => name)).toEqual(names);
      if (headers === 'draft-7') expect(new Map(verdict.headers).get('RateLimit')).toMatch(/^limit=115, remaining=\d+, reset=\d+$/);
    });
  });
});

describe('HttpLimit, what express-rate-limit users reach for', () => {
  it('skips what `skip` says, sync or async: not charged, no fields', async () => {
    await withLimit(
      { pools: [{ name: 'api', cost: 1 }], skip: async (req: User) => Promise.resolve(req.user?.id === 'health') },
      async (limit) => {
        const skipped = await limit.check(view({ user: { id: 'health' } }));
        expect(skipped).toEqual({ admitted: true, headers: [] });
        const charged = await limit.check(view({}));
        expect(charged.admitted).toBe(true);
        expect(charged.headers.length).toBeGreaterThan(0);
      },
    );
  });

  it("answers a rate-limited request with the service's status and message, and leaves a request that never fits as it is", async () => {
    await withLimit(
      {
        pools: [{ name: 'api', cost: (req: User) => (req.user?.id === 'huge' ? 500 : 10) }],
        graceMs: 0,
        statusCode: 503,
        message: { error: 'slow down' },
      },
      async (limit) => {
        let refused;
        for (let i = 0; i < 50 && refused === undefined; i += 1) {
          const verdict = await limit.check(view({}));
          if (!verdict.admitted) refused = verdict.refusal;
        }
        expect(refused).toMatchObject({ status: 503, body: { contentType: 'application/json', text: '{"error":"slow down"}' } });
        expect(refused?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
        const huge = await limit.check(view({ user: { id: 'huge' } }));
        expect(huge).toMatchObject({ admitted: false, refusal: { status: 413 } });
        expect(huge.admitted ? null : huge.refusal.body).toBeUndefined();
      },
    );
  });

  it('charges a rule’s pool with the limits it expects: grants within them admit, grants beyond them do not', async () => {
    // The stand-in grants as a pool of B 100, leases of 10, 10/s and an allowance of 5.
    const real = { capacityTokens: 100, maxLeaseTokens: 10, refillTokens: 10, refillPeriodMs: 1000, allowanceTokens: 5 };
    await withLimit({ pools: [{ name: 'api', expectedLimits: real }] }, async (limit) => {
      expect((await limit.check(view({}))).admitted).toBe(true);
    });
    await withLimit(
      { graceMs: 200, pools: [{ name: 'api', expectedLimits: { ...real, capacityTokens: 50, maxLeaseTokens: 5 } }] },
      async (limit) => {
        expect((await limit.check(view({}))).admitted).toBe(false);
      },
    );
  });

  it('refuses expected limits that are not, at construction', async () => {
    const agent = await Agent.connect({ bus: grantingBus([]) });
    try {
      const expectedLimits = { capacityTokens: 10, maxLeaseTokens: 20, refillTokens: 1, refillPeriodMs: 1000 };
      expect(() => new HttpLimit({ agent, pools: [{ name: 'api', expectedLimits }] })).toThrow(
        /pool api: option expectedLimits maxLeaseTokens/,
      );
    } finally {
      await agent.close();
    }
  });

  it('refuses a status outside 400–599, a message that is neither text nor an object, and a skip that is not a function', async () => {
    const agent = await Agent.connect({ bus: grantingBus([]) });
    try {
      expect(() => new HttpLimit({ agent, pools: [{ name: 'api' }], statusCode: 200 })).toThrow(/statusCode/);
      expect(() => new HttpLimit({ agent, pools: [{ name: 'api' }], message: 42 as unknown as string })).toThrow(/message/);
      expect(() => new HttpLimit({ agent, pools: [{ name: 'api' }], skip: true as unknown as () => boolean })).toThrow(/skip/);
    } finally {
      await agent.close();
    }
  });
});
