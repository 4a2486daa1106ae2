/**
 * Options of the lease keeper, with their defaults. Durations in ms. The
 * settings every lease client shares (hold, reply timeout, drift margin,
 * refresh, longest TTL, class) take the lease client's defaults and rules
 * (@tokenlease/shared, lease-client-settings.ts), as a relay's uplink does.
 */
import {
  DRIFT_MARGIN_MAX,
  expectedLimitsFormProblem,
  makeRate,
  tokenScale,
  type ExpectedLimits,
  LEASE_CLIENT_DEFAULTS,
  leaseClientSettingProblem,
  WIRE_TOKENS_MAX,
  type LeaseClientSettings,
} from '@tokenlease/shared';
import { AgentError } from '../errors.js';
import { FALLBACK_BURST_TOKENS_MAX, FALLBACK_PER_SECOND_MAX } from './lease-slot.js';

/** KeeperOptions — how an agent's lease keeper asks for, holds and returns its leases; durations in ms (AgentOptions `keeper`). */
export interface KeeperOptions {
  /** How long the coordinator may hold a request for a worthwhile grant. */
  readonly holdMs: number;
  /** Time allowed for a reply on top of the hold before a retry. */
  readonly replyTimeoutMs: number;
  /** Fraction of the TTL cut from the agent-side expiry for clock drift. */
  readonly driftMargin: number;
  /** Horizon of demand one request asks for. */
  readonly refreshMs: number;
  /** Return the lease after this long without an admission. */
  readonly idleReturnMs: number;
  /** Tokens to hold at least while the lease is in use, and to ask for before any demand is seen. */
  readonly initialTokens: number;
  readonly backoffMsMin: number;
  readonly backoffMsMax: number;
  /** Lease TTL assumed before the first grant tells the real one. */
  readonly assumedTtlMs: number;
  /** This agent's class, weighted by each pool's `classWeights`; null: none. */
  readonly agentClass: string | null;
  /**
   * Local fallback rate, tokens per second, used only while the coordinator
   * cannot grant (unreachable, no owner, store down) and the lease cannot
   * cover a cost. 0 (default): fail closed. What it admits is outside the
   * fleet's global bound: each agent may admit this much on its own.
   */
  readonly fallbackPerSecond: number;
  /** Burst of the fallback bucket, tokens; 0: one second of `fallbackPerSecond` (at least 1). */
  readonly fallbackBurstTokens: number;
  /**
   * Usage reports, ms: while a chunk lease is held and nothing is in
   * flight, publish what is left of it this often (when it fell since), so
   * the coordinator can lower a stale bound between renewals. 0 (default): none.
   */
  readonly reportMs: number;
  /**
   * Fraction a rate lease's period is stretched by: an agent clock running
   * up to this much fast still accrues no more than the coordinator counts.
   * Far above real monotonic-clock drift (parts per million); the expiry
   * margin `driftMargin` is separate.
   */
  readonly rateDriftMargin: number;
  /**
   * The longest lease TTL a grant may carry; a longer one is refused as
   * implausible (the lease client's check). Default: the coordinator's own maximum.
   */
  readonly leaseTtlMsMax: number;
  /**
   * What this agent expects of the pool, from its own configuration: B
   * (`capacityTokens`), the largest lease, the refill, and A. A grant
   * stating more, or more than such a pool could have granted by then
   * (grant-budget.ts), is refused as implausible and nothing of it is
   * spendable: a responder that is not the pool's coordinator cannot make
   * the agent admit beyond `B + A + r·T` (plus the refill of one
   * round-trip), whatever limits it states. Set it no lower than the
   * pool's real limits, or honest grants are refused. null (default): only
   * the grants' own limits are checked.
   */
  readonly expectedLimits: ExpectedLimits | null;
}

