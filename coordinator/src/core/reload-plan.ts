/**
 * Reload plans: what a configuration reload does, decided as plain data.
 * The adapter (adapters/operations.ts) reads the file, hands the result
 * here, applies what the plan says and tells what the report says; it
 * decides nothing of its own.
 *
 * Rules:
 * - A file that did not load or validate (a CoordinatorError, whose
 *   message names the file) is refused, and so is one the running core
 *   cannot take without a restart (`reconfigureProblem`, named after the
 *   file's path): nothing changes on a refusal.
 * - Any other failure while loading is not a refusal but a fault: the plan
 *   says to throw it, and the caller logs `reload-failed`.
 * - Otherwise the file is applied whole; the outcome is `applied` when it
 *   adds, removes or changes a configured pool or changes anything else
 *   (configDiff), `unchanged` when it does not (it is applied all the same).
 * - A reload that ends is reported three ways from the same facts: its
 *   outcome (for the metric), one log line (`reloaded` at info,
 *   `reload-refused` at error) and the operator's reply, bounded as the
 *   protocol bounds it (NAMES_LIST_MAX names a list,
 *   MESSAGE_TEXT_LENGTH_MAX characters of message, 128 of the coordinator's
 *   name). The log line lists every name; only the reply is cut.
 */
import { MESSAGE_TEXT_LENGTH_MAX, NAMES_LIST_MAX, type ReloadOutcome } from '@tokenlease/shared';
import { CoordinatorError } from '../errors.js';
import type { CoordinatorConfig } from './config.js';
import type { LogLine } from './ownership-commands.js';
import type { ReconfigureSummary } from './pool-registry.js';
import { configDiff, type ConfigDiff } from './pool-reconfigure.js';

/** RELOAD_COORDINATOR_NAME_MAX — characters of the coordinator's name a reload reply carries. */
export const RELOAD_COORDINATOR_NAME_MAX = 128;

/** ReloadLoad — how reading the configuration file ended: the configuration, or what was thrown. */
export type ReloadLoad = { readonly ok: true; readonly config: CoordinatorConfig } | { readonly ok: false; readonly error: unknown };

/** Reconfigurable — what a plan reads of the running core: the configuration served and why another cannot replace it. */
export interface Reconfigurable {
  readonly config: CoordinatorConfig;
  reconfigureProblem(config: CoordinatorConfig): string | null;
}

/** ReloadApply — serve `config` from now on; `outcome` and `message` say what it changes (`diff`). */
export interface ReloadApply {
  readonly kind: 'apply';
  readonly config: CoordinatorConfig;
  readonly diff: ConfigDiff;
  readonly outcome: 'applied' | 'unchanged';
  readonly message: string;
}

/** ReloadPlan — refuse (nothing changes, `reason` says why), throw `error` (a fault, not a refusal), or apply. */
export type ReloadPlan =
  { readonly kind: 'refuse'; readonly reason: string } | { readonly kind: 'fail'; readonly error: unknown } | ReloadApply;

/** ReloadReport — what a reload that ended tells: its outcome (the metric), its log line and the operator's reply. */
export interface ReloadReport {
  readonly outcome: ReloadOutcome['outcome'];
  readonly log: LogLine;
  readonly reply: ReloadOutcome;
}

/** ReloadWho — what set a reload off (`SIGHUP`, `operator`) and the coordinator that reports it. */
export interface ReloadWho {
  readonly trigger: string;
  readonly coordinator: string;
}

/** planReload — what to do with `load`, the file at `configPath` as read, given the core serving `current`. */
export function planReload(current: Reconfigurable, load: ReloadLoad, configPath: string): ReloadPlan {
  if (!load.ok) {
    return load.error instanceof CoordinatorError ? { kind: 'refuse', reason: load.error.message } : { kind: 'fail', error: load.error };
  }
  const problem = current.reconfigureProblem(load.config);
  if (problem !== null) return { kind: 'refuse', reason: `${configPath}: ${problem}` };
  const diff = configDiff(current.config, load.config);
  const any = diff.added.length + diff.removed.length + diff.changed.length > 0 || diff.otherChanged;
  return {
    kind: 'apply',
    config: load.config,
    diff,
    outcome: any ? 'applied' : 'unchanged',
    message: any ? `applied ${configPath}` : `${configPath} changes nothing`,
  };
}

/** reloadRefused — the report of a reload refused for `reason`. */
export function reloadRefused(reason: string, who: ReloadWho): ReloadReport {
  return {
    outcome: 'refused',
    log: {
      level: 'error',
      fields: { event: 'reload-refused', trigger: who.trigger, reason },
      message: 'configuration reload refused: nothing changed',
    },
    reply: reply('refused', reason, { added: [], removed: [], changed: [] }, who),
  };
}

/** reloadApplied — the report of `plan` once applied: `summary` of the pools held after it, applied at `atUs`. */
export function reloadApplied(
  plan: ReloadApply,
  applied: { readonly summary: ReconfigureSummary; readonly atUs: number },
  who: ReloadWho,
): ReloadReport {
  const { outcome, diff } = plan;
  const { added, removed, changed } = diff;
  return {
    outcome,
    log: {
      level: 'info',
      fields: {
        event: 'reloaded',
        trigger: who.trigger,
        outcome,
        added,
        removed,
        changed,
        held: applied.summary,
        tUs: Math.round(applied.atUs),
      },
      message: 'configuration reloaded',
    },
    reply: reply(outcome, plan.message, diff, who),
  };
}

function reply(
  outcome: ReloadOutcome['outcome'],
  message: string,
  names: Pick<ReloadOutcome, 'added' | 'removed' | 'changed'>,
  who: ReloadWho,
): ReloadOutcome {
  const cut = (list: readonly string[]): string[] => list.slice(0, NAMES_LIST_MAX);
  return {
    v: 2,
    kind: 'reload',
    coordinator: who.coordinator.slice(0, RELOAD_COORDINATOR_NAME_MAX),
    outcome,
    message: message.slice(0, MESSAGE_TEXT_LENGTH_MAX),
    added: cut(names.added),
    removed: cut(names.removed),
    changed: cut(names.changed),
  };
}
