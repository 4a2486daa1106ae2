/**
 * The simulator's events and timing constants.
 */
import { TICK_MS_MAX as COORDINATOR_TICK_MS_MAX } from '@tokenlease/coordinator/internal';
import type { LeaseRequest, LeaseReturn, Reply } from '@tokenlease/shared';
import type { Arrival } from './workload.js';

/**
 * ReplyTo — where a coordinator reply goes: the agent, its slot, and which
 * attempt of which request; or, for a relay's request to the root, the
 * relay (`slot` is then its link to the root, `relayLink`).
 */
export interface ReplyTo {
  readonly id: string;
  readonly slot: number;
  readonly seq: number;
  readonly attempt: number;
  readonly relay?: RelayTarget;
}

/** RelayTarget — the relay incarnation that sent `request` to the root. */
export interface RelayTarget {
  readonly index: number;
  readonly incarnation: number;
  readonly request: LeaseRequest | LeaseReturn;
}

/** relayLink — the network slot of relay `index`'s link to the root (negative: never an agent's). */
export function relayLink(index: number): number {
  return -1 - index;
}

export type Event =
  | { readonly k: 'agent-start'; readonly slot: number; readonly incarnation: number }
  | { readonly k: 'agent-stop'; readonly slot: number; readonly incarnation: number; readonly crash: boolean }
  | { readonly k: 'agent-tick'; readonly id: string; readonly gen: number }
  /** A wake-soon of the agent's driver (its slot ran low, a take began to wait): one tick, whatever the generation. */
  | { readonly k: 'agent-wake'; readonly id: string }
  | { readonly k: 'arrival'; readonly arrival: Arrival }
  | { readonly k: 'to-coordinator'; readonly to: ReplyTo; readonly subject: string; readonly bytes: Uint8Array }
  | { readonly k: 'to-agent'; readonly to: ReplyTo; readonly reply: Reply }
  | { readonly k: 'attempt-failed'; readonly to: ReplyTo; readonly code: string }
  | { readonly k: 'coordinator-tick'; readonly id: number; readonly gen: number }
  | { readonly k: 'coordinator-up' }
  /** Store call `ticket` of durable process `id` lands (`gen`: its landing as last scheduled; a held write's first one is stale). */
  | { readonly k: 'store-answer'; readonly id: number; readonly ticket: number; readonly gen: number }
  /** An unsubscribe or bus flush `ticket` of durable process `id` is over. */
  | { readonly k: 'bus-done'; readonly id: number; readonly ticket: number }
  /** Ghost `index` asks one of the other pools of a durable run for tokens (ghosts.ts). */
  | { readonly k: 'ghost'; readonly index: number }
  | { readonly k: 'fault'; readonly index: number }
  | { readonly k: 'shadow-switch'; readonly index: number }
  | { readonly k: 'resume'; readonly id: string }
  | { readonly k: 'take-deadline'; readonly id: string }
  /** Agent `id`'s request of slot `handle` ends and releases it (`ticket`: its hold in the run's in-flight log). */
  | { readonly k: 'slot-release'; readonly id: string; readonly handle: number; readonly ticket: number }
  | { readonly k: 'audit' }
  /** Hostile client `index` acts (hostile.ts): a sybil renews, or the flooder tops its requests up. */
  | { readonly k: 'hostile'; readonly index: number }
  | { readonly k: 'to-relay'; readonly relay: number; readonly to: ReplyTo; readonly subject: string; readonly bytes: Uint8Array }
  | { readonly k: 'relay-reply'; readonly to: ReplyTo; readonly reply: Reply }
  | { readonly k: 'relay-tick'; readonly relay: number; readonly gen: number }
  | { readonly k: 'relay-up'; readonly relay: number }
  | { readonly k: 'relay-resume'; readonly relay: number };

export const POOL = 'pool';
export const PREFIX = 'tokenlease';
/**
 * COORDINATOR_TICK_US_MAX — the longest a coordinator goes without a tick,
 * µs: its tick timer's TICK_MS_MAX, so refill and expiry are never further
 * behind than they are in a real coordinator.
 */
export const COORDINATOR_TICK_US_MAX = COORDINATOR_TICK_MS_MAX * 1000;
/** CLOSE_PHASE_US — how long the agents have to close and return their leases after the traffic ends, µs. */
export const CLOSE_PHASE_US = 3_000_000;
/** VIOLATIONS_KEPT — how many violations a run keeps to report (the first ones). */
export const VIOLATIONS_KEPT = 20;
/** AUDIT_EVERY_US — how often the simulator checks that crashed agents' leases were reclaimed by their deadlines, µs. */
export const AUDIT_EVERY_US = 250_000;
/**
 * RECLAIM_ARMED_US — how long a reclaim-coordinator fault waits, µs, for a
 * write of the owner to start when none is in flight at its instant; none
 * by then: the fault does nothing.
 */
export const RECLAIM_ARMED_US = 500_000;
/** DURABLE_MEMBERS — how many durable coordinators a run has when its spec does not say. */
export const DURABLE_MEMBERS = 2;
/** SIM_OWNERSHIP_TTL_MS — the ownership TTL of the simulated durable coordinators when their spec does not say, ms (a heartbeat every third). */
export const SIM_OWNERSHIP_TTL_MS = 600;
