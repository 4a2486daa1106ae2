/**
 * Options of the lease keeper, with their defaults. Durations in ms. The
 * settings every lease client shares (hold, reply timeout, drift margin,
 * refresh, longest TTL, class) take the lease client's defaults and rules
 * (@tokenlease/shared, lease-client-settings.ts), as a relay's uplink does.
 */
import {
  DRIFT_MARGIN_MAX,
  ID_LENGTH_MAX,
  expectedLimitsFormProblem,
  makeRate,
  tokenScale,
  type ExpectedLimits,
  LEASE_CLIENT_DEFAULTS,
  LEASE_CLIENT_MS_BOUNDS,
  leaseClientSettingProblem,
  WIRE_TOKENS_MAX,
  type LeaseClientSettings,
} from '@tokenlease/shared';
import { z } from 'zod';
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

const shown = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** whole — an integer option in [min, max], as its problem is worded: `must be an integer in [min, max], got v`. */
function whole(min: number, max: number, description: string, minName?: string) {
  const problem = (issue: { input?: unknown }): string => `must be an integer in [${minName ?? min}, ${max}], got ${shown(issue.input)}`;
  return z.int({ error: problem }).min(min, { error: problem }).max(max, { error: problem }).meta({ description });
}

/** client — an option every lease client shares, checked by the lease client's rule (shared lease-client-settings.ts). */
function client<K extends keyof LeaseClientSettings>(key: K, form: Record<string, unknown>, description: string) {
  return z
    .custom<LeaseClientSettings[K]>(() => true)
    .superRefine((value, ctx) => {
      const rule = leaseClientSettingProblem(key, value);
      if (rule !== null) ctx.addIssue({ code: 'custom', message: `${rule}, got ${shown(value)}` });
    })
    .meta({ ...form, description });
}

const msBounds = (key: keyof LeaseClientSettings): Record<string, unknown> => {
  const [minimum, maximum] = LEASE_CLIENT_MS_BOUNDS.get(key) ?? [0, Number.MAX_SAFE_INTEGER];
  return { type: 'integer', minimum, maximum };
};

/**
 * KEEPER_OPTIONS — the schema of the keeper options: each option alone, its
 * bounds and meaning (the reference docs/reference/agent-options.md is
 * generated from it). What depends on another option (`backoffMsMax` ≥
 * `backoffMsMin`, `expectedLimits` within its refill's units) is checked
 * after it, by keeperOptions.
 */
export const KEEPER_OPTIONS = z.strictObject(
  {
    holdMs: client('holdMs', msBounds('holdMs'), 'How long the coordinator may hold a request for a worthwhile grant, ms.'),
    replyTimeoutMs: client('replyTimeoutMs', msBounds('replyTimeoutMs'), 'Time allowed for a reply on top of the hold before a retry, ms.'),
    driftMargin: client(
      'driftMargin',
      { type: 'number', minimum: 0, exclusiveMaximum: DRIFT_MARGIN_MAX },
      'Fraction of the TTL cut from the agent-side expiry for clock drift.',
    ),
    refreshMs: client('refreshMs', msBounds('refreshMs'), 'Horizon of demand one request asks for, ms.'),
    leaseTtlMsMax: client(
      'leaseTtlMsMax',
      msBounds('leaseTtlMsMax'),
      'The longest lease TTL a grant may carry; a longer one is refused as implausible, ms.',
    ),
    agentClass: client(
      'agentClass',
      { type: ['string', 'null'], minLength: 1, maxLength: ID_LENGTH_MAX },
      "This agent's class, weighted by each pool's `classWeights`; null: none.",
    ),
    idleReturnMs: whole(1, 86_400_000, 'Return the lease after this long without an admission, ms.'),
    initialTokens: whole(
      1,
      WIRE_TOKENS_MAX,
      'Tokens to hold at least while the lease is in use, and to ask for before any demand is seen.',
    ),
    backoffMsMin: whole(1, 60_000, 'The shortest wait before asking again after a failed request, ms.'),
    backoffMsMax: whole(1, 600_000, 'The longest such wait, ms; at least `backoffMsMin`.', 'backoffMsMin'),
    assumedTtlMs: whole(1, 3_600_000, 'Lease TTL assumed before the first grant tells the real one, ms.'),
    fallbackPerSecond: whole(
      0,
      FALLBACK_PER_SECOND_MAX,
      'Local fallback rate, tokens per second, used only while the coordinator cannot grant; 0: fail closed. Outside the fleet’s global bound.',
    ),
    fallbackBurstTokens: whole(
      0,
      FALLBACK_BURST_TOKENS_MAX,
      'Burst of the fallback bucket, tokens; 0: one second of `fallbackPerSecond` (at least 1).',
    ),
    reportMs: whole(
      0,
      3_600_000,
      'While a chunk lease is held and nothing is in flight, report what is left of it this often, ms; 0: never.',
    ),
    rateDriftMargin: z
      .number({ error: (issue) => `must be in [0, ${DRIFT_MARGIN_MAX}), got ${shown(issue.input)}` })
      .min(0, { error: (issue) => `must be in [0, ${DRIFT_MARGIN_MAX}), got ${shown(issue.input)}` })
      .lt(DRIFT_MARGIN_MAX, { error: (issue) => `must be in [0, ${DRIFT_MARGIN_MAX}), got ${shown(issue.input)}` })
      .meta({
        description:
          'Fraction a rate lease’s period is stretched by, so that an agent clock this much fast accrues no more than the coordinator counts.',
      }),
    expectedLimits: z
      .custom<ExpectedLimits | null>(() => true)
      .meta({
        type: ['object', 'null'],
        description:
          'What this agent expects of the pool (B, the largest lease, the refill, A): a grant stating more, or more than such a pool could have granted by then, is refused as implausible; null: only the grants’ own limits are checked.',
      }),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? 'is not a keeper option' : 'must be an object of keeper options') },
);

/** keeperOptions — defaults overlaid with `given`; throws AgentError('invalid-argument') for a bad value. */
export function keeperOptions(given: Partial<KeeperOptions> = {}): KeeperOptions {
  const o = { ...DEFAULT_KEEPER_OPTIONS, ...given };
  const result = KEEPER_OPTIONS.safeParse(o);
  if (!result.success) {
    const issue = result.error.issues.find((i) => i.code === 'unrecognized_keys') ?? result.error.issues[0];
    const field = issue?.code === 'unrecognized_keys' ? (issue.keys[0] ?? '').slice(0, 64) : String(issue?.path[0] ?? 'keeper');
    throw new AgentError('invalid-argument', `option ${field} ${issue?.message ?? 'is invalid'}`);
  }
  if (o.backoffMsMax < o.backoffMsMin) {
    throw new AgentError(
      'invalid-argument',
      `option backoffMsMax must be an integer in [${o.backoffMsMin}, 600000], got ${o.backoffMsMax}`,
    );
  }
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
