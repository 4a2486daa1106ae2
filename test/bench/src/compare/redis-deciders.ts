/**
 * What a user builds on Redis instead of tokenlease, for the comparison:
 * a round-trip to Redis for every decision.
 *
 * - redis-lua: the common design, one token bucket in one Lua script
 *   (EVALSHA), refilled lazily by Redis's own clock (TIME), float tokens,
 *   full at first use.
 * - rlf-redis: rate-limiter-flexible's RateLimiterRedis on ioredis, set to
 *   B points per B/r seconds (a fixed window, which is its model).
 *
 * The one file of the bench allowed to import ioredis (eslint.config.mjs).
 */
import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { ClientConfig, Decider } from './decider.js';

/** TOKEN_BUCKET_LUA — KEYS[1] the bucket; ARGV capacity, refill per second, cost; returns 1 when admitted, else 0. */
const TOKEN_BUCKET_LUA = `
local capacity = tonumber(ARGV[1])
local perSecond = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local time = redis.call('TIME')
local nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'atUs')
local tokens = tonumber(state[1]) or capacity
local atUs = tonumber(state[2]) or nowUs
tokens = math.min(capacity, tokens + math.max(0, nowUs - atUs) * perSecond / 1000000)
local admitted = 0
if tokens >= cost then
  tokens = tokens - cost
  admitted = 1
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'atUs', nowUs)
return admitted
`;

/** redisDecider — a client of the fleet's one bucket in Redis, of `kind`; every decision is one round-trip. */
export async function redisDecider(kind: 'redis-lua' | 'rlf-redis', config: ClientConfig): Promise<Decider> {
  const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  let calls = 0;
  const close = async (): Promise<void> => {
    await redis.quit();
  };
  if (kind === 'redis-lua') {
    const sha = String(await redis.script('LOAD', TOKEN_BUCKET_LUA));
    const { capacityTokens, refillPerSecond, redisKey } = config;
    return {
      decide: async (cost) => {
        calls += 1;
        return (await redis.evalsha(sha, 1, redisKey, capacityTokens, refillPerSecond, cost)) === 1;
      },
      roundTrips: () => calls,
      close,
    };
  }
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: config.redisKey,
    points: config.capacityTokens,
    duration: config.capacityTokens / config.refillPerSecond,
  });
  return {
    decide: async (cost) => {
      calls += 1;
      try {
        await limiter.consume('fleet', cost);
        return true;
      } catch (error) {
        // A refusal rejects with a RateLimiterRes; anything else is a failure.
        if (error instanceof RateLimiterRes) return false;
        throw error;
      }
    },
    roundTrips: () => calls,
    close,
  };
}