/** DEFAULT_KEEPER_OPTIONS — every KeeperOptions default. */
export const DEFAULT_KEEPER_OPTIONS: KeeperOptions = {
  holdMs: LEASE_CLIENT_DEFAULTS.holdMs,
  replyTimeoutMs: LEASE_CLIENT_DEFAULTS.replyTimeoutMs,
  driftMargin: LEASE_CLIENT_DEFAULTS.driftMargin,
  refreshMs: LEASE_CLIENT_DEFAULTS.refreshMs,
  idleReturnMs: 3000,
  initialTokens: 1,
  backoffMsMin: 25,
  backoffMsMax: 2000,
  assumedTtlMs: 2000,
  agentClass: LEASE_CLIENT_DEFAULTS.agentClass,
  fallbackPerSecond: 0,
  fallbackBurstTokens: 0,
  reportMs: 0,
  rateDriftMargin: 0.001,
  leaseTtlMsMax: LEASE_CLIENT_DEFAULTS.leaseTtlMsMax,
  expectedLimits: null,
};

/** The options every lease client shares, checked by the lease client's rules. */
const CLIENT_SETTINGS: readonly (keyof LeaseClientSettings)[] = [
  'holdMs',
  'replyTimeoutMs',
  'driftMargin',
  'refreshMs',
  'leaseTtlMsMax',
  'agentClass',
];

function check(ok: boolean, field: string, rule: string, value: unknown): void {
  if (!ok) throw new AgentError('invalid-argument', `option ${field} ${rule}, got ${JSON.stringify(value)}`);
}

/** keeperOptions — defaults overlaid with `given`; throws AgentError('invalid-argument') for a bad value. */
export function keeperOptions(given: Partial<KeeperOptions> = {}): KeeperOptions {
  const o = { ...DEFAULT_KEEPER_OPTIONS, ...given };
  for (const field of CLIENT_SETTINGS) {
    const rule = leaseClientSettingProblem(field, o[field]);
    check(rule === null, field, rule ?? '', o[field]);
  }
  const ms = (
    field: Exclude<keyof KeeperOptions, keyof LeaseClientSettings | 'rateDriftMargin' | 'expectedLimits'>,
    min: number,
    max: number,
  ): void => {
    const v = o[field];
    check(Number.isSafeInteger(v) && v >= min && v <= max, field, `must be an integer in [${min}, ${max}]`, v);
  };
  ms('idleReturnMs', 1, 86_400_000);
  ms('initialTokens', 1, WIRE_TOKENS_MAX);
  ms('backoffMsMin', 1, 60_000);
  ms('backoffMsMax', o.backoffMsMin, 600_000);
  ms('assumedTtlMs', 1, 3_600_000);
  ms('fallbackPerSecond', 0, FALLBACK_PER_SECOND_MAX);
  ms('fallbackBurstTokens', 0, FALLBACK_BURST_TOKENS_MAX);
  ms('reportMs', 0, 3_600_000);
  const margin = `must be in [0, ${DRIFT_MARGIN_MAX})`;
  check(o.rateDriftMargin >= 0 && o.rateDriftMargin < DRIFT_MARGIN_MAX, 'rateDriftMargin', margin, o.rateDriftMargin);
  if (o.expectedLimits !== null) checkExpected(o.expectedLimits);
  return o;
}

/** checkExpected — throws AgentError('invalid-argument') unless `expected` is ExpectedLimits whose B + A fits its refill's units. */
function checkExpected(expected: unknown): void {
  const problem = expectedLimitsFormProblem(expected);
  if (problem !== null) throw new AgentError('invalid-argument', `option expectedLimits ${problem}`);
  const e = expected as ExpectedLimits;
  try {
    tokenScale(e.capacityTokens + (e.allowanceTokens ?? 0), makeRate(e.refillTokens, e.refillPeriodMs));
  } catch (error) {
    throw new AgentError('invalid-argument', `option expectedLimits: ${error instanceof Error ? error.message : String(error)}`);
  }
}
