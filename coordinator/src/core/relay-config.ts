/**
 * Relay configuration: which pools a relay serves, on which subject prefix,
 * and where the root coordinator listens (docs/design.md, "Relays").
 *
 * The fields (config-schema.ts, RELAY_FILE; docs/reference/relay-file.md):
 * a coordinator's document whose pools are relayed, with `upstreamPrefix`
 * (the root's subject prefix), its own `subjectPrefix` (required and
 * different) and `uplink`, the lease client's settings with the agent's
 * defaults and rules (@tokenlease/shared, lease-client-settings.ts). A
 * relayed pool's `capacity` and `refill` must be the root's: every grant
 * of the root is checked against them and refused (nothing served from
 * it) when they differ; a window pool's `window` is the root's (its limit
 * and window are the capacity and refill the root's grants name). Relayed
 * pools and templates lease chunks, without an allowance or shadow mode.
 */
import { LEASE_CLIENT_DEFAULTS } from '@tokenlease/shared';
import { GAP_MS_DEFAULT, RELAY_FILE, type RelayFile } from './config-schema.js';
import { checkSchema, parseCoordinatorConfig, Where, type CoordinatorConfig } from './config.js';

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

/**
 * parseRelayConfig — validates a parsed relay document; throws
 * `CoordinatorError('config-invalid')`. Each field alone is checked by the
 * schema (config-schema.ts, RELAY_FILE); what is left here is what a relay
 * needs of its pools and prefixes together.
 */
export function parseRelayConfig(source: string, doc: unknown): RelayConfig {
  checkSchema(source, RELAY_FILE, doc);
  const relay = doc as RelayFile;
  const where = new Where(source);
  const rest = Object.fromEntries(Object.entries(relay).filter(([key]) => !RELAY_KEYS.has(key)));
  const downstream = parseCoordinatorConfig(source, rest);
  if (downstream.subjectPrefix === relay.upstreamPrefix) where.fail('subjectPrefix', 'must differ from upstreamPrefix');
  if (downstream.shadow) where.fail('shadow', 'is not relayed');
  const served = [
    ...downstream.pools.map((pool) => ({ pool, field: `pools.${pool.name}` })),
    ...downstream.templates.map((t) => ({ pool: t.pool, field: `templates.${t.pool.name}` })),
  ];
  for (const { pool, field } of served) {
    // A relay re-leases tokens it leased: the slots its agents hold would be invisible to the root (docs/design.md).
    if (pool.concurrency !== null) where.fail(field, 'is a concurrency pool: a relay does not serve slots, only tokens');
    const bad = pool.leaseMode !== 'chunk' || pool.allowance !== 0 || pool.shadow;
    if (bad) where.fail(field, 'must be a chunk-mode bucket or window pool without an allowance or shadow mode to be relayed');
  }
  const uplink = relay.uplink ?? {};
  return {
    upstreamPrefix: relay.upstreamPrefix,
    downstream,
    uplink: {
      agentClass: uplink.agentClass ?? LEASE_CLIENT_DEFAULTS.agentClass,
      identity: uplink.identity ?? null,
      driftMargin: uplink.driftMargin ?? LEASE_CLIENT_DEFAULTS.driftMargin,
      refreshMs: uplink.refreshMs ?? LEASE_CLIENT_DEFAULTS.refreshMs,
      holdMs: uplink.holdMs ?? LEASE_CLIENT_DEFAULTS.holdMs,
      replyTimeoutMs: uplink.replyTimeoutMs ?? LEASE_CLIENT_DEFAULTS.replyTimeoutMs,
      gapMs: uplink.gapMs ?? GAP_MS_DEFAULT,
    },
  };
}
