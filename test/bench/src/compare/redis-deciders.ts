/**
 * What a user builds on Redis instead of tokenlease, for the comparison:
 * a round-trip to Redis for every decision.
 *
 * - redis-lua: the common design, one token bucket in one Lua script
 *   (EVALSHA), refilled lazily by Redis's own clock (TIME), float tokens,
 *   full at first use.
 * - rlf-redis: rate-limiter-flexible's RateLimiterRedis on ioredis, set to
 *   B points per B/r seconds (a fixed window, which is its model).
 * - redis-window-log: the exact sliding window, N per W: a sorted set of
 *   the admitted tokens scored by when they were admitted, one Lua script
 *   per request (trim what is W old, count, add when it fits).
 * - a semaphore (redisSemaphore, for `npm run bench`'s concurrency slots):
 *   a sorted set of holders scored by when they took their slot, acquired
 *   by one Lua script (drop holders past the hold bound, add this one if
 *   fewer than the limit hold) and released by ZREM.
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

/**
 * SLIDING_WINDOW_LOG_LUA — KEYS[1] the log (a sorted set); ARGV limit N,
 * window W in µs, cost, a member id unique to this request; returns 1 when
 * admitted, else 0. Admitted tokens are members scored by the instant they
 * were admitted; one admitted at s counts while now − W < s, so every
 * window (now − W, now] of Redis's clock holds at most N.
 *
 * The instant is Redis's own clock (TIME), not the client's: every client
 * of the fleet then judges by one clock, so the log is exact whatever the
 * clients' clocks say (on several hosts they drift apart; a client clock
 * that runs behind would see old entries as recent, one ahead would trim
 * them early and over-admit). Redis 5+ replicates a script's effects, not
 * the script, so TIME in it is safe.
 */
const SLIDING_WINDOW_LOG_LUA = `
local limit = tonumber(ARGV[1])
local windowUs = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local time = redis.call('TIME')
local nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowUs - windowUs)
if redis.call('ZCARD', KEYS[1]) + cost > limit then
  return 0
end
for i = 1, cost do
  redis.call('ZADD', KEYS[1], nowUs, ARGV[4] .. '#' .. i)
end
redis.call('PEXPIRE', KEYS[1], math.ceil(windowUs / 1000) + 1000)
return 1
`;

/** redisDecider — a client of the fleet's one limit in Redis, of `kind`; every decision is one round-trip. */
export async function redisDecider(kind: 'redis-lua' | 'rlf-redis' | 'redis-window-log', config: ClientConfig): Promise<Decider> {
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
  if (kind === 'redis-window-log') {
    const sha = String(await redis.script('LOAD', SLIDING_WINDOW_LOG_LUA));
    const { capacityTokens, windowMs, redisKey, name } = config;
    return {
      decide: async (cost) => {
        calls += 1;
        return (await redis.evalsha(sha, 1, redisKey, capacityTokens, windowMs * 1000, cost, `${name}:${calls}`)) === 1;
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

/** SEMAPHORE_LUA — KEYS[1] the holders (a sorted set); ARGV limit, hold bound in µs, a member unique to this holder; returns 1 when it took a slot, else 0. Redis's own clock, as the window log's. */
const SEMAPHORE_LUA = `
local limit = tonumber(ARGV[1])
local holdUs = tonumber(ARGV[2])
local time = redis.call('TIME')
local nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowUs - holdUs)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], nowUs, ARGV[3])
  return 1
end
return 0
`;

/** RedisSemaphore — at most `limit` holders at once in Redis, each counted at most its hold bound: one round-trip to take a slot, one to give it back. */
export interface RedisSemaphore {
  acquire(member: string): Promise<boolean>;
  release(member: string): Promise<void>;
  /** close — deletes the semaphore's key and disconnects. */
  close(): Promise<void>;
}

/** redisSemaphore — a semaphore of `limit` slots held at most `holdMs` under `key` on the Redis at `url`. */
export async function redisSemaphore(url: string, key: string, limit: number, holdMs: number): Promise<RedisSemaphore> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const sha = (await redis.script('LOAD', SEMAPHORE_LUA)) as string;
  return {
    acquire: async (member) => (await redis.evalsha(sha, 1, key, limit, holdMs * 1000, member)) === 1,
    release: async (member) => {
      await redis.zrem(key, member);
    },
    close: async () => {
      await redis.del(key).catch(() => 0);
      redis.disconnect();
    },
  };
}
