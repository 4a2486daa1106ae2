/**
 * The clock check of a pool: an agent whose clock runs outside the pool's
 * `clockDriftLimit` (clock-watch.ts) gets nothing more (docs/design.md,
 * "Clocks").
 *
 * Rules:
 * - Off when the pool's limit is 0, and for requests that carry no clock
 *   reading.
 * - Until an agent's clock is verified, every lease granted to it is
 *   counted for PROBATION_TTLS TTLs from the grant (`clockAfterAcquire`),
 *   without its agent being told so: a clock far off spends its first
 *   leases for longer than one TTL, before it can be found.
 * - An agent's first reading (under its lease secret) starts its track;
 *   each later acquire of the same agent is judged against it, whether or
 *   not its lease lapsed in between.
 * - A drifting clock's acquire is refused `clock-drift` (`fault: peer`)
 *   and changes nothing but this: a slow clock's lease is counted longer,
 *   until its last acquire plus the TTL stretched by the measured rate (its
 *   agent, counting the TTL on that clock, spends for that long), and its
 *   agent is refused, lease or none, while it keeps asking (each refusal
 *   renews that by CLOCK_DRIFT_MEMORY_TTLS TTLs).
 * - Known agents are at most the pool's `maxLeases`, and one that has not
 *   asked for CLOCK_DRIFT_MEMORY_TTLS TTLs is forgotten (AgentClocks); the
 *   same agent id under another secret (a restarted process) starts afresh.
 */
import type { LeaseRequest, Reply } from '@tokenlease/shared';
import { judgeClock, startTrack, stretch, type ClockTrack, type Drift } from './clock-watch.js';
import type { LeaseRecord } from './lease-table.js';
import type { PoolParts } from './pool-parts.js';

/**
 * PROBATION_TTLS — how many TTLs from its grant a lease is counted while its
 * agent's clock is not verified yet: enough for a clock at 45% of the
 * coordinator's rate (it spends 90% of a TTL on its clock) to stop first,
 * so the leases granted before a drift is found are covered too.
 */
export const PROBATION_TTLS = 2;

/** CLOCK_DRIFT_MEMORY_TTLS — TTLs an agent refused for its clock is refused again, from its last refusal. */
export const CLOCK_DRIFT_MEMORY_TTLS = 10;

const US_PER_MS = 1000;

/** SECOND_CHANCES_MAX — agents at the front a start moves to the back at most (asked since placed), before it forgets regardless. */
const SECOND_CHANCES_MAX = 4;

/**
 * AgentClock — what a pool knows of one agent's clock: the secret it asks
 * with, its track (the clock is its own ClockTrack: one object per agent,
 * not two, for an acquire to reach), and until when it is refused, µs.
 */
export interface AgentClock extends ClockTrack {
  readonly secret: string;
  refusedUntilUs: number;
  /**
   * When its last acquire was taken on (its lease's last grant or renewal),
   * µs; -1 before any. A number, never null: a field that may hold null
   * keeps each new time in a heap number of its own, which at every
   * acquire outlived the young generation in a long-lived clock.
   */
  lastAcquireUs: number;
  /** When it last asked, µs. */
  askedUs: number;
  /** When it was placed last in the order, µs: at its start, or when it was found first having asked since. */
  placedUs: number;
  /** Whether it was forgotten or replaced (a lease that kept a reference to it must not use it). */
  forgotten: boolean;
}

/**
 * AgentClocks — the clocks of the agents that asked a pool, by agent id, at
 * most `most` (the pool's `maxLeases`). They are kept in the order placed;
 * a start forgets from the front, and one found there that asked since it
 * was placed gets a second chance at the back (so the front is the agents
 * that asked longest ago, without moving an agent on every request). O(1) a
 * request: an ask is one map lookup (none for a lease that kept its
 * agent's clock), a start looks at a few agents at the front.
 */
export class AgentClocks {
  private readonly agents = new Map<string, AgentClock>();

  /**
   * asked — `agentId`'s clock as known, asked again at `nowUs`; undefined for
   * an agent not known under `secret`. `kept`: the clock its lease kept from
   * an earlier ask, used without a lookup unless it was forgotten since.
   */
  asked(agentId: string, secret: string, nowUs: number, kept: AgentClock | null = null): AgentClock | undefined {
    const known = kept !== null && !kept.forgotten ? kept : this.agents.get(agentId);
    if (known === undefined || known.secret !== secret) return undefined;
    known.askedUs = nowUs;
    return known;
  }

