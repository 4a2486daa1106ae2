/**
 * Relay configuration: which pools a relay serves, on which subject prefix,
 * and where the root coordinator listens (docs/design.md, "Relays").
 *
 * Top-level fields: `upstreamPrefix` (the root's subject prefix, required),
 * `subjectPrefix` (the relay's own, required and different), `pools` (the
 * relayed pools, with the same fields as a coordinator's), and `uplink`:
 * `{ driftMargin, refreshMs, holdMs, replyTimeoutMs, agentClass, gapMs
 * [20], identity [none] }`: the first five are the lease client's settings,
 * with its defaults and rules, as an agent's (@tokenlease/shared,
 * lease-client-settings.ts: 0.1, 1000, 200, 500, none); `agentClass`
 * is the class the relay asks the root under (listed in the root pool's
 * `relayClasses`, the root weighs the relay as the fleet behind it);
 * `identity` (1 to 48 of [A-Za-z0-9_-]) is the identity token its requests
 * to the root go under, and the first part of its upstream agent ids, for
 * a root with `bindIdentity` and the NATS user pinned to that token. A relayed pool's `capacity` and `refill` must be
 * the root's: every grant of the root is checked against them and refused
 * (nothing served from it) when they differ; a window pool's `window` is
 * the root's (its limit and window are the capacity and refill the root's
 * grants name). Relayed pools and templates lease chunks, without an
 * allowance: no rate leases.
 */
import { assertSubjectPrefix, LEASE_CLIENT_DEFAULTS, leaseClientSettingProblem, type LeaseClientSettings } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import { parseCoordinatorConfig, type CoordinatorConfig } from './config.js';

/** UplinkSettings — how a relay leases from the root: the lease client's settings, the gap between requests, its class and identity. */
export interface UplinkSettings {
  readonly driftMargin: number;
  readonly refreshMs: number;
  readonly holdMs: number;
  readonly replyTimeoutMs: number;
  readonly gapMs: number;
  /** The class the relay asks the root under (listed in the root pool's `relayClasses`, it weighs as the relay's fleet); null: none. */
  readonly agentClass: string | null;
  /** The identity token of its requests to the root, and the first part of its upstream agent ids; null: none (anonymous). */
  readonly identity: string | null;
}

/** RelayConfig — a validated relay configuration (parseRelayConfig): the root's prefix, the pools it relays, and its uplink. */
export interface RelayConfig {
  readonly upstreamPrefix: string;
  /** The downstream side: served exactly as a coordinator serves it. */
  readonly downstream: CoordinatorConfig;
  readonly uplink: UplinkSettings;
}

const RELAY_KEYS = new Set(['upstreamPrefix', 'uplink']);
const UPLINK_KEYS = new Set(['driftMargin', 'refreshMs', 'holdMs', 'replyTimeoutMs', 'gapMs', 'agentClass', 'identity']);
/** The shortest gap between two requests of an uplink that were not due, ms, unless `uplink.gapMs` says. */
const GAP_MS_DEFAULT = 20;
/** An upstream identity: short enough that `<identity>.<relay id>.<12 hex>` stays a protocol id. */
const IDENTITY_FORM = /^[A-Za-z0-9_-]{1,48}$/;

/** parseRelayConfig — validates a parsed relay document; throws `CoordinatorError('config-invalid')`. */
export function parseRelayConfig(source: string, doc: unknown): RelayConfig {
  const fail = (field: string, problem: string): never => {
    throw new CoordinatorError('config-invalid', `${source}: field ${JSON.stringify(field)} ${problem}`, { field });
  };
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return fail('(document)', 'must be a mapping');
  const fields = new Map(Object.entries(doc as Record<string, unknown>));
  const upstreamPrefix = fields.get('upstreamPrefix');
  if (typeof upstreamPrefix !== 'string') return fail('upstreamPrefix', "must be the root coordinator's subject prefix");
  try {
    assertSubjectPrefix(upstreamPrefix);
  } catch {
    fail('upstreamPrefix', 'must be dot-joined subject tokens without "*" or ">"');
  }
  if (typeof fields.get('subjectPrefix') !== 'string') fail('subjectPrefix', "must be given: the relay's own prefix");
  const rest = Object.fromEntries([...fields].filter(([key]) => !RELAY_KEYS.has(key)));
  const downstream = parseCoordinatorConfig(source, rest);
  if (downstream.subjectPrefix === upstreamPrefix) fail('subjectPrefix', 'must differ from upstreamPrefix');
  if (downstream.shadow) fail('shadow', 'is not relayed');
  const served = [
    ...downstream.pools.map((pool) => ({ pool, field: `pools.${pool.name}` })),
    ...downstream.templates.map((t) => ({ pool: t.pool, field: `templates.${t.pool.name}` })),
  ];
  for (const { pool, field } of served) {
    const bad = pool.leaseMode !== 'chunk' || pool.allowance !== 0 || pool.shadow;
    if (bad) fail(field, 'must be a chunk-mode bucket or window pool without an allowance or shadow mode to be relayed');
  }
  return { upstreamPrefix, downstream, uplink: readUplink(fields.get('uplink') ?? {}, fail) };
}

function readUplink(doc: unknown, fail: (field: string, problem: string) => never): UplinkSettings {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return fail('uplink', 'must be a mapping');
  const fields = new Map(Object.entries(doc as Record<string, unknown>));
  for (const key of fields.keys()) if (!UPLINK_KEYS.has(key)) fail(`uplink.${key.slice(0, 64)}`, 'is not an uplink field');
  const client = <K extends 'driftMargin' | 'refreshMs' | 'holdMs' | 'replyTimeoutMs' | 'agentClass'>(key: K): LeaseClientSettings[K] => {
    const value = fields.get(key) ?? LEASE_CLIENT_DEFAULTS[key];
    const rule = leaseClientSettingProblem(key, value);
    return rule === null ? (value as LeaseClientSettings[K]) : fail(`uplink.${key}`, `${rule}, got ${JSON.stringify(value)}`);
  };
  const gapMs = fields.get('gapMs') ?? GAP_MS_DEFAULT;
  if (!(typeof gapMs === 'number' && Number.isSafeInteger(gapMs) && gapMs >= 1 && gapMs < 60_000)) {
    fail('uplink.gapMs', `must be an integer in [1, 60000), got ${JSON.stringify(gapMs)}`);
  }
  const identity = fields.get('identity') ?? null;
  if (identity !== null && (typeof identity !== 'string' || !IDENTITY_FORM.test(identity))) {
    fail('uplink.identity', 'must be 1 to 48 characters of [A-Za-z0-9_-]');
  }
  return {
    agentClass: client('agentClass'),
    identity,
    driftMargin: client('driftMargin'),
    refreshMs: client('refreshMs'),
    holdMs: client('holdMs'),
    replyTimeoutMs: client('replyTimeoutMs'),
    gapMs,
  };
}
