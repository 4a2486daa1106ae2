/**
 * What the ownership driver (ownership-driver.ts) tells its adapter to do.
 * The adapter carries each command out in order and feeds the results back:
 * a store call's answer as `stored(ticket, …)`, the end of an unsubscribe,
 * a bus flush or a bus probe as `done(ticket, …)`, each message of a subscription as
 * `message(key, …)`, and a timer as `tick` at the instant of a `wake`.
 */
import type { PoolFault } from './coordinator-core.js';
import type { Delivery } from './chunk-grant.js';
import type { StoreCall } from './ownership-store.js';
import type { WriteOutcome } from './write-lane.js';

/** ReplyLabel — what replies are logged under: their pool, or the subject of the request they answer. */
export type ReplyLabel = { readonly pool: string } | { readonly subject: string };

/** LogLine — a line to log: its level, its structured fields (never a secret) and its message. */
export interface LogLine {
  readonly level: 'info' | 'warn' | 'error';
  readonly fields: Readonly<Record<string, unknown>>;
  readonly message: string;
}

export type OwnershipCommand<R> =
  /** store — perform `call`; then `stored(ticket, result)`. */
  | { readonly kind: 'store'; readonly ticket: number; readonly call: StoreCall }
  /** subscribe — serve `subject` in `queueGroup`; each request as `message(key, …)`. */
  | { readonly kind: 'subscribe'; readonly key: string; readonly subject: string; readonly queueGroup: string }
  /**
   * unsubscribe — stop the subscription `key`, drained (what the server
   * sent first is taken in) or, with `drain` false, at once (the server does
   * not answer); then `done(ticket)`.
   */
  | { readonly kind: 'unsubscribe'; readonly key: string; readonly ticket: number; readonly drain: boolean }
  /** flush-bus — wait until the bus server has every subscription made; then `done(ticket)`. */
  | { readonly kind: 'flush-bus'; readonly ticket: number }
  /** probe-bus — ask the bus server for an answer (a flush); then `done(ticket, ok)`, ok false when it failed. A server that never answers leaves it unanswered. */
  | { readonly kind: 'probe-bus'; readonly ticket: number }
  /**
   * send — these replies, produced at `producedUs` (a write may have held
   * them since), logged under `label`; `epoch`: the ownership whose write
   * lane released them (null: none did).
   */
  | {
      readonly kind: 'send';
      readonly deliveries: readonly Delivery<R>[];
      readonly producedUs: number;
      readonly epoch: number | null;
      readonly label: ReplyLabel;
    }
  /** internal-error — handling a request to `subject` threw `error`: log it and answer `to` with an internal error. */
  | { readonly kind: 'internal-error'; readonly to: R; readonly subject: string; readonly error: unknown }
  /** faults — pools the core dropped because they failed, to log. */
  | { readonly kind: 'faults'; readonly faults: readonly PoolFault[] }
  /** handled — a request of `op` was handled (for the metrics: its time is the adapter's to measure). */
  | { readonly kind: 'handled'; readonly op: string }
  /** wrote — a write started at `startedUs` ended as `outcome` (for the metrics). */
  | { readonly kind: 'wrote'; readonly startedUs: number; readonly outcome: WriteOutcome }
  | { readonly kind: 'log'; readonly line: LogLine }
  /** wake — call `tick` at `atUs` (or sooner). */
  | { readonly kind: 'wake'; readonly atUs: number }
  /** stopped — `stop` is complete: every pool handed over, the member gone. */
  | { readonly kind: 'stopped' };
