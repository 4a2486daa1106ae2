/**
 * The lease client's settings, one set for every client (an agent's
 * keeper options, a relay's `uplink` settings): their defaults and the
 * rule each value must keep. Each client reads them from its own source
 * and reports a broken rule in its own error; the rules are these.
 *
 * Defaults, and why where an agent's and a relay's once differed:
 * - `driftMargin` 0.1 (an agent's was 0.05): the larger margin is the safe
 *   one, it covers more clock-rate error between client and coordinator.
 * - `replyTimeoutMs` 500 (a relay's was 1000): a retry repeats the
 *   sequence and first-send instant, so the promise is the same either
 *   way; the shorter one lets a client retry a lost renewal while its
 *   lease still lives (a relay gives a retry up after half the TTL: 1 s of
 *   the default 2 s, less than 200 + 1000 ms).
 */
import { DURATION_MS_MAX, HOLD_MS_DEFAULT, HOLD_MS_MAX } from '../protocol/limits.js';
import { ID_FORM, isProtocolId } from '../protocol/ids.js';

/** LeaseClientSettings — a lease client's settings (LEASE_CLIENT_DEFAULTS; leaseClientSettingProblem checks them). */
export interface LeaseClientSettings {
  /** How long a coordinator may hold a request for a worthwhile grant, ms. */
  readonly holdMs: number;
  /** Time allowed for a reply on top of the hold before a retry, ms. */
  readonly replyTimeoutMs: number;
  /** Fraction of the TTL cut from the client-side expiry for clock drift, in [0, DRIFT_MARGIN_MAX). */
  readonly driftMargin: number;
  /** Horizon of demand one request asks for, ms. */
  readonly refreshMs: number;
  /** The longest lease TTL a grant may carry, ms; a longer one is refused as implausible (lease-client-grant.ts). */
  readonly leaseTtlMsMax: number;
  /** The class to ask under; null: none. */
  readonly agentClass: string | null;
}

/** DRIFT_MARGIN_MAX — drift margins are fractions below this. */
export const DRIFT_MARGIN_MAX = 0.5;

/** LEASE_CLIENT_DEFAULTS — every client's defaults (leaseTtlMsMax: a coordinator's own longest TTL). */
export const LEASE_CLIENT_DEFAULTS: LeaseClientSettings = {
  holdMs: HOLD_MS_DEFAULT,
  replyTimeoutMs: 500,
  driftMargin: 0.1,
  refreshMs: 1000,
  leaseTtlMsMax: 3_600_000,
  agentClass: null,
};

/** LEASE_CLIENT_MS_BOUNDS — the whole-ms settings and their inclusive bounds. */
export const LEASE_CLIENT_MS_BOUNDS: ReadonlyMap<keyof LeaseClientSettings, readonly [number, number]> = new Map([
  ['holdMs', [0, HOLD_MS_MAX]],
  ['replyTimeoutMs', [1, 60_000]],
  ['refreshMs', [1, 3_600_000]],
  ['leaseTtlMsMax', [1, DURATION_MS_MAX]],
] as const);

/**
 * leaseClientSettingProblem — the rule `value` breaks as the setting
 * `key`, in words ("must be …"), or null when it keeps it.
 */
export function leaseClientSettingProblem(key: keyof LeaseClientSettings, value: unknown): string | null {
  const bounds = LEASE_CLIENT_MS_BOUNDS.get(key);
  if (bounds !== undefined) {
    const [min, max] = bounds;
    const ok = typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
    return ok ? null : `must be an integer in [${min}, ${max}]`;
  }
  if (key === 'driftMargin') {
    const ok = typeof value === 'number' && value >= 0 && value < DRIFT_MARGIN_MAX;
    return ok ? null : `must be in [0, ${DRIFT_MARGIN_MAX})`;
  }
  return value === null || isProtocolId(value) ? null : `must be ${ID_FORM}, or null`;
}
