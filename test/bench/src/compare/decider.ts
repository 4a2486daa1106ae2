/**
 * How a comparison client decides, whatever the system: a tokenlease agent
 * (its synchronous fast path), or a bucket of its own (no coordination).
 * Redis-backed deciders live in redis-deciders.ts, the one file of the
 * bench that talks to Redis directly.
 */
import { Agent } from '@tokenlease/agent';
import { ExactBucket, makeRate } from '@tokenlease/shared';
import { hostMonoNowUs } from '@tokenlease/shared/clock';
import type { DeciderKind } from './systems.js';
import { redisDecider } from './redis-deciders.js';

/** ClientConfig — one client process of the fleet (handed to client.ts as JSON). */
export interface ClientConfig {
  readonly kind: DeciderKind;
  readonly name: string;
  readonly natsUrl: string;
  readonly subjectPrefix: string;
  readonly pool: string;
  readonly redisUrl: string;
  /** Key (or key prefix) the Redis deciders keep the fleet's bucket under. */
  readonly redisKey: string;
  /** The bucket a Redis decider enforces (the fleet's), or this client's own share (local). */
  readonly capacityTokens: number;
  readonly refillPerSecond: number;
  /** The window W of a window row (N is `capacityTokens`), ms. */
  readonly windowMs: number;
  /** A tokenlease agent's usage reports between renewals, ms (KeeperOptions.reportMs; absent: none). */
  readonly reportMs?: number;
  /** Offered requests per second (Poisson arrivals, cost 1); ignored in a closed loop. */
  readonly perSecond: number;
  /** Closed loop (the saturation part): decide as fast as the decider allows, at most this many waiting for a reply; absent: Poisson arrivals at perSecond. */
  readonly inFlight?: number;
  readonly seed: number;
  /** When the traffic starts, host monotonic µs (hostMonoNowUs), the same instant for every client. */
  readonly startAtUs: number;
  readonly durationMs: number;
  /** Admissions are appended here as "<µs> <cost> -" lines (readAdmissionLog's format). */
  readonly logPath: string;
}

/** Decider — one system's admission decision, as a client process calls it. */
export interface Decider {
  /** decide — admits `cost` tokens at `nowUs` (host monotonic µs) or not: at once, or after a round-trip. */
  decide(cost: number, nowUs: number): boolean | Promise<boolean>;
  /** roundTrips — network round-trips made so far (requests sent, retries included). */
  roundTrips(): number;
  close(): Promise<void>;
}

async function agentDecider(config: ClientConfig): Promise<Decider> {
  const agent = await Agent.connect({
    natsUrl: config.natsUrl,
    subjectPrefix: config.subjectPrefix,
    clock: hostMonoNowUs,
    ...(config.reportMs === undefined ? {} : { keeper: { reportMs: config.reportMs } }),
  });
  const limiter = agent.limiter(config.pool);
  return {
    decide: (cost, nowUs) => limiter.tryTakeAt(cost, nowUs),
    roundTrips: () => limiter.stats().attempts,
    close: () => agent.close(),
  };
}

function localDecider(config: ClientConfig): Decider {
  const bucket = new ExactBucket(config.capacityTokens, makeRate(config.refillPerSecond, 1000), config.startAtUs);
  return { decide: (cost, nowUs) => bucket.take(cost, nowUs).ok, roundTrips: () => 0, close: async () => {} };
}

/** makeDecider — the decider of `config.kind`, connected and ready. */
export async function makeDecider(config: ClientConfig): Promise<Decider> {
  if (config.kind === 'tokenlease') return agentDecider(config);
  if (config.kind === 'local') return localDecider(config);
  return redisDecider(config.kind, config);
}
