/**
 * Ghosts: light traffic on a durable run's other pools, so that the
 * coordinators own several pools each, not only the run's: configured
 * pools `x1…` and template pools `tpl:a…` (made by the catch-all's owner on
 * a first request, evicted when idle, claimed again later).
 *
 * A ghost asks for tokens from a fresh agent id each time, never renews,
 * never returns and never reports: every token granted counts as spent
 * when it was granted. So each pool's grants must keep the envelope
 * B + r·T over every window, judged at the instants the coordinators made
 * them, across every claim, hand-over, step-down and eviction. (The run's
 * own pool is judged on what its agents admit, by simulation.ts.)
 */
import { parseCoordinatorConfig, type CoordinatorConfig, type Delivery } from '@tokenlease/coordinator/internal';
import { encodeMessage, makeRate, subjectFor } from '@tokenlease/shared';
import { EnvelopeWatch, type Random } from '@tokenlease/shared/testing';
import { PREFIX, type Event, type ReplyTo } from './sim-events.js';

/** GHOST_SLOT — the network slot of ghost requests (no agent's, no relay's). */
const GHOST_SLOT = -1_000_000;
const CAPACITY = 50;
const REFILL_PER_SECOND = 100;
const LEASE_TTL_MS = 500;
const MAX_LEASE_TOKENS = 10;
/** How long a grant may take from the instant it was made to the instant it is sent (a write, at most), µs; older ones are judged. */
const JUDGE_AFTER_US = 1_000_000;
/** A template pool is idle this long before it is evicted, ms. */
const IDLE_EVICT_MS = 1000;

/** GhostSpec — how many other configured pools and template pools a durable run has. */
export interface GhostSpec {
  readonly pools: number;
  readonly templatePools: number;
}

/** ghostNames — the names of the other pools of `spec`. */
export function ghostNames(spec: GhostSpec): string[] {
  const configured = Array.from({ length: spec.pools }, (_, i) => `x${i + 1}`);
  const templates = Array.from({ length: spec.templatePools }, (_, i) => `tpl:${String.fromCharCode(97 + i)}`);
  return [...configured, ...templates];
}

/** withGhostPools — `config` with the other configured pools of `spec` and the template of its template pools. */
export function withGhostPools(config: CoordinatorConfig, spec: GhostSpec): CoordinatorConfig {
  if (spec.pools === 0 && spec.templatePools === 0) return config;
  const fields = { capacity: CAPACITY, refill: `${REFILL_PER_SECOND}/s`, leaseTtlMs: LEASE_TTL_MS, maxLeaseTokens: MAX_LEASE_TOKENS };
  const pools = Object.fromEntries(ghostNames({ ...spec, templatePools: 0 }).map((name) => [name, fields]));
  const extra = parseCoordinatorConfig('simulation-ghosts', {
    quietPeriodMs: Math.max(500, config.quietPeriodMs), // unused: the run's own stays
    pools,
    templates: { 'tpl:*': { ...fields, idleEvictMs: IDLE_EVICT_MS } },
  });
  return { ...config, pools: [...config.pools, ...extra.pools], templates: [...config.templates, ...extra.templates] };
}

/** GhostHost — what ghosts need: the clock's queue, the coordinators' door, and where a failed check goes. */
export interface GhostHost {
  push(atUs: number, event: Event): void;
  receive(to: ReplyTo, subject: string, bytes: Uint8Array, nowUs: number): void;
  violation(message: string): void;
}

export class Ghosts {
  private readonly names: string[];
  private readonly watches = new Map<string, EnvelopeWatch>();
  /** Grants not judged yet, per pool: when each was made, and its tokens. */
  private readonly unjudged = new Map<string, Array<{ atUs: number; tokens: number }>>();
  private readonly seen = new Set<string>();
  /** The pool each ghost asked (a grant names no pool). */
  private readonly poolOf = new Map<string, string>();
  /** The last instant judged: a grant sent later than JUDGE_AFTER_US after it was made is judged at it. */
  private judgedUs = 0;
  private requests = 0;
  grantedTokens = 0;

