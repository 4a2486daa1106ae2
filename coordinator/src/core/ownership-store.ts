/**
 * What the ownership driver asks of the shared store (Redis in production,
 * a model in the simulator), and what the store answers. The driver never
 * waits: it hands out a `StoreCall` with a ticket and is told the answer,
 * or the failure, later (`OwnershipDriver.stored`).
 */
import type { PoolChanges, StoredPool } from './pool-state.js';

/**
 * Claim — the outcome of a claim: taken with an epoch and the stored state
 * (damaged state is returned as such, for the pool to start afresh), or
 * held by another member. `clearedOwner`: a damaged owner record (one that
 * would never expire) was deleted to take it.
 */
export type Claim =
  | { readonly taken: true; readonly epoch: number; readonly state: StoredPool; readonly clearedOwner: boolean }
  | { readonly taken: false; readonly heldForMs: number };

/** Members — the live members, and how many impossible heartbeats were dropped. */
export interface Members {
  readonly members: string[];
  readonly droppedImpossible: number;
}

/** StoreCall — one store operation of this member (see StateStore for each one's rules). */
export type StoreCall =
  | { readonly op: 'heartbeat'; readonly ttlMs: number }
  | { readonly op: 'owner-of'; readonly unit: string }
  | { readonly op: 'claim'; readonly unit: string; readonly ttlMs: number }
  | { readonly op: 'renew'; readonly unit: string; readonly epoch: number; readonly ttlMs: number }
  | { readonly op: 'write'; readonly unit: string; readonly epoch: number; readonly changes: PoolChanges }
  | { readonly op: 'release'; readonly unit: string; readonly epoch: number }
  | { readonly op: 'forget'; readonly unit: string; readonly epoch: number };

/** StoreAnswers — what each operation answers when the store does. */
export interface StoreAnswers {
  readonly heartbeat: Members;
  readonly 'owner-of': string | null;
  readonly claim: Claim;
  readonly renew: boolean;
  readonly write: boolean;
  readonly release: boolean;
  readonly forget: boolean;
}

export type StoreOp = StoreCall['op'];

/** StoreResult — the answer to a call of `op`, or why there was none (the store did not answer, or failed). */
export type StoreResult<K extends StoreOp = StoreOp> =
  { readonly ok: true; readonly value: StoreAnswers[K] } | { readonly ok: false; readonly error: unknown };
