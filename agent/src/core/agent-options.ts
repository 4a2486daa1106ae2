/**
 * The schema of `Agent.connect`'s own options (who the agent is, where it
 * asks, how long an idle limiter is kept): each option alone, its form,
 * default and meaning, said once. Agent.connect checks its options with it
 * before it opens anything; the keeper options (`keeper`) have their own
 * schema (keeper-options.ts), the NATS settings theirs (@tokenlease/shared
 * nats-settings.ts), and docs/reference/agent-options.md is generated from
 * all three.
 *
 * Subject prefixes and the identity are checked by the protocol's own
 * rules (shared subjects.ts), whose TokenleaseError is kept as the
 * problem's cause: a caller sees the same error as before.
 */
import { ANONYMOUS_IDENTITY, assertIdentity, assertSubjectPrefix, DEFAULT_SUBJECT_PREFIX, TokenleaseError } from '@tokenlease/shared';
import { referenceMeta } from '@tokenlease/shared/reference';
import { z } from 'zod';

const shown = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** LIMITER_IDLE_MS_DEFAULT — how long an idle limiter is kept unless `limiterIdleMs` says, ms. */
export const LIMITER_IDLE_MS_DEFAULT = 60_000;

function described<T extends z.ZodType>(schema: T, description: string, fallback: string, form?: string): T {
  return schema.meta(referenceMeta({ description, default: fallback, ...(form === undefined ? {} : { form }) }));
}

/** byRule — a value checked by a rule that throws TokenleaseError; that error becomes the problem, and its cause. */
function byRule(check: (value: string) => void) {
  return z.string({ error: (issue) => `must be a string, got ${shown(issue.input)}` }).superRefine((value, ctx) => {
    try {
      check(value);
    } catch (error) {
      if (!(error instanceof TokenleaseError)) throw error;
      ctx.addIssue({ code: 'custom', message: error.message, params: { cause: error } });
    }
  });
}

const fn = (what: string) =>
  z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', { error: `must be a function ${what}` });

/** AGENT_OPTIONS — Agent.connect's own options; the NATS connection's (natsUrl, nats, bus, …) are left to their own checks. */
export const AGENT_OPTIONS = z.object({
  agentId: described(
    z.string({ error: (issue) => `must be a string, got ${shown(issue.input)}` }),
    'Unique per agent instance; with an identity, prefix it with `<identity>.` so that a coordinator binding identities accepts it.',
    '`<host>-<pid>-<random>`, after `<identity>.` when an identity is given',
    'string',
  ).optional(),
  identity: described(
    byRule(assertIdentity),
    'The identity token the agent sends under (`<prefix>.v2.<op>.<pool>.<identity>`): its NATS user’s, where permissions pin each user to its own token.',
    ANONYMOUS_IDENTITY,
    'identity token (a pool name’s characters)',
  ).optional(),
  subjectPrefix: described(
    byRule(assertSubjectPrefix),
    'The coordinators’ subject prefix.',
    DEFAULT_SUBJECT_PREFIX,
    'subject tokens joined by `.`',
  ).optional(),
  failoverPrefixes: described(
    z.array(byRule(assertSubjectPrefix), { error: 'must be a list of subject prefixes' }),
    'Prefixes of other coordinators serving the same pools (relays, the root), tried in order after `subjectPrefix` when nobody answers there.',
    '[]',
    'list of subject prefixes',
  ).optional(),
  keeper: described(
    z.custom<object>((value) => typeof value === 'object' && value !== null, { error: 'must be an object of keeper options' }),
    'The lease keeper’s options: the table below.',
    '{}',
    'keeper options',
  ).optional(),
  grantPublicKeys: described(
    z.custom<readonly unknown[]>((value) => Array.isArray(value), { error: 'must be a list of Ed25519 public keys' }),
    'The Ed25519 public keys (PEM or KeyObject) of the coordinators whose grants the agent accepts; given any, an unsigned grant is refused.',
    'none: grants need no signature',
    'list of PEM strings or KeyObjects',
  ).optional(),
  onEvent: described(
    fn('of an event'),
    'Told every agent event: a failed request, a refusal, a lost or regained connection, a recording’s end.',
    'none',
    '`(event) => void`',
  ).optional(),
  clock: described(
    fn('returning µs'),
    'A monotonic clock in µs for expiry and the fast path; only durations are exchanged with the coordinator.',
    'the process’s monotonic clock, in µs',
    '`() => number`',
  ).optional(),
  limiterIdleMs: described(
    z
      .int({ error: (issue) => `must be a positive integer, got ${shown(issue.input)}` })
      .min(1, { error: (issue) => `must be a positive integer, got ${shown(issue.input)}` }),
    'A limiter idle this long (its lease already returned) is dropped from the agent, ms; it is made again on use.',
    String(LIMITER_IDLE_MS_DEFAULT),
  ).optional(),
  record: described(
    z.custom<object>((value) => typeof value === 'object' && value !== null, { error: 'must be an object of recording options' }),
    'Record the arrivals of chosen pools to a trace file from the start (docs/trace-format.md); `agent.record()` starts one later.',
    'none',
    '`{ path, pools?, sample?, maxBytes?, instance?, flushMs?, bufferArrivals? }`',
  ).optional(),
});

/** AgentOptionsProblem — the first problem in an agent's own options: its one line, and the protocol's error when a rule of it was broken. */
export interface AgentOptionsProblem {
  readonly message: string;
  readonly cause: TokenleaseError | null;
}

/** agentOptionsProblem — the first problem AGENT_OPTIONS finds in `options`, or null. */
export function agentOptionsProblem(options: unknown): AgentOptionsProblem | null {
  const result = AGENT_OPTIONS.safeParse(options);
  if (result.success) return null;
  const issue = result.error.issues[0];
  if (issue === undefined) return null;
  const cause = issue.code === 'custom' ? (issue.params as { cause?: unknown } | undefined)?.cause : undefined;
  return {
    message: `option ${String(issue.path[0] ?? 'options')} ${issue.message}`,
    cause: cause instanceof TokenleaseError ? cause : null,
  };
}
