/**
 * PoolRegistry: the pools a coordinator serves, by name.
 *
 * Rules:
 * - A pool configured by name is always there. A name that matches a
 *   template (longest prefix first) gets a pool made on first use, with the
 *   template's fields and the coordinator's start, so it obeys the same
 *   quiet period and behaves as if it had existed, untouched, since then.
 * - A template pool is forgotten once it has no lease and no waiting
 *   request, its level is full and it has seen no request for the
 *   template's `idleEvictMs`: nothing is lost, because a pool made anew
 *   later starts full, exactly as the forgotten one was. Memory per
 *   forgotten pool: none.
 * - A template makes at most `maxPools` pools at once; beyond that the name
 *   is refused (`too-many`) rather than letting names exhaust memory. Of
 *   those, one identity token (the one whose acquire made the pool) may
 *   have made at most `maxPoolsPerIdentity` still held (`identity-too-many`),
 *   so that no one identity can fill a template for the others. Counted per
 *   template and identity as pools are made and forgotten (O(1) per
 *   request). Durable mode: the identity whose request made this
 *   coordinator claim the pool (checked before the claim); a pool it took
 *   over otherwise (a rebalance, a failover) has no maker.
 * - A pool whose handling broke an invariant is replaced (`restart`) by a
 *   fresh one, empty and quiet for the quiet period from the fault, exactly
 *   as after a restart of the process: leases of the broken pool can be
 *   spent for at most one TTL, and the fresh pool refills nothing until
 *   then, so the envelope holds across the fault. In durable mode it is
 *   dropped instead; the adapter takes it over again from the store.
 * - Durable mode (a store holds the state and pools have owners): no pool
 *   exists until this coordinator takes it over (`adopt`) with what the
 *   store holds, and a pool it no longer owns is dropped (`release`).
 * - A new configuration (`reconfigure`): a pool whose fields changed is
 *   reconfigured in place (pool-reconfigure.ts); a pool added is made as a
 *   template's pool is, with the coordinator's start (durable mode: it
 *   waits to be adopted); a pool removed (no longer configured and matching
 *   no template) retires: it grants nothing more, serves returns, reports
 *   and status queries while its leases lapse, and is forgotten once it has
 *   no lease and a full level, exactly as an idle template pool. Configured
 *   again before that, it is reconfigured and serves on. Pools of nested
 *   credit (a relay's) are not reconfigured in place: a changed one starts
 *   over, held requests answered first, with a credit of its own (and so,
 *   at the relay, a new upstream lease); the old one's leases stay counted
 *   at the root under the old upstream lease until it expires.
 */
import type { CoordinatorConfig, PoolConfig, TemplateConfig } from './config.js';
import type { Delivery } from './chunk-grant.js';
import { Pool } from './pool.js';
import type { CreditFactory } from './pool-parts.js';
import { sameLimits, samePoolConfig } from './pool-reconfigure.js';
import type { StoredPool } from './pool-state.js';

/** ReconfigureSummary — what a new configuration changed among the pools held, by name (template pools included). */
export interface ReconfigureSummary {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  /** Pools whose kind changed (configured ↔ template's): durable mode hands them over to be owned anew. */
  readonly rekinded: string[];
}

/** PoolKind — how a name is served: a configured pool, a template's pool, or nothing. */
export type PoolKind = 'fixed' | 'template' | null;

interface Made<R> {
  readonly pool: Pool<R>;
  readonly template: TemplateConfig;
  /** The identity token whose acquire made it (null: adopted from a store). */
  readonly maker: string | null;
}

/** MakerCounts — pools held per template and per identity that made them (identities with none are not kept). */
class MakerCounts {
  private readonly counts = new Map<TemplateConfig, Map<string, number>>();

  of(template: TemplateConfig, maker: string): number {
    return this.counts.get(template)?.get(maker) ?? 0;
  }

  add<R>(made: Made<R>, delta: 1 | -1): void {
    if (made.maker === null) return;
    const byMaker = this.counts.get(made.template) ?? new Map<string, number>();
    const count = (byMaker.get(made.maker) ?? 0) + delta;
    if (count > 0) byMaker.set(made.maker, count);
    else byMaker.delete(made.maker);
    if (byMaker.size > 0) this.counts.set(made.template, byMaker);
    else this.counts.delete(made.template);
  }
}

