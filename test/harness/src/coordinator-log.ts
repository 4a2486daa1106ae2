/**
 * What coordinators said about their pools, from their log lines (see
 * log-events.ts): who owned a pool when (durable mode), and every grant
 * sent (at debug level, with its host monotonic time). One reading for the
 * integration suites and the chaos runner alike.
 */
import { logEvents, matchesFields, parseLogLine, type LogFields } from './log-events.js';
import { isRunning } from './proc-state.js';
import type { Child } from './processes.js';

/** OwnershipEvent — a coordinator's word on one pool: it owns it, handed it over, or stepped down. */
export interface OwnershipEvent {
  /** Index of the line in `child.lines`. */
  readonly index: number;
  readonly kind: 'owned' | 'handed-over' | 'stepped-down';
  readonly epoch: number;
  /** The whole line: 'pool-owned' tells what the owner took over (`leases`, `levelTokens`, `leasedTokens`). */
  readonly fields: LogFields;
}

const OWNERSHIP_KINDS = [
  ['pool-owned', 'owned'],
  ['pool-handed-over', 'handed-over'],
  ['stepped-down', 'stepped-down'],
] as const;

/** ownershipEvents — `child`'s ownership events for `pool`, in log order. */
export function ownershipEvents(child: Child, pool: string): OwnershipEvent[] {
  return OWNERSHIP_KINDS.flatMap(([event, kind]) =>
    logEvents(child.lines, { event, pool }).map(({ index, fields }) => ({ index, kind, epoch: Number(fields['epoch']), fields })),
  ).sort((a, b) => a.index - b.index);
}

/** currentOwner — the running coordinator whose last word on `pool` was 'pool-owned', with that epoch (the highest epoch if several claim it). */
export function currentOwner(children: readonly Child[], pool: string): { readonly child: Child; readonly epoch: number } | undefined {
  let best: { child: Child; epoch: number } | undefined;
  for (const child of children) {
    if (!isRunning(child)) continue;
    const last = ownershipEvents(child, pool).at(-1);
    if (last?.kind === 'owned' && (best === undefined || last.epoch > best.epoch)) best = { child, epoch: last.epoch };
  }
  return best;
}

/** waitForOwned — `child`'s first 'pool-owned' line for `pool` with an epoch above `aboveEpoch` (past or future). */
export async function waitForOwned(child: Child, pool: string, aboveEpoch: number, timeoutMs: number): Promise<OwnershipEvent> {
  await child.waitForLine((line) => {
    const fields = parseLogLine(line);
    return fields !== null && matchesFields(fields, { event: 'pool-owned', pool }) && Number(fields['epoch']) > aboveEpoch;
  }, timeoutMs);
  const event = ownershipEvents(child, pool).find((e) => e.kind === 'owned' && e.epoch > aboveEpoch);
  if (event === undefined) throw new Error(`${child.name}: matched a 'pool-owned' line that is no longer in its log`);
  return event;
}

/** GrantLine — a 'grant' line: a reply the coordinator sent, at host monotonic `tUs`. */
export interface GrantLine {
  readonly index: number;
  readonly leaseId: string;
  readonly seq: number;
  readonly epoch: number;
  readonly tokensGranted: number;
  readonly ttlMs: number;
  readonly tUs: number;
}

/** grantLines — every grant `child` logged (needs `--log-level debug`), repeats of a retried reply included. */
export function grantLines(child: Child): GrantLine[] {
  return logEvents(child.lines, { event: 'grant' }).map(({ index, fields: f }) => ({
    index,
    leaseId: String(f['leaseId']),
    seq: Number(f['seq']),
    epoch: Number(f['epoch']),
    tokensGranted: Number(f['tokensGranted']),
    ttlMs: Number(f['ttlMs']),
    tUs: Number(f['tUs']),
  }));
}

/** freshGrants — the grants of all `children`, a retry's repeated reply counted once (its first). */
export function freshGrants(children: readonly Child[]): GrantLine[] {
  const seen = new Set<string>();
  return children.flatMap(grantLines).filter((g) => {
    const key = `${g.leaseId}#${g.seq}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