  constructor(
    spec: GhostSpec,
    private readonly host: GhostHost,
    private readonly random: Random,
    private readonly untilUs: number,
  ) {
    this.names = ghostNames(spec);
    for (const name of this.names) {
      this.watches.set(name, new EnvelopeWatch(CAPACITY, makeRate(REFILL_PER_SECOND, 1000)));
      this.unjudged.set(name, []);
    }
  }

  /** isGhost — whether a reply goes to a ghost. */
  static isGhost(to: ReplyTo): boolean {
    return to.slot === GHOST_SLOT;
  }

  start(fromUs: number): void {
    this.names.forEach((_, index) => this.host.push(fromUs + this.random.int(0, 100_000), { k: 'ghost', index }));
  }

  /** request — ghost `index` asks now (template pools only in some seconds: idle in between, so they are evicted and claimed again), then again soon. */
  request(index: number, nowUs: number): void {
    this.judge(nowUs);
    const pool = this.names[index];
    if (pool === undefined) return;
    const idle = pool.startsWith('tpl:') && Math.floor(nowUs / 3_000_000) % 2 === 1;
    if (nowUs < this.untilUs && !idle) {
      this.requests += 1;
      const id = `g${this.requests}`;
      this.poolOf.set(id, pool);
      const request = {
        v: 2 as const,
        op: 'acquire' as const,
        agentId: id,
        pool,
        leaseSecret: 'ghost-secret-0123456789abcdef',
        seq: 1,
        leaseId: null,
        tokensLeft: 0,
        tokensWanted: this.random.int(1, MAX_LEASE_TOKENS),
        demandPerSecond: REFILL_PER_SECOND,
        holdMs: 0,
      };
      const to: ReplyTo = { id, slot: GHOST_SLOT, seq: 1, attempt: 0 };
      this.host.receive(to, subjectFor(PREFIX, 'acquire', pool), encodeMessage(request), nowUs);
    }
    if (nowUs < this.untilUs + JUDGE_AFTER_US * 2) this.host.push(nowUs + this.random.int(20_000, 60_000), { k: 'ghost', index });
  }

  /** granted — replies to ghosts, made at `producedUs`: each grant's tokens count in its pool's envelope. */
  granted(deliveries: readonly Delivery<ReplyTo>[], producedUs: number): void {
    for (const { to, reply } of deliveries) {
      if (reply.kind !== 'grant' || reply.tokensGranted === 0) continue;
      const key = `${to.id}:${reply.leaseId}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      const pool = this.poolOf.get(to.id) ?? '';
      this.unjudged.get(pool)?.push({ atUs: producedUs, tokens: reply.tokensGranted });
      this.grantedTokens += reply.tokensGranted;
    }
  }

  /** judge — the grants made more than JUDGE_AFTER_US ago go into their pools' envelopes, in the order they were made. */
  private judge(nowUs: number): void {
    const fromUs = this.judgedUs;
    this.judgedUs = Math.max(this.judgedUs, nowUs - JUDGE_AFTER_US);
    for (const [pool, list] of this.unjudged) {
      list.sort((a, b) => a.atUs - b.atUs);
      const ready = list.filter((g) => g.atUs <= this.judgedUs);
      if (ready.length === 0) continue;
      this.unjudged.set(pool, list.slice(ready.length));
      const watch = this.watches.get(pool) as EnvelopeWatch;
      for (const g of ready) {
        const excess = watch.admit(Math.max(g.atUs, fromUs), g.tokens);
        if (excess > 0)
          this.host.violation(
            `pool ${pool}: grants exceed the envelope by ${excess.toFixed(3)} tokens in window ${JSON.stringify(watch.worstWindow)}`,
          );
      }
    }
  }
}