export class PoolRegistry<R> {
  private readonly fixed = new Map<string, Pool<R>>();
  private readonly made = new Map<string, Made<R>>();
  /** Pools removed from the configuration whose leases are lapsing. */
  private readonly retiring = new Map<string, Pool<R>>();
  private counts = new Map<TemplateConfig, number>();
  private makers = new MakerCounts();
  private restarts = 0;
  private templates: readonly TemplateConfig[];

  constructor(
    private config: CoordinatorConfig,
    private readonly epoch: number,
    private readonly startUs: number,
    private readonly durable = false,
    /** Makes the credit of each pool instead of a bucket's or window's (a relay's pools); none: the configured kind. */
    private readonly creditOf?: CreditFactory,
  ) {
    if (!durable) for (const pool of config.pools) this.fixed.set(pool.name, this.fresh(pool, true));
    this.templates = sortTemplates(config.templates);
  }

  /**
   * fresh — a pool of `config` as if made at the coordinator's start (empty
   * and quiet then, refilling since). One made after the start (added by a
   * reload, or from a template) gets lease ids of its own: an agent may
   * still name a lease of an earlier pool of that name (one a relay started
   * over), and must never find it issued again.
   */
  private fresh(config: PoolConfig, atStart = false): Pool<R> {
    const restarts = atStart ? 0 : (this.restarts += 1);
    return new Pool<R>(config, this.epoch, this.startUs, this.config.quietPeriodMs, restarts, this.creditOf);
  }

  /** templateKeyOf — the template `name` is (or would be) made from, as configured (`"tenant:*"`), or null. */
  templateKeyOf(name: string): string | null {
    const template = this.templateOf(name);
    return template === undefined ? null : template.pool.name;
  }

  /** isRetiring — whether `name` is a pool removed from the configuration whose leases still lapse. */
  isRetiring(name: string): boolean {
    return this.retiring.has(name);
  }

  /** kindOf — whether `name` is a configured pool, a template's pool, or neither. */
  kindOf(name: string): PoolKind {
    if (this.config.pools.some((p) => p.name === name)) return 'fixed';
    return this.templateOf(name) === undefined ? null : 'template';
  }

  /**
   * adopt — (durable mode) the pool `name` taken over at `nowUs` under
   * `epoch` with the store's `state`; 'too-many' when its template is full,
   * undefined when `name` is no pool. A pool already held is kept as it is.
   * `maker`: the identity whose request made this coordinator claim a
   * template pool (null: a claim of its own, such as a rebalance).
   */
  adopt(name: string, epoch: number, nowUs: number, state: StoredPool, maker: string | null = null): Pool<R> | 'too-many' | undefined {
    const held = this.existing(name);
    if (held !== undefined) return held;
    const config = this.config.pools.find((p) => p.name === name);
    if (config !== undefined) {
      const pool = Pool.takeOver<R>(config, epoch, nowUs, state);
      this.fixed.set(name, pool);
      return pool;
    }
    const template = this.templateOf(name);
    if (template === undefined) return undefined;
    const count = this.counts.get(template) ?? 0;
    if (count >= template.maxPools) return 'too-many';
    const pool = Pool.takeOver<R>({ ...template.pool, name }, epoch, nowUs, state);
    pool.touch(nowUs);
    this.remember(name, { pool, template, maker });
    return pool;
  }

  /** release — drops the pool `name` (it changed owner); returns it, or undefined when not held. */
  release(name: string): Pool<R> | undefined {
    const retiring = this.retiring.get(name);
    if (retiring !== undefined) {
      this.retiring.delete(name);
      return retiring;
    }
    const fixed = this.fixed.get(name);
    if (fixed !== undefined) {
      this.fixed.delete(name);
      return fixed;
    }
    return this.forget(name)?.pool;
  }

  /** renewed — a pool of `config` starting over at `nowUs`, quiet for `quietPeriodMs`, with lease ids of its own. */
  private renewed(config: PoolConfig, nowUs: number, quietPeriodMs: number): Pool<R> {
    this.restarts += 1;
    const pool = new Pool<R>(config, this.epoch, nowUs, quietPeriodMs, this.restarts, this.creditOf);
    pool.touch(nowUs);
    return pool;
  }

