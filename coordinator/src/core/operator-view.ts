/**
 * What the operator CLI (`tokenlease`) shows: plain text of pools, one
 * pool's status, a refreshing watch frame and reload outcomes, and the
 * merge of `pools` pages gathered from several coordinators. Pure: the
 * CLI does the I/O.
 *
 * Rules:
 * - Names are printed as they are (they are printable ASCII without
 *   spaces, validated by the codec), never interpreted.
 * - Pages merge by name: each coordinator lists its own pools in name
 *   order, so everything up to the smallest `next` of the coordinators
 *   that have more is complete (`mergePages`).
 */
import type { PoolList, PoolStatus, PoolSummary, ReloadOutcome } from '@tokenlease/shared';

/** HeldBy — a pool summary and the coordinator that holds it. */
export interface HeldBy extends PoolSummary {
  readonly coordinator: string;
}

/** mergePages — the pools complete up to the next cursor (undefined: all complete), from one round of gathered pages. */
export function mergePages(pages: readonly PoolList[]): { pools: HeldBy[]; next: string | undefined } {
  const cursors = pages.map((p) => p.next).filter((n): n is string => n !== null);
  const next = cursors.length === 0 ? undefined : cursors.reduce((a, b) => (a < b ? a : b));
  const pools = pages
    .flatMap((page) => page.pools.map((p) => ({ ...p, coordinator: page.coordinator })))
    .filter((p) => next === undefined || p.pool <= next)
    .sort((a, b) => (a.pool < b.pool ? -1 : a.pool > b.pool ? 1 : a.coordinator < b.coordinator ? -1 : 1));
  return { pools, next };
}

/** table — rows padded into columns (the last column is not padded). */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}

/** formatPools — one line per pool held, with its coordinator and credit. */
export function formatPools(pools: readonly HeldBy[]): string {
  if (pools.length === 0) return 'no pools held';
  const header = ['POOL', 'KIND', 'COORDINATOR', 'CAPACITY', 'LEVEL', 'LEASED', 'LEASES', 'WAITING', 'REFILL'];
  // A window pool's tokens on their way back; a concurrency pool's slots held back until their requests are past the hold bound.
  const windows = pools.some((p) => p.windowMs !== undefined || p.holdMs !== undefined);
  if (windows) header.push('COOLING');
  // Calls agents decided locally and reported: what their clients saw admitted and refused.
  const calls = pools.some((p) => p.calls !== undefined);
  const shadow = pools.some((p) => (p.calls?.shadowDenied ?? 0) > 0);
  if (calls) header.push('ADMITTED', 'DENIED', ...(shadow ? ['SHADOW-DENIED'] : []));
  const rows = pools.map((p) => [
    p.pool,
    p.shadow ? `${p.kind} (shadow)` : p.kind,
    p.coordinator,
    String(p.capacityTokens) + (p.allowanceTokens > 0 ? `+${p.allowanceTokens}` : ''),
    String(p.levelTokens),
    String(p.leasedTokens),
    String(p.leases),
    String(p.waiting),
    p.holdMs !== undefined
      ? `slots, hold ${p.holdMs}ms`
      : p.windowMs === undefined
        ? `${p.refillTokens}/${p.refillPeriodMs}ms`
        : `window ${p.windowMs}ms`,
    ...(windows ? [p.windowMs === undefined && p.holdMs === undefined ? '-' : String(p.coolingTokens ?? 0)] : []),
    ...(calls ? [p.calls?.admitted, p.calls?.denied].map((n) => (n === undefined ? '-' : String(n))) : []),
    ...(shadow ? [p.calls === undefined ? '-' : String(p.calls.shadowDenied)] : []),
  ]);
  return table([header, ...rows]);
}

/** bar — `width` cells: level, leased, and the room left to capacity (credit may pass it after a change: then it is full). */
export function bar(levelTokens: number, leasedTokens: number, capacityTokens: number, width = 40): string {
  const total = Math.max(1, capacityTokens, levelTokens + leasedTokens);
  const level = Math.round((levelTokens / total) * width);
  const leased = Math.min(width - level, Math.round((leasedTokens / total) * width));
  return `[${'#'.repeat(level)}${'='.repeat(leased)}${'.'.repeat(width - level - leased)}]`;
}

/** formatStatus — one pool's status (and the named agent's lease), as lines. */
export function formatStatus(s: PoolStatus): string {
  const lines = [
    `pool ${s.pool} (epoch ${s.epoch})`,
    `  ${bar(s.levelTokens, s.leasedTokens, s.capacityTokens)}  # level  = leased  . room`,
    `  capacity ${s.capacityTokens}  level ${s.levelTokens}  leased ${s.leasedTokens} in ${s.leases} lease(s)  waiting ${s.waiting}`,
  ];
  if (s.calls !== undefined) {
    const shadow = s.calls.shadowDenied > 0 ? `  would-be denied ${s.calls.shadowDenied} (shadow)` : '';
    lines.push(`  calls its agents reported: admitted ${s.calls.admitted}  denied ${s.calls.denied}${shadow}`);
  }
  if (s.quietMs > 0) lines.push(`  quiet for ${s.quietMs} ms more (grants nothing until then)`);
  if (s.agentLease === null) lines.push('  agent: holds no lease here');
  else if (s.agentLease !== undefined) {
    const l = s.agentLease;
    lines.push(`  agent: lease ${l.leaseId}, bound ${l.tokensHeld} tokens, expires in ${l.expiresInMs} ms`);
  }
  return lines.join('\n');
}

/** formatWatch — one frame of `tokenlease watch`: the status and the last grants-free minutes as a sparkline of level. */
export function formatWatch(s: PoolStatus, levels: readonly number[], atText: string): string {
  const marks = ' ▁▂▃▄▅▆▇█';
  const top = Math.max(1, s.capacityTokens);
  const spark = levels.map((l) => marks[Math.min(marks.length - 1, Math.round((l / top) * (marks.length - 1)))] ?? ' ').join('');
  return [
    `tokenlease watch ${s.pool} — ${atText} (Ctrl-C to stop)`,
    '',
    formatStatus(s),
    '',
    `  level, last ${levels.length} refreshes: ${spark}`,
  ].join('\n');
}

/** formatReload — one line per coordinator's outcome. */
export function formatReload(outcomes: readonly ReloadOutcome[]): string {
  return outcomes
    .map((o) => {
      const changes = [
        o.added.length > 0 ? `added ${o.added.join(', ')}` : '',
        o.removed.length > 0 ? `removed ${o.removed.join(', ')}` : '',
        o.changed.length > 0 ? `changed ${o.changed.join(', ')}` : '',
      ].filter((c) => c !== '');
      return `${o.coordinator}: ${o.outcome}${changes.length > 0 ? ` (${changes.join('; ')})` : ''}: ${o.message}`;
    })
    .join('\n');
}
