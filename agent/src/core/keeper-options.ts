/**
 * Options of the lease keeper, with their defaults. Durations in ms.
 */
import { HOLD_MS_DEFAULT, ID_LENGTH_MAX, WIRE_TOKENS_MAX } from '@tokenlease/shared';
import { AgentError } from '../errors.js';
import { FALLBACK_BURST_TOKENS_MAX, FALLBACK_PER_SECOND_MAX } from './lease-slot.js';

/** Both drift margins are fractions in [0, DRIFT_MARGIN_MAX). */
const DRIFT_MARGIN_MAX = 0.5;
/** An agent class: 1 to `ID_LENGTH_MAX` printable ASCII characters, no spaces. */
const AGENT_CLASS_PATTERN = new RegExp(`^[\\x21-\\x7e]{1,${ID_LENGTH_MAX}}$`);

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
   * implausible (grant-check.ts). Default: the coordinator's own maximum.
   */
  readonly leaseTtlMsMax: number;
}

export const DEFAULT_KEEPER_OPTIONS: KeeperOptions = {
  holdMs: HOLD_MS_DEFAULT,
  replyTimeoutMs: 500,
  driftMargin: 0.05,
  refreshMs: 1000,
  idleReturnMs: 3000,
  initialTokens: 1,
  backoffMsMin: 25,
  backoffMsMax: 2000,
  assumedTtlMs: 2000,
  agentClass: null,
  fallbackPerSecond: 0,
  fallbackBurstTokens: 0,
  reportMs: 0,
  rateDriftMargin: 0.001,
  leaseTtlMsMax: 3_600_000,
};

function check(ok: boolean, field: string, rule: string, value: unknown): void {
  if (!ok) throw new AgentError('invalid-argument', `option ${field} ${rule}, got ${JSON.stringify(value)}`);
}

/** keeperOptions — defaults overlaid with `given`; throws AgentError('invalid-argument') for a bad value. */
export function keeperOptions(given: Partial<KeeperOptions> = {}): KeeperOptions {
  const o = { ...DEFAULT_KEEPER_OPTIONS, ...given };
  const ms = (field: Exclude<keyof KeeperOptions, 'agentClass' | 'driftMargin' | 'rateDriftMargin'>, min: number, max: number): void => {
    const v = o[field];
    check(Number.isSafeInteger(v) && v >= min && v <= max, field, `must be an integer in [${min}, ${max}]`, v);
  };
  ms('holdMs', 0, 60_000);
  ms('replyTimeoutMs', 1, 60_000);
  ms('refreshMs', 1, 3_600_000);
  ms('idleReturnMs', 1, 86_400_000);
  ms('initialTokens', 1, WIRE_TOKENS_MAX);
  ms('backoffMsMin', 1, 60_000);
  ms('backoffMsMax', o.backoffMsMin, 600_000);
  ms('assumedTtlMs', 1, 3_600_000);
  ms('fallbackPerSecond', 0, FALLBACK_PER_SECOND_MAX);
  ms('fallbackBurstTokens', 0, FALLBACK_BURST_TOKENS_MAX);
  ms('reportMs', 0, 3_600_000);
  ms('leaseTtlMsMax', 1, 86_400_000);
  const margin = `must be in [0, ${DRIFT_MARGIN_MAX})`;
  check(o.driftMargin >= 0 && o.driftMargin < DRIFT_MARGIN_MAX, 'driftMargin', margin, o.driftMargin);
  check(o.rateDriftMargin >= 0 && o.rateDriftMargin < DRIFT_MARGIN_MAX, 'rateDriftMargin', margin, o.rateDriftMargin);
  const agentClassRule = `must be 1 to ${ID_LENGTH_MAX} printable ASCII characters without spaces, or null`;
  check(o.agentClass === null || AGENT_CLASS_PATTERN.test(o.agentClass), 'agentClass', agentClassRule, o.agentClass);
  return o;
}