  /**
   * restart — (memory mode) replaces the pool `name` by a fresh one that
   * starts at `nowUs` with the configured quiet period; returns the old
   * pool, or undefined when none was held. Durable mode: drops it.
   */
  restart(name: string, nowUs: number): Pool<R> | undefined {
    if (this.durable) return this.release(name);
    const fixed = this.fixed.get(name);
    const made = this.made.get(name);
    const retiring = this.retiring.get(name);
    const old = fixed ?? made?.pool ?? retiring;
    if (old === undefined) return undefined;
    const pool = this.renewed(old.config, nowUs, this.config.quietPeriodMs);
    if (fixed !== undefined) this.fixed.set(name, pool);
    else if (made !== undefined) this.made.set(name, { ...made, pool });
    else this.retiring.set(name, pool);
    return old;
  }

  private templateOf(name: string): TemplateConfig | undefined {
    return this.templates.find((t) => name.startsWith(t.prefix) && name.length > t.prefix.length);
  }

  /** size — pools held now (configured and made from templates). */
  get size(): number {
    return this.fixed.size + this.made.size;
  }

  /**
   * get — the pool named `name` (made from a template if need be, for a
   * request under the identity token `identity`), 'too-many' (its template
   * is full), 'identity-too-many' (that identity made its most pools of
   * it), 'removed' (retiring: it grants nothing more), or undefined when no
   * pool or template matches. Refusals change nothing.
   */
  get(name: string, nowUs: number, identity: string): Pool<R> | 'too-many' | 'identity-too-many' | 'removed' | undefined {
    if (this.retiring.has(name)) return 'removed';
    const pool = this.fixed.get(name) ?? this.made.get(name)?.pool;
    if (pool !== undefined || this.durable) return pool;
    const template = this.templateOf(name);
    if (template === undefined) return undefined;
    if ((this.counts.get(template) ?? 0) >= template.maxPools) return 'too-many';
    if (this.makers.of(template, identity) >= template.maxPoolsPerIdentity) return 'identity-too-many';
    const made = this.fresh({ ...template.pool, name });
    made.touch(nowUs);
    this.remember(name, { pool: made, template, maker: identity });
    return made;
  }

  /**
   * makerRefusal — (durable mode, before claiming) 'identity-too-many' when
   * `identity` has made as many pools of `name`'s template as one identity
   * may, else null (held already, no template, or room left).
   */
  makerRefusal(name: string, identity: string): 'identity-too-many' | null {
    if (this.existing(name) !== undefined) return null;
    const template = this.templateOf(name);
    if (template === undefined) return null;
    return this.makers.of(template, identity) >= template.maxPoolsPerIdentity ? 'identity-too-many' : null;
  }

  /** remember — holds `made` under `name`, counted for its template and its maker. */
  private remember(name: string, made: Made<R>): void {
    this.made.set(name, made);
    this.counts.set(made.template, (this.counts.get(made.template) ?? 0) + 1);
    this.makers.add(made, 1);
  }

  /** forget — drops the template pool `name`, and its counts; returns what was held, or undefined. */
  private forget(name: string): Made<R> | undefined {
    const made = this.made.get(name);
    if (made === undefined) return undefined;
    this.made.delete(name);
    this.counts.set(made.template, (this.counts.get(made.template) ?? 1) - 1);
    this.makers.add(made, -1);
    return made;
  }

  /** existing — the pool named `name` if it is held now; never makes one. */
  existing(name: string): Pool<R> | undefined {
    return this.fixed.get(name) ?? this.made.get(name)?.pool ?? this.retiring.get(name);
  }

  /** names — the names of every pool held (configured, template's, retiring), in no order; allocates nothing per pool. */
  *names(): IterableIterator<string> {
    yield* this.fixed.keys();
    yield* this.made.keys();
    yield* this.retiring.keys();
  }

  all(): IterableIterator<Pool<R>> {
    return [...this.fixed.values(), ...[...this.made.values()].map((m) => m.pool), ...this.retiring.values()].values();
  }

  /**
   * forgetAtUs — when `pool` may be forgotten if nothing happens to it
   * meanwhile (a template pool idle and full for its idleEvictMs, a
   * retiring pool without a lease and full); Infinity for a configured
   * pool, or one this registry does not hold.
   */
  forgetAtUs(pool: Pool<R>): number {
    const name = pool.config.name;
    if (this.retiring.get(name) === pool) return pool.idleFullAtUs();
    const made = this.made.get(name);
    return made?.pool === pool ? this.evictableAtUs(pool, made.template) : Infinity;
  }

