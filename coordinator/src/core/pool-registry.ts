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
 */
import type { CoordinatorConfig, TemplateConfig } from './config.js';
import { Pool } from './pool.js';

interface Made<R> {
  readonly pool: Pool<R>;
  readonly template: TemplateConfig;
}

export class PoolRegistry<R> {
  private readonly fixed = new Map<string, Pool<R>>();
  private readonly made = new Map<string, Made<R>>();
  private readonly counts = new Map<TemplateConfig, number>();
  private readonly templates: readonly TemplateConfig[];

  constructor(
    private readonly config: CoordinatorConfig,
    private readonly epoch: number,
    private readonly startUs: number,
  ) {
    for (const pool of config.pools) this.fixed.set(pool.name, new Pool<R>(pool, epoch, startUs, config.quietPeriodMs));
    this.templates = [...config.templates].sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /** size — pools held now (configured and made from templates). */
  get size(): number {
    return this.fixed.size + this.made.size;
  }

  /** get — the pool named `name` (made from a template if need be), 'too-many', or undefined when no pool or template matches. */
  get(name: string, nowUs: number): Pool<R> | 'too-many' | undefined {
    const pool = this.fixed.get(name) ?? this.made.get(name)?.pool;
    if (pool !== undefined) return pool;
    const template = this.templates.find((t) => name.startsWith(t.prefix) && name.length > t.prefix.length);
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
