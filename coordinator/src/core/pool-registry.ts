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
 *   is refused (`too-many`) rather than letting names exhaust memory.
 * - A pool whose handling broke an invariant is replaced (`restart`) by a
 *   fresh one, empty and quiet for the quiet period from the fault, exactly
 *   as after a restart of the process: leases of the broken pool can be
 *   spent for at most one TTL, and the fresh pool refills nothing until
 *   then, so the envelope holds across the fault. In durable mode it is
 *   dropped instead; the adapter takes it over again from the store.
 * - Durable mode (a store holds the state and pools have owners): no pool
 *   exists until this coordinator takes it over (`adopt`) with what the
 *   store holds, and a pool it no longer owns is dropped (`release`).
 */
import type { CoordinatorConfig, TemplateConfig } from './config.js';
import { Pool } from './pool.js';
import type { StoredPool } from './pool-state.js';

/** PoolKind — how a name is served: a configured pool, a template's pool, or nothing. */
export type PoolKind = 'fixed' | 'template' | null;

interface Made<R> {
  readonly pool: Pool<R>;
  readonly template: TemplateConfig;
}

export class PoolRegistry<R> {
  private readonly fixed = new Map<string, Pool<R>>();
  private readonly made = new Map<string, Made<R>>();
  private readonly counts = new Map<TemplateConfig, number>();
  private restarts = 0;
  private readonly templates: readonly TemplateConfig[];

  constructor(
    private readonly config: CoordinatorConfig,
    private readonly epoch: number,
    private readonly startUs: number,
    private readonly durable = false,
  ) {
    if (!durable) for (const pool of config.pools) this.fixed.set(pool.name, new Pool<R>(pool, epoch, startUs, config.quietPeriodMs));
    this.templates = [...config.templates].sort((a, b) => b.prefix.length - a.prefix.length);
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
   */
  adopt(name: string, epoch: number, nowUs: number, state: StoredPool): Pool<R> | 'too-many' | undefined {
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
    this.made.set(name, { pool, template });
    this.counts.set(template, count + 1);
    return pool;
  }

  /** release — drops the pool `name` (it changed owner); returns it, or undefined when not held. */
  release(name: string): Pool<R> | undefined {
    const fixed = this.fixed.get(name);
    if (fixed !== undefined) {
      this.fixed.delete(name);
      return fixed;
    }
    const made = this.made.get(name);
    if (made === undefined) return undefined;
    this.made.delete(name);
    this.counts.set(made.template, (this.counts.get(made.template) ?? 1) - 1);
    return made.pool;
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
    const old = fixed ?? made?.pool;
    if (old === undefined) return undefined;
    this.restarts += 1;
    const pool = new Pool<R>(old.config, this.epoch, nowUs, this.config.quietPeriodMs, this.restarts);
    pool.touch(nowUs);
    if (fixed !== undefined) this.fixed.set(name, pool);
    else if (made !== undefined) this.made.set(name, { pool, template: made.template });
    return old;
  }

  private templateOf(name: string): TemplateConfig | undefined {
    return this.templates.find((t) => name.startsWith(t.prefix) && name.length > t.prefix.length);
  }

  /** size — pools held now (configured and made from templates). */
  get size(): number {
    return this.fixed.size + this.made.size;
  }

  /** get — the pool named `name` (made from a template if need be), 'too-many', or undefined when no pool or template matches. */
  get(name: string, nowUs: number): Pool<R> | 'too-many' | undefined {
    const pool = this.fixed.get(name) ?? this.made.get(name)?.pool;
    if (pool !== undefined || this.durable) return pool;
    const template = this.templateOf(name);
    if (template === undefined) return undefined;
    const count = this.counts.get(template) ?? 0;
    if (count >= template.maxPools) return 'too-many';
    const made = new Pool<R>({ ...template.pool, name }, this.epoch, this.startUs, this.config.quietPeriodMs);
    made.touch(nowUs);
    this.made.set(name, { pool: made, template });
    this.counts.set(template, count + 1);
    return made;
  }

  /** existing — the pool named `name` if it is held now; never makes one. */
  existing(name: string): Pool<R> | undefined {
    return this.fixed.get(name) ?? this.made.get(name)?.pool;
  }

  all(): IterableIterator<Pool<R>> {
    return [...this.fixed.values(), ...[...this.made.values()].map((m) => m.pool)].values();
  }

  /** evictIdle — forgets every template pool idle and full for its template's idleEvictMs; returns their names. */
  evictIdle(nowUs: number): string[] {
    const evicted: string[] = [];
    for (const [name, { pool, template }] of this.made) {
      if (this.evictableAtUs(pool, template) > nowUs) continue;
      this.made.delete(name);
      this.counts.set(template, (this.counts.get(template) ?? 1) - 1);
      evicted.push(name);
    }
    return evicted;
  }

  private evictableAtUs(pool: Pool<R>, template: TemplateConfig): number {
    return Math.max(pool.idleFullAtUs(), pool.lastActivityUs + template.idleEvictMs * 1000);
  }
}