  /** evictIfIdle — forgets `pool` when it is due to be forgotten at `nowUs` (see forgetAtUs); true when it did. */
  evictIfIdle(pool: Pool<R>, nowUs: number, onEvict: (pool: Pool<R>) => void = () => undefined): boolean {
    if (this.forgetAtUs(pool) > nowUs) return false;
    const name = pool.config.name;
    onEvict(pool);
    if (this.retiring.get(name) === pool) {
      this.retiring.delete(name);
      return true;
    }
    return this.forget(name) !== undefined;
  }

  /** holds — whether `pool` is the pool this registry holds under its name. */
  holds(pool: Pool<R>): boolean {
    return this.existing(pool.config.name) === pool;
  }

  private evictableAtUs(pool: Pool<R>, template: TemplateConfig): number {
    return Math.max(pool.idleFullAtUs(), pool.lastActivityUs + template.idleEvictMs * 1000);
  }

  /**
   * reconfigure — serves `config` from `nowUs` on (see the module rules);
   * replies of held requests answered under the old configuration go to
   * `visit` by pool. The subject prefix must not change (the caller checks).
   */
  reconfigure(config: CoordinatorConfig, nowUs: number, visit: (pool: string, out: Delivery<R>[]) => void): ReconfigureSummary {
    const summary: ReconfigureSummary = { added: [], removed: [], changed: [], rekinded: [] };
    const before = { fixed: new Map(this.fixed), made: new Map(this.made), retiring: new Map(this.retiring) };
    this.config = config;
    this.templates = sortTemplates(config.templates);
    this.fixed.clear();
    this.made.clear();
    this.retiring.clear();
    this.counts = new Map();
    this.makers = new MakerCounts();
    const apply = (pool: Pool<R>, next: PoolConfig): Pool<R> => {
      if (samePoolConfig(pool.config, next)) return pool;
      if (sameLimits(pool.config, next)) {
        // Only shadow mode or identity rules switched: the next grants and admissions follow them; leases, level and held requests stay.
        pool.switchShadow(next);
        summary.changed.push(next.name);
        return pool;
      }
      const out: Delivery<R>[] = [];
      summary.changed.push(next.name);
      if (this.creditOf !== undefined) {
        // Nested credit (a relay): the pool starts over under the new limits with a credit of its own.
        pool.flush(nowUs, out);
        if (out.length > 0) visit(next.name, out);
        // No quiet period: nothing the new pool grants is counted anywhere else.
        return this.renewed(next, nowUs, 0);
      }
      pool.reconfigure(next, nowUs, out);
      if (out.length > 0) visit(next.name, out);
      return pool;
    };
    for (const next of config.pools) {
      const held = before.fixed.get(next.name) ?? before.made.get(next.name)?.pool ?? before.retiring.get(next.name);
      if (before.made.has(next.name)) summary.rekinded.push(next.name);
      const applied = held === undefined ? undefined : apply(held, next);
      if (held === undefined && !this.durable) summary.added.push(next.name); // durable mode: made when adopted, not now
      const pool = applied ?? (this.durable ? undefined : this.fresh(next));
      if (pool !== undefined) this.fixed.set(next.name, pool);
    }
    const leftovers = [...before.fixed, ...[...before.made].map(([name, m]) => [name, m.pool] as const), ...before.retiring];
    for (const [name, pool] of leftovers) {
      if (this.fixed.has(name)) continue;
      const template = this.templateOf(name);
      if (template === undefined) {
        if (!before.retiring.has(name)) summary.removed.push(name);
        this.retiring.set(name, pool);
        continue;
      }
      if (before.fixed.has(name) || before.retiring.has(name)) summary.rekinded.push(name);
      // A pool that stays a template's keeps its maker (the same template or another): it still counts as that identity's.
      const maker = before.made.get(name)?.maker ?? null;
      this.remember(name, { pool: apply(pool, { ...template.pool, name }), template, maker });
    }
    return summary;
  }
}

function sortTemplates(templates: readonly TemplateConfig[]): TemplateConfig[] {
  return [...templates].sort((a, b) => b.prefix.length - a.prefix.length);
}
