/**
 * The demo's once-a-second table.
 */
import type { PoolStatus } from '@tokenlease/shared';

export interface AgentStats {
  readonly admittedTokens: number;
  readonly admittedCount: number;
  readonly deniedTokens: number;
  readonly deniedCount: number;
  readonly balanceTokens: number;
  readonly attempts: number;
  readonly leasesStarted: number;
}

export interface AgentRow {
  readonly name: string;
  readonly about: string;
  readonly previous: AgentStats | null;
  readonly stats: AgentStats;
}

export interface PoolShape {
  readonly name: string;
  readonly capacity: number;
  readonly refillPerSecond: number;
}

const pad = (value: string | number, width: number): string => String(value).padStart(width);

export function renderTable(elapsedS: number, pool: PoolShape, rows: readonly AgentRow[], status: PoolStatus | null): string {
  const lines: string[] = [];
  lines.push(`── t = ${elapsedS.toFixed(0)} s ${'─'.repeat(60)}`);
  lines.push(
    `${'agent'.padEnd(9)}${pad('admitted/s', 11)}${pad('denied/s', 10)}${pad('admitted', 10)}${pad('denied', 9)}${pad('in hand', 9)}${pad('round-trips', 12)}   demand`,
  );
  let fleetTokens = 0;
  let fleetTrips = 0;
  for (const row of rows) {
    const s = row.stats;
    const p = row.previous;
    fleetTokens += s.admittedTokens;
    fleetTrips += s.attempts;
    lines.push(
      `${row.name.padEnd(9)}${pad(p === null ? '-' : s.admittedTokens - p.admittedTokens, 11)}${pad(p === null ? '-' : s.deniedTokens - p.deniedTokens, 10)}` +
        `${pad(s.admittedTokens, 10)}${pad(s.deniedTokens, 9)}${pad(s.balanceTokens, 9)}${pad(s.attempts, 12)}   ${row.about}`,
    );
  }
  const envelope = pool.capacity + pool.refillPerSecond * elapsedS;
  lines.push(
    `fleet: ${fleetTokens} tokens admitted in ${elapsedS.toFixed(1)} s; envelope B + r·T = ${pool.capacity} + ${pool.refillPerSecond}·${elapsedS.toFixed(1)} = ${envelope.toFixed(0)} ` +
      `(${((100 * fleetTokens) / envelope).toFixed(1)}% of it); ${fleetTrips} round-trips` +
      (fleetTokens > 0 ? `, ${((1000 * fleetTrips) / fleetTokens).toFixed(0)} per 1,000 tokens` : ''),
  );
  if (status !== null) {
    lines.push(
      `coordinator: level ${status.levelTokens}, leased ${status.leasedTokens} in ${status.leases} lease(s), ${status.waiting} request(s) held` +
        (status.quietMs > 0 ? `, quiet for ${status.quietMs} ms more` : ''),
    );
  }
  return lines.join('\n');
}
