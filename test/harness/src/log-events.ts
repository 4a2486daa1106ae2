/**
 * What the processes the tests start print, read as data. A coordinator
 * logs pino JSON lines, each with a stable `event` name ('serving',
 * 'pool-owned', 'grant', …); an agent process (agent-process.ts) prints
 * JSON lines with a `type` ('ready', 'stats', 'event', 'done'). Tests and
 * the chaos runner match those fields, never a message's words, so
 * rewording a message breaks nothing. Lines that are not JSON objects are
 * skipped.
 */
import type { AgentEvent } from '@tokenlease/agent';
import type { BusEvent } from '@tokenlease/shared/nats';
import type { Child } from './processes.js';

/** COORDINATOR_EVENTS — the `event` names of the coordinator's log lines the tools rely on. */
export const COORDINATOR_EVENTS = [
  'serving',
  'durable-started',
  'stopped',
  'durable-stopped',
  'shutting-down',
  'pool-owned',
  'pool-handed-over',
  'stepped-down',
  'bus-lost',
  'bus-back',
  'grant',
  'request-refused',
  'clock-drift',
  'request-dropped',
  'request-failed',
  'pool-failed',
  'tick-failed',
  'nats-connection',
  'store-unavailable',
  'heartbeat-failed',
  'state-invalid',
  'owner-record-cleared',
  'members-cleared',
  'durability-warning',
  'replica-warning',
  'http-listening',
  'reloaded',
  'reload-refused',
  // A relay (tokenlease-relay) logs these besides the coordinator's.
  'relay-serving',
  'uplink-started',
  'upstream-lease',
  'upstream-refused',
  'upstream-lost',
] as const;
export type CoordinatorEvent = (typeof COORDINATOR_EVENTS)[number];

/** AgentLine — the `type` of an agent process's lines (and a hostile client's: `flooding`, its flood begun; a slot holder's: `held`, the slots it holds); an 'event' line names the agent's event in `event`. */
export type AgentLine = 'ready' | 'stats' | 'event' | 'done' | 'flooding' | 'held';

type Value = string | number | boolean | null;
/** FieldMatch — fields a line must have, each equal, nested objects matched field by field. */
export interface FieldMatch {
  readonly [field: string]: Value | FieldMatch | undefined;
}

/** LogMatch — a coordinator line by its `event`, or an agent process's line by its `type`, and any other fields. */
export type LogMatch =
  | (FieldMatch & { readonly event: CoordinatorEvent; readonly connection?: { readonly type: BusEvent['type'] } })
  | (FieldMatch & { readonly type: AgentLine; readonly event?: AgentEvent['type'] });

export type LogFields = Readonly<Record<string, unknown>>;

/** LogEvent — one matching line: its fields and its index in the lines it was read from. */
export interface LogEvent {
  readonly index: number;
  readonly fields: LogFields;
}

/** parseLogLine — the fields of a JSON object line, or null for anything else. */
export function parseLogLine(line: string): LogFields | null {
  if (!line.startsWith('{')) return null;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as LogFields) : null;
  } catch {
    return null;
  }
}

/** matchesFields — whether `fields` has every field of `match` with an equal value (nested objects likewise). */
export function matchesFields(fields: LogFields, match: FieldMatch): boolean {
  return Object.entries(match).every(([key, want]) => {
    if (want === undefined) return true;
    const got = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (typeof want === 'object' && want !== null) return typeof got === 'object' && got !== null && matchesFields(got as LogFields, want);
    return got === want;
  });
}

/** logEvents — the lines of `lines` that match `match`, in order, with their indices. */
export function logEvents(lines: readonly string[], match: LogMatch): LogEvent[] {
  const events: LogEvent[] = [];
  lines.forEach((line, index) => {
    const fields = parseLogLine(line);
    if (fields !== null && matchesFields(fields, match)) events.push({ index, fields });
  });
  return events;
}

/** hasEvent — whether `child` printed a line matching `match` so far. */
export function hasEvent(child: Child, match: LogMatch): boolean {
  return child.lines.some((line) => {
    const fields = parseLogLine(line);
    return fields !== null && matchesFields(fields, match);
  });
}

/**
 * waitForEvent — the fields of the first line of `child` (printed already or
 * later) that matches `match`; rejects after `timeoutMs` or when the child
 * exits first, with its stderr.
 */
export async function waitForEvent(child: Child, match: LogMatch, timeoutMs: number): Promise<LogFields> {
  const line = await child.waitForLine((text) => {
    const fields = parseLogLine(text);
    return fields !== null && matchesFields(fields, match);
  }, timeoutMs);
  return parseLogLine(line) as LogFields;
}