  /**
   * start — `agentId`, asking with `secret` at `nowUs`, starts its clock on
   * `track` (replacing what was known). Keeps at most `most`, and forgets up
   * to two that have not asked since `forgetBeforeUs`: what one start adds,
   * it can take away twice, so agents gone quiet do not pile up.
   */
  start(agentId: string, secret: string, track: ClockTrack, nowUs: number, most: number, forgetBeforeUs: number): AgentClock {
    this.forget(agentId);
    for (let looked = 0, forgotten = 0; looked < SECOND_CHANCES_MAX + 2 && forgotten < 2; looked += 1) {
      const oldest = this.agents.entries().next();
      if (oldest.done === true) break;
      const [id, clock] = oldest.value;
      const quiet = clock.askedUs < forgetBeforeUs;
      if (!quiet && clock.askedUs > clock.placedUs && looked < SECOND_CHANCES_MAX) {
        this.agents.delete(id);
        clock.placedUs = clock.askedUs;
        this.agents.set(id, clock);
        continue;
      }
      if (!quiet && this.agents.size < most) break;
      this.forget(id);
      forgotten += 1;
    }
    if (this.agents.size >= most) {
      const oldest = this.agents.keys().next();
      if (oldest.done !== true) this.forget(oldest.value);
    }
    // The track's fields written out, not spread: a literal's own fields stay inside the object.
    const clock: AgentClock = {
      firstAgentUs: track.firstAgentUs,
      firstCoordUs: track.firstCoordUs,
      lowAgentUs: track.lowAgentUs,
      lowCoordUs: track.lowCoordUs,
      suspect: track.suspect,
      verified: track.verified,
      secret,
      refusedUntilUs: 0,
      lastAcquireUs: -1,
      askedUs: nowUs,
      placedUs: nowUs,
      forgotten: false,
    };
    this.agents.set(agentId, clock);
    return clock;
  }

  /** forget — drops what is known of `agentId`'s clock. */
  private forget(agentId: string): void {
    const clock = this.agents.get(agentId);
    if (clock === undefined) return;
    clock.forgotten = true;
    this.agents.delete(agentId);
  }

  get size(): number {
    return this.agents.size;
  }
}

/**
 * clockAfterAcquire — after `req`'s acquire was taken on at `nowUs` for
 * `record` (granted, renewed or held): notes when, and while its agent's
 * clock is not verified yet, counts the lease PROBATION_TTLS TTLs from now.
 * Call after clockRefusal, which starts and judges the agent's track.
 */
export function clockAfterAcquire<R>(p: PoolParts<R>, req: LeaseRequest, record: LeaseRecord, nowUs: number): void {
  if (p.config.clockDriftLimit === 0 || req.clockMs === undefined) return;
  const known = p.agentClocks.asked(req.agentId, req.leaseSecret, nowUs, record.clock);
  if (known === undefined) return;
  record.clock = known;
  known.lastAcquireUs = nowUs;
  if (known.verified) return;
  p.leases.countUntil(record, nowUs + PROBATION_TTLS * p.ttlUs);
  p.changed?.add(record.agentId);
}

/**
 * clockRefusal — the `clock-drift` refusal of `req`, received at `nowUs`,
 * whose agent holds the lease `record` here (undefined: none), or null
 * when its clock is within the pool's limit or cannot be judged yet.
 */
export function clockRefusal<R>(p: PoolParts<R>, record: LeaseRecord | undefined, req: LeaseRequest, nowUs: number): Reply | null {
  const limit = p.config.clockDriftLimit;
  if (limit === 0 || req.clockMs === undefined) return null;
  const known = p.agentClocks.asked(req.agentId, req.leaseSecret, nowUs, record?.clock ?? null);
  const memoryUs = CLOCK_DRIFT_MEMORY_TTLS * p.ttlUs;
  if (known === undefined) {
    p.agentClocks.start(req.agentId, req.leaseSecret, startTrack(req.clockMs, nowUs), nowUs, p.config.maxLeases, nowUs - memoryUs);
    return null;
  }
  if (known.refusedUntilUs > nowUs) {
    known.refusedUntilUs = nowUs + memoryUs;
    const message = `agent ${JSON.stringify(req.agentId)} was refused for its clock and asks again too soon`;
    return refusal(req.seq, message, p.config.leaseTtlMs);
  }
  const verdict = judgeClock(known, req.clockMs, nowUs, limit);
  if (verdict.kind === 'within') return null;
  const stretched = stretch(verdict);
  if (record !== undefined && stretched > 1) {
    p.leases.countUntil(record, (known.lastAcquireUs >= 0 ? known.lastAcquireUs : nowUs) + Math.ceil(p.ttlUs * stretched));
    p.changed?.add(record.agentId);
  }
  known.refusedUntilUs = nowUs + memoryUs;
  p.tally.clockDrifted();
  const leftUs = record === undefined ? 0 : record.expiresAtUs - nowUs;
  return refusal(req.seq, driftMessage(req.agentId, verdict, limit), Math.max(p.config.leaseTtlMs, Math.ceil(leftUs / US_PER_MS)));
}

function driftMessage(agentId: string, verdict: Drift, limit: number): string {
  const percent = (verdict.rate * 100).toFixed(1);
  const over = (verdict.overUs / 1e6).toFixed(1);
  return (
    `agent ${JSON.stringify(agentId)}'s clock ran ${verdict.kind}: ${percent}% of the coordinator's over ${over} s, ` +
    `outside the limit of ±${(limit * 100).toFixed(1)}%; it gets no tokens until its clock is fixed`
  );
}

function refusal(seq: number, message: string, retryAfterMs: number): Reply {
  return { v: 2, kind: 'error', seq, code: 'clock-drift', fault: 'peer', message, retryAfterMs };
}
