/**
 * A limiter with a live lease of hundreds of millions of tokens, for timing
 * the fast path (`npm run bench` and the comparison's hot path): its pool
 * (HOT_POOL) refills faster than any loop spends, so no call waits on a
 * round-trip and a denial never comes from an empty lease.
 */
import { Agent, type Limiter } from '@tokenlease/agent';

/** HOT_POOL — the coordinator pool a hot limiter leases from. */
export const HOT_POOL = {
  capacity: 1_000_000_000,
  refill: '1000000000/s',
  leaseTtlMs: 2000,
  maxLeaseTokens: 500_000_000,
  minGrantTokens: 1,
};

/** waitForBalance — polls until `limiter` holds at least `tokens`; throws after `timeoutMs`. */
export async function waitForBalance(limiter: Limiter, tokens: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (limiter.stats().balanceTokens < tokens) {
    if (Date.now() > deadline) throw new Error(`no lease of ${tokens} tokens within ${timeoutMs} ms: ${JSON.stringify(limiter.stats())}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** hotLimiter — an agent on `natsUrl` and its limiters of pools `hot` and `hot2` (both HOT_POOL), each holding 100 M tokens or more. */
export async function hotLimiter(natsUrl: string, prefix: string): Promise<{ agent: Agent; hot: Limiter; hot2: Limiter }> {
  const agent = await Agent.connect({ natsUrl, subjectPrefix: prefix, keeper: { initialTokens: 400_000_000 } });
  const hot = agent.limiter('hot');
  const hot2 = agent.limiter('hot2');
  await waitForBalance(hot, 100_000_000, 10_000);
  await waitForBalance(hot2, 100_000_000, 10_000);
  return { agent, hot, hot2 };
}
